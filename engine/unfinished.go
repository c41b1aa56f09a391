package engine

import "fmt"

// CountUnfinished is the manifest count a stage's Unfinished calls leave
// (how many reasons it gave). A manifest with it is committed — its shards
// are readable, downstream stages may use them — but never current: the
// next run of the stage runs it again (resuming, where the stage keeps a
// journal) instead of skipping.
const CountUnfinished = "unfinished"

// Unfinished marks the stage's output as committed but not complete (a
// synthesize run whose endpoint failed left trajectories to resume): the
// runner commits it as usual, records CountUnfinished in the manifest and
// logs reason, and the next run of the same stage does not skip it as up
// to date. A stage may call it more than once.
func (sc *StageContext) Unfinished(reason string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.unfinished = append(sc.unfinished, reason)
}

// unfinishedReason is why a committed manifest must run again although it
// matches the expected one ("" when it was finished).
func unfinishedReason(have *Manifest) string {
	if n := have.Counts[CountUnfinished]; n > 0 {
		return fmt.Sprintf("the last run was unfinished (%d reasons; see its log)", n)
	}
	return ""
}
