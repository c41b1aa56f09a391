package compose

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"

	"github.com/crucible-data/crucible/engine"
)

// Split names.
const (
	SplitTrain      = "train"
	SplitValidation = "validation"
)

// Passes of the selection.
const (
	PassFirst = "first" // one item per lineage
	PassFill  = "fill"  // balancing under caps
)

// Assignment records why an item is in the corpus.
type Assignment struct {
	ItemID      string `json:"item_id" arrow:"item_id"`
	LineageRoot string `json:"lineage_root" arrow:"lineage_root"`
	Split       string `json:"split" arrow:"split"`
	Pass        string `json:"pass" arrow:"pass"`
	Order       int32  `json:"order" arrow:"order"` // selection order within the split
	Domain      string `json:"domain" arrow:"domain"`
	Family      string `json:"family" arrow:"family"`
	Route       string `json:"route" arrow:"route"`
	Difficulty  string `json:"difficulty" arrow:"difficulty"` // bucket name
	Cost        string `json:"cost" arrow:"cost"`             // bucket name
}

// Result is a composed corpus. Train and Validation hold items in selection
// order; Assignments lists train then validation.
type Result struct {
	Train       []engine.Item
	Validation  []engine.Item
	Assignments []Assignment
	Coverage    []CoverageRow
	Rejections  []engine.Rejection
	// Lineages counts lineage roots with an admissible item per split.
	Lineages map[string]int
	// Skipped counts admissible items left out because of caps or sizes.
	Skipped map[string]int
	// The buckets used: the configured ones, or the pool's tertiles.
	DifficultyBuckets, CostBuckets []Bucket
}

// ReasonNotSelected is the rejection reason of an admissible item that the
// per-lineage cap or the split size left out.
const ReasonNotSelected = "not_selected"

// candidate is an admissible item with its dimension values.
type candidate struct {
	item *engine.Item
	root string
	vals [5]string // in Dims order
	vidx [5]int    // value indexes in the split's balancer
	ridx int       // index of its root in the split's root order
	hash uint64
	sig  string
}

// Compose splits, selects and reports. It is deterministic in (items, cfg)
// and does not depend on the order of items.
func Compose(items []engine.Item, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Lineages: map[string]int{}, Skipped: map[string]int{}}
	roots := LineageRoots(items)
	var admitted []*engine.Item
	seen := map[string]bool{}
	for i := range items {
		it := &items[i]
		if reason, detail := admissible(it, cfg.RequireVerified); reason != "" {
			res.Rejections = append(res.Rejections, engine.Rejection{ItemID: it.ItemID, Stage: "compose", Gate: "admission", Reason: reason, Detail: detail})
			continue
		}
		if seen[it.ItemID] {
			res.Rejections = append(res.Rejections, engine.Rejection{ItemID: it.ItemID, Stage: "compose", Gate: "admission",
				Reason: "duplicate_item", Detail: fmt.Sprintf("item_id %q appears more than once; first kept", it.ItemID)})
			continue
		}
		seen[it.ItemID] = true
		admitted = append(admitted, it)
	}
	res.DifficultyBuckets, res.CostBuckets = cfg.DifficultyBuckets, cfg.CostBuckets
	if len(res.DifficultyBuckets) == 0 || len(res.CostBuckets) == 0 {
		diffs, costs := make([]float64, len(admitted)), make([]float64, len(admitted))
		for i, it := range admitted {
			diffs[i], costs[i] = it.Difficulty, it.Cost
		}
		if len(res.DifficultyBuckets) == 0 {
			res.DifficultyBuckets = tertileBuckets(diffs)
		}
		if len(res.CostBuckets) == 0 {
			res.CostBuckets = tertileBuckets(costs)
		}
	}
	byRoot := map[string][]*candidate{}
	for _, it := range admitted {
		c := &candidate{item: it, root: roots[it.ItemID], hash: seededHash(cfg.Seed, it.ItemID)}
		c.vals = [5]string{orNone(it.Domain), orNone(it.Family), orNone(it.Route),
			bucketOf(res.DifficultyBuckets, it.Difficulty), bucketOf(res.CostBuckets, it.Cost)}
		c.sig = fmt.Sprint(c.vals)
		byRoot[c.root] = append(byRoot[c.root], c)
	}
	val, train := splitRoots(sortedKeys(byRoot), cfg.ValidationFraction, cfg.Seed)
	for _, part := range []struct {
		name  string
		roots []string
		size  int
		out   *[]engine.Item
	}{{SplitTrain, train, cfg.TrainSize, &res.Train}, {SplitValidation, val, cfg.ValidationSize, &res.Validation}} {
		res.Lineages[part.name] = len(part.roots)
		picked := selectSplit(part.roots, byRoot, part.size, cfg)
		total := 0
		for _, r := range part.roots {
			total += len(byRoot[r])
		}
		res.Skipped[part.name] = total - len(picked)
		// An item left out by a cap or a size is a rejection row like any
		// other, so the funnel and the reasons account for every input row.
		chosen := make(map[*candidate]bool, len(picked))
		for _, p := range picked {
			chosen[p.c] = true
		}
		for _, r := range part.roots {
			for _, c := range byRoot[r] {
				if !chosen[c] {
					res.Rejections = append(res.Rejections, engine.Rejection{ItemID: c.item.ItemID, Stage: "compose", Gate: "selection",
						Reason: ReasonNotSelected, Detail: fmt.Sprintf("left out of the %s split (lineage_cap %d, size %d)", part.name, cfg.LineageCap, part.size)})
				}
			}
		}
		for i, p := range picked {
			*part.out = append(*part.out, *p.c.item)
			res.Assignments = append(res.Assignments, Assignment{ItemID: p.c.item.ItemID, LineageRoot: p.c.root,
				Split: part.name, Pass: p.pass, Order: int32(i), Domain: p.c.vals[0], Family: p.c.vals[1],
				Route: p.c.vals[2], Difficulty: p.c.vals[3], Cost: p.c.vals[4]})
		}
		res.Coverage = append(res.Coverage, coverage(part.name, picked, targetsFor(cfg, byRoot, part.roots))...)
	}
	return res, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func admissible(it *engine.Item, requireVerified bool) (reason, detail string) {
	switch {
	case it.ItemID == "":
		return "missing_field", "item_id is empty"
	case requireVerified && it.ReferenceStatus != engine.RefVerified:
		return "unverified_reference", fmt.Sprintf("reference_status %q, composition requires verified", it.ReferenceStatus)
	case it.ReferenceStatus == engine.RefFailed:
		return "failed_reference", "reference_status failed"
	}
	return "", ""
}

// LineageRoots maps every item to its lineage root: its LineageID when set,
// else its parent's root (following parents through the pool), else the
// missing parent's id when the parent is not in the pool, else itself.
// Cycles in parent links end at the item where they close.
func LineageRoots(items []engine.Item) map[string]string {
	byID := make(map[string]*engine.Item, len(items))
	for i := range items {
		if _, dup := byID[items[i].ItemID]; !dup {
			byID[items[i].ItemID] = &items[i]
		}
	}
	roots := make(map[string]string, len(items))
	var rootOf func(id string, depth int) string
	rootOf = func(id string, depth int) string {
		if r, ok := roots[id]; ok {
			return r
		}
		it := byID[id]
		var r string
		switch {
		case it.LineageID != "":
			r = it.LineageID
		case it.ParentID == "" || it.ParentID == id || depth > len(items):
			r = id
		case byID[it.ParentID] == nil:
			r = it.ParentID
		default:
			roots[id] = id // provisional: breaks cycles
			r = rootOf(it.ParentID, depth+1)
		}
		roots[id] = r
		return r
	}
	for id := range byID {
		rootOf(id, 0)
	}
	return roots
}

// splitRoots orders roots by a seeded hash and sends the first
// round(fraction·n) to validation. Each side keeps at least one root when
// the fraction is strictly between 0 and 1 and there are two or more roots.
func splitRoots(roots []string, fraction float64, seed uint64) (val, train []string) {
	sort.SliceStable(roots, func(a, b int) bool {
		ha, hb := seededHash(seed, roots[a]), seededHash(seed, roots[b])
		if ha != hb {
			return ha < hb
		}
		return roots[a] < roots[b]
	})
	n := len(roots)
	nv := int(math.Round(fraction * float64(n)))
	if fraction > 0 && fraction < 1 && n >= 2 {
		nv = max(1, min(nv, n-1))
	}
	return roots[:nv], roots[nv:]
}

type pick struct {
	c    *candidate
	pass string
}

// balancer tracks the split's mix and scores candidates by how much they
// close the gap between current shares and targets. Values are indexed per
// dimension so a score is a few slice reads: the fill pass scores every
// signature at every step.
type balancer struct {
	index   [5]map[string]int
	targets [5][]float64
	counts  [5][]int
	weights [5]float64
	total   int
}

// newBalancer indexes the values of the split's candidates and targets and
// stores each candidate's value indexes in it (a candidate belongs to one
// split only).
func newBalancer(t [5]map[string]float64, cands []*candidate, cfg Config) *balancer {
	b := &balancer{}
	for d, name := range Dims {
		b.index[d] = map[string]int{}
		for _, v := range sortedKeys(t[d]) {
			b.index[d][v] = len(b.index[d])
		}
		for _, c := range cands {
			if _, ok := b.index[d][c.vals[d]]; !ok {
				b.index[d][c.vals[d]] = len(b.index[d])
			}
			c.vidx[d] = b.index[d][c.vals[d]]
		}
		b.targets[d] = make([]float64, len(b.index[d]))
		for v, share := range t[d] {
			b.targets[d][b.index[d][v]] = share
		}
		b.counts[d] = make([]int, len(b.index[d]))
		b.weights[d] = 1
		if w, ok := cfg.Weights[name]; ok {
			b.weights[d] = w
		}
	}
	return b
}

func (b *balancer) score(c *candidate) float64 {
	var s float64
	for d := range Dims {
		share := 0.0
		if b.total > 0 {
			share = float64(b.counts[d][c.vidx[d]]) / float64(b.total)
		}
		s += b.weights[d] * (b.targets[d][c.vidx[d]] - share)
	}
	return s
}

func (b *balancer) add(c *candidate) {
	for d := range Dims {
		b.counts[d][c.vidx[d]]++
	}
	b.total++
}

// tieBefore orders candidates of equal score: the lineage root item first,
// then by seeded hash, then by id.
func tieBefore(x, y *candidate) bool {
	xr, yr := x.item.ItemID == x.root, y.item.ItemID == y.root
	if xr != yr {
		return xr
	}
	if x.hash != y.hash {
		return x.hash < y.hash
	}
	return x.item.ItemID < y.item.ItemID
}

// selectSplit runs the first pass (one item per lineage, lineages in root
// order) and the fill pass (best-scoring signature under caps until size).
func selectSplit(roots []string, byRoot map[string][]*candidate, size int, cfg Config) []pick {
	var all []*candidate
	for i, r := range roots {
		for _, c := range byRoot[r] {
			c.ridx = i
		}
		all = append(all, byRoot[r]...)
	}
	b := newBalancer(targetsFor(cfg, byRoot, roots), all, cfg)
	var out []pick
	taken := map[*candidate]bool{}
	perRoot := make([]int, len(roots))
	for i, r := range roots {
		var best *candidate
		var bestScore float64
		for _, c := range byRoot[r] {
			if sc := b.score(c); best == nil || sc > bestScore || (sc == bestScore && tieBefore(c, best)) {
				best, bestScore = c, sc
			}
		}
		if best == nil {
			continue
		}
		out = append(out, pick{best, PassFirst})
		taken[best] = true
		perRoot[i]++
		b.add(best)
	}
	// Fill: candidates with the same dimension values score the same, so
	// the loop scores signatures, not items: O(steps × signatures).
	bySig := map[string][]*candidate{}
	for _, c := range all {
		if !taken[c] {
			bySig[c.sig] = append(bySig[c.sig], c)
		}
	}
	queues := make([][]*candidate, 0, len(bySig))
	for _, sig := range sortedKeys(bySig) {
		q := bySig[sig]
		sort.Slice(q, func(i, j int) bool {
			if q[i].hash != q[j].hash {
				return q[i].hash < q[j].hash
			}
			return q[i].item.ItemID < q[j].item.ItemID
		})
		queues = append(queues, q)
	}
	for size == 0 || len(out) < size {
		bestQ := -1
		var bestScore float64
		for i, q := range queues {
			for len(q) > 0 && perRoot[q[0].ridx] >= cfg.LineageCap {
				q = q[1:] // lineage full: never eligible again
			}
			queues[i] = q
			if len(q) == 0 {
				continue
			}
			if sc := b.score(q[0]); bestQ < 0 || sc > bestScore || (sc == bestScore && tieBefore(q[0], queues[bestQ][0])) {
				bestQ, bestScore = i, sc
			}
		}
		if bestQ < 0 {
			break
		}
		c := queues[bestQ][0]
		queues[bestQ] = queues[bestQ][1:]
		out = append(out, pick{c, PassFill})
		perRoot[c.ridx]++
		b.add(c)
	}
	return out
}

// targetsFor normalises configured targets per dimension, or spreads the
// share uniformly over the values present in the split's candidates.
func targetsFor(cfg Config, byRoot map[string][]*candidate, roots []string) [5]map[string]float64 {
	var t [5]map[string]float64
	for d, name := range Dims {
		t[d] = map[string]float64{}
		if conf := cfg.Targets[name]; len(conf) > 0 {
			var sum float64
			for _, v := range conf {
				sum += v
			}
			for k, v := range conf {
				t[d][k] = v / sum
			}
			continue
		}
		present := map[string]bool{}
		for _, r := range roots {
			for _, c := range byRoot[r] {
				present[c.vals[d]] = true
			}
		}
		for v := range present {
			t[d][v] = 1 / float64(len(present))
		}
	}
	return t
}

func seededHash(seed uint64, id string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return h.Sum64()
}
