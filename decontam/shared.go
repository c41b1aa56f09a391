package decontam

import (
	"context"
	"slices"

	"github.com/crucible-data/crucible/dedup"
)

// sharedWith names the other benchmark items holding every gram counted in
// h (see Match.SharedWith). Forward, those items are among the query's own
// hits: an item holding all of h's grams was hit by each of them. Reverse,
// the benchmark postings collected before the check say which items hold
// each gram.
func (m *Matcher) sharedWith(e int32, h *hit, queryID string, forward bool) []string {
	if len(h.runs) == 0 {
		return nil
	}
	var ids []string
	if forward {
		self := m.ix.Entries[e].ID
		for e2, h2 := range m.hits {
			id := m.ix.Entries[e2].ID
			if id != self && len(h2.runs) >= len(h.runs) && subset(h.runs, h2.runs) {
				ids = append(ids, id)
			}
		}
	} else if m.bench != nil {
		var cur []int32
		for i, r := range h.runs {
			p := m.bench.postings[m.grams[m.runs[r].lo].hash]
			if i == 0 {
				cur = slices.Clone(p)
			} else {
				cur = intersect(cur, p)
			}
			if len(cur) == 0 {
				break
			}
		}
		for _, it := range cur {
			if id := m.bench.items[it]; id != queryID {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// subset reports whether every element of a (ascending) is in b (ascending).
func subset(a, b []int32) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// intersect keeps the elements of a (ascending) that are in b (ascending).
func intersect(a, b []int32) []int32 {
	out, j := a[:0], 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// benchGrams holds, for the reverse direction (benchmark texts checked
// against a corpus index), the benchmark's own n-gram postings. There the
// benchmark is the stream of queries, so the index knows neither how common
// a gram is among the benchmark's items nor which items share a span; Check
// reads the benchmark once into memory beforehand (benchmarks are small:
// VerilogEval spec-to-rtl is 156 items) and collects both.
type benchGrams struct {
	items    []string           // item ordinal → id
	postings map[uint64][]int32 // gram hash → item ordinals, ascending
	maxDF    float64
}

// common applies isCommon to the benchmark's items.
func (b *benchGrams) common(h uint64) bool {
	return b.maxDF < 1 && isCommon(len(b.postings[h]), b.maxDF*float64(len(b.items)))
}

// collectBenchGrams reads src (benchmark records, one item each) with the
// grams a query against ix would have, and returns the records too, so the
// check does not read the benchmark a second time.
func collectBenchGrams(ctx context.Context, ix *Index, src Source) (*benchGrams, RecordSlice, error) {
	b := &benchGrams{postings: map[uint64][]int32{}, maxDF: ix.Meta.Config.MaxDocFreq}
	var recs RecordSlice
	var ti tokenInfo
	var grams []gram
	err := src.Scan(ctx, func(r dedup.Record) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		it := int32(len(b.items))
		b.items = append(b.items, r.ID)
		recs = append(recs, r)
		for _, f := range r.Fields {
			ti.analyse(f.Text, ix.Meta.Config.lang())
			grams = textGrams(&ti, ix.Meta.Config, ix.Meta.Lens, grams[:0])
			for _, g := range grams {
				p := b.postings[g.hash]
				if len(p) == 0 || p[len(p)-1] != it {
					b.postings[g.hash] = append(p, it)
				}
			}
		}
		return nil
	})
	return b, recs, err
}
