package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// ErrYield: a stage committed an output that cannot be a success — nothing
// out of a non-empty input, or more of it rejected than its
// max_reject_fraction allows. The output stays committed for inspection;
// the build fails (exit 6) on every run until the input or the limit changes.
var ErrYield = errors.New("stage yield check failed")

// DefaultMaxRejectFraction is the rejection share a stage type may have
// when its pipeline entry sets no max_reject_fraction. Stage types that do
// not appear have no share limit: rejecting most of their input is what
// they are for (filter, dedup, decontam, admit's gates, compose's caps,
// select) or a verdict, not a malfunction (the verifiers). The rule
// "non-empty input, empty output fails" applies to every stage type.
var DefaultMaxRejectFraction = map[string]float64{
	"ingest":       0.5,
	"pack":         0.5,
	"pack_lengths": 0.5,
}

// Counters the runner adds to every manifest so a stage's yield can be
// checked again when the stage is skipped as up to date.
const (
	CountYieldInput    = "yield.input"    // upstream rows of the kinds the stage read
	CountYieldOutput   = "yield.output"   // rows it passed on (see outputRows)
	CountYieldRejected = "yield.rejected" // rows of its rejection kinds
)

// rejectionKinds hold rows a stage turned away: rejections proper, and
// samples the packer dropped as longer than the sequence length.
var rejectionKinds = []string{"rejections", "dropped"}

// passOnKinds name, in order of preference, the kind whose rows are what a
// stage passes on. A stage writing none of them passes on its largest kind
// that is not a side output.
var passOnKinds = [][]string{{"evolved"}, {"train", "validation"}, {"items"}, {"selection"}, {"trajectories"}}

// sideKinds are outputs that describe the work rather than carry it on.
var sideKinds = map[string]bool{"rejections": true, "dropped": true, "evidence": true, "gate_evidence": true,
	"chat_log": true, "skipped": true, "decontam_matches": true, "yield": true, "composition": true,
	"coverage": true, "pack_meta": true}

// StageYield is one stage's yield and the verdict of its check.
type StageYield struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Rejected int64 `json:"rejected"`
	// RejectFraction is Rejected / (Output + Rejected), 0 when both are 0.
	RejectFraction float64 `json:"reject_fraction"`
	// MaxRejectFraction is the limit applied; nil means none.
	MaxRejectFraction *float64 `json:"max_reject_fraction,omitempty"`
	// Failure says why the check failed; empty when it passed.
	Failure string `json:"failure,omitempty"`
}

// yieldCounts computes the yield counters of a stage run from what it read
// and wrote. written maps each kind it opened a writer for to its rows
// (zero rows included); passedOn, when >= 0, is the stage's own count of the
// rows it passed on (the packer's samples, not its rows of bins; admit's
// admitted candidates, not the parents it copies through).
func yieldCounts(read int64, written map[string]int64, passedOn int64) (in, out, rejected int64) {
	for _, k := range rejectionKinds {
		rejected += written[k]
	}
	out = -1
	if passedOn >= 0 {
		out = passedOn
	}
	for _, group := range passOnKinds {
		if out >= 0 {
			break
		}
		for _, k := range group {
			if n, ok := written[k]; ok {
				out = max(out, 0) + n
			}
		}
	}
	if out < 0 {
		out = 0
		for k, n := range written {
			if !sideKinds[k] && n > out {
				out = n
			}
		}
	}
	in = read
	if in == 0 { // a stage reading raw files: every row is passed on or rejected
		in = out + rejected
	}
	return in, out, rejected
}

// CheckYield applies a stage's yield rules to its committed manifest.
func CheckYield(spec StageSpec, m *Manifest) StageYield {
	y := StageYield{Input: m.Counts[CountYieldInput], Output: m.Counts[CountYieldOutput], Rejected: m.Counts[CountYieldRejected]}
	if t := y.Output + y.Rejected; t > 0 {
		y.RejectFraction = float64(y.Rejected) / float64(t)
	}
	y.MaxRejectFraction = spec.MaxRejectFraction
	if y.MaxRejectFraction == nil {
		if d, ok := DefaultMaxRejectFraction[spec.Type]; ok {
			y.MaxRejectFraction = &d
		}
	}
	switch {
	case y.Input > 0 && y.Output == 0:
		y.Failure = fmt.Sprintf("%d input rows, nothing passed on (%d rejected)", y.Input, y.Rejected)
	case y.MaxRejectFraction != nil && y.RejectFraction > *y.MaxRejectFraction:
		y.Failure = fmt.Sprintf("%d of %d rows rejected (%.1f%%), over max_reject_fraction %g",
			y.Rejected, y.Output+y.Rejected, 100*y.RejectFraction, *y.MaxRejectFraction)
	}
	return y
}

// yieldError is the build's error for a failed check: the stage, its
// counts and its most frequent rejection reasons.
func yieldError(spec StageSpec, dir string, m *Manifest, y StageYield) error {
	detail := ""
	if reasons := topRejectionReasons(dir, m, 3); reasons != "" {
		detail = "; top rejection reasons: " + reasons
	}
	return fmt.Errorf("%w: stage %s: %s%s (set max_reject_fraction on the stage in the pipeline file if this is expected)",
		ErrYield, spec.Name, y.Failure, detail)
}

// topRejectionReasons reads the stage's rejection rows and names the n most
// frequent gate/reason pairs with their counts.
func topRejectionReasons(dir string, m *Manifest, n int) string {
	type reasonRow struct {
		Gate   string `arrow:"gate"`
		Reason string `arrow:"reason"`
	}
	counts := map[string]int64{}
	for _, s := range m.Shards {
		switch s.Kind {
		case "rejections":
			rows, err := ReadAll[reasonRow](filepath.Join(dir, s.Path))
			if err != nil {
				return fmt.Sprintf("(rejection shard %s unreadable: %v)", s.Path, err)
			}
			for _, r := range rows {
				key := r.Reason
				if r.Gate != "" {
					key = r.Gate + "/" + r.Reason
				}
				counts[key]++
			}
		case "dropped":
			counts["too_long (dropped)"] += s.Rows
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// yieldManifest is what a stage's yield check looks at: in an unsharded run
// the stage's manifest; in a sharded run every part's, summed, once all
// parts have committed (one part may legitimately pass nothing on — its
// slice held no row of a kind a filter keeps), and nil before that, so the
// last part to commit checks the whole stage.
func yieldManifest(dir string, sh Shard, m *Manifest) *Manifest {
	if sh.Count <= 1 {
		return m
	}
	out, err := LoadStageOutput(dir)
	if err != nil || len(out.Parts) < 2 {
		return nil
	}
	sum := &Manifest{Stage: m.Stage, Type: m.Type, Counts: map[string]int64{}}
	for _, p := range out.Parts {
		sum.Shards = append(sum.Shards, p.Shards...)
		for k, v := range p.Counts {
			sum.Counts[k] += v
		}
	}
	return sum
}
