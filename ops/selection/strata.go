package selection

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"
)

// Success-rate strata. Intervals are lower-inclusive: a rate of exactly 25%
// is exploration, not frontier; the last stratum includes 100%.
const (
	StratumFrontier     = "frontier"     // [0, 0.25)
	StratumExploration  = "exploration"  // [0.25, 0.5)
	StratumNearMastery  = "near_mastery" // [0.5, 0.75)
	StratumExploitation = "exploitation" // [0.75, 1]
)

// Strata lists the strata from hardest to easiest.
var Strata = []string{StratumFrontier, StratumExploration, StratumNearMastery, StratumExploitation}

func isStratum(s string) bool {
	for _, x := range Strata {
		if s == x {
			return true
		}
	}
	return false
}

// StratumOf maps a success rate in [0, 1] to its stratum.
func StratumOf(rate float64) string {
	switch {
	case rate < 0.25:
		return StratumFrontier
	case rate < 0.5:
		return StratumExploration
	case rate < 0.75:
		return StratumNearMastery
	default:
		return StratumExploitation
	}
}

// StrataPick is one task chosen by SampleStrata.
type StrataPick struct {
	TaskID  string `json:"task_id" arrow:"task_id"`
	Stratum string `json:"stratum" arrow:"stratum"`
	Rank    int32  `json:"rank" arrow:"rank"` // position within its stratum's deterministic order
}

// StrataTask is a candidate for SampleStrata.
type StrataTask struct {
	TaskID  string
	Stratum string
}

// SampleStrata picks up to n tasks mixing strata by weights. Quotas are
// allotted by largest remainder; a stratum with too few tasks hands its
// shortfall to the others in proportion to their weights; strata of weight
// zero are never drawn. Within a stratum tasks are ordered by a seeded hash
// of their id, so the result depends only on (tasks, weights, n, seed) and a
// task's chance does not depend on input order. Output is grouped by stratum
// in Strata order.
func SampleStrata(tasks []StrataTask, weights map[string]float64, n int, seed uint64) []StrataPick {
	pools := map[string][]string{}
	for _, t := range tasks {
		pools[t.Stratum] = append(pools[t.Stratum], t.TaskID)
	}
	for s, ids := range pools {
		keys := make(map[string]uint64, len(ids))
		for _, id := range ids {
			keys[id] = seededHash(seed, id)
		}
		sort.Slice(ids, func(a, b int) bool {
			if keys[ids[a]] != keys[ids[b]] {
				return keys[ids[a]] < keys[ids[b]]
			}
			return ids[a] < ids[b]
		})
		pools[s] = ids
	}
	quota := map[string]int{}
	left := n
	for left > 0 {
		// Strata that can still take tasks share what is left.
		var open []string
		var wsum float64
		for _, s := range Strata {
			if weights[s] > 0 && quota[s] < len(pools[s]) {
				open = append(open, s)
				wsum += weights[s]
			}
		}
		if len(open) == 0 {
			break
		}
		give := allot(left, open, weights, wsum)
		moved := 0
		for _, s := range open {
			g := min(give[s], len(pools[s])-quota[s])
			quota[s] += g
			moved += g
		}
		left -= moved
		if moved == 0 {
			break
		}
	}
	var out []StrataPick
	for _, s := range Strata {
		for i, id := range pools[s][:quota[s]] {
			out = append(out, StrataPick{TaskID: id, Stratum: s, Rank: int32(i)})
		}
	}
	return out
}

// allot splits n among strata by weight with the largest-remainder method;
// ties go to the earlier stratum.
func allot(n int, strata []string, weights map[string]float64, wsum float64) map[string]int {
	give := map[string]int{}
	type rem struct {
		s string
		r float64
		i int
	}
	var rems []rem
	used := 0
	for i, s := range strata {
		exact := float64(n) * weights[s] / wsum
		fl := int(math.Floor(exact))
		give[s] = fl
		used += fl
		rems = append(rems, rem{s, exact - float64(fl), i})
	}
	sort.Slice(rems, func(a, b int) bool {
		if rems[a].r != rems[b].r {
			return rems[a].r > rems[b].r
		}
		return rems[a].i < rems[b].i
	})
	for i := 0; used < n; i = (i + 1) % len(rems) {
		give[rems[i].s]++
		used++
	}
	return give
}

func seededHash(seed uint64, id string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return h.Sum64()
}
