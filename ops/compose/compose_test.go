package compose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func item(id, parent, lineage, family string) engine.Item {
	return engine.Item{ItemID: id, ParentID: parent, LineageID: lineage, Domain: engine.DomainRTL, Family: family,
		Route: engine.RouteSeed, ReferenceStatus: engine.RefVerified, Difficulty: 0.5, Cost: 2}
}

func TestLineageRoots(t *testing.T) {
	items := []engine.Item{
		item("a", "", "", "f"), item("a1", "a", "", "f"), item("a11", "a1", "", "f"),
		item("b1", "b", "", "f"), item("b2", "b", "", "f"), // parent b not in the pool
		item("c", "", "L", "f"), item("c1", "c", "", "f"), // lineage id wins
		item("x", "y", "", "f"), item("y", "x", "", "f"), // a cycle must not hang
	}
	got := LineageRoots(items)
	want := map[string]string{"a": "a", "a1": "a", "a11": "a", "b1": "b", "b2": "b", "c": "L", "c1": "L"}
	for id, r := range want {
		if got[id] != r {
			t.Errorf("root(%s) = %q, want %q", id, got[id], r)
		}
	}
	if got["x"] == "" || got["y"] == "" {
		t.Errorf("cycle left items without a root: %v", got)
	}
}

// lineagePool builds two lineages of n items each, families A and B.
func lineagePool(n int) []engine.Item {
	var items []engine.Item
	for _, f := range []string{"A", "B"} {
		root := "root" + f
		items = append(items, item(root, "", "", f))
		for i := 1; i < n; i++ {
			items = append(items, item(fmt.Sprintf("%s-%02d", f, i), root, "", f))
		}
	}
	return items
}

func familyCounts(items []engine.Item) map[string]int {
	m := map[string]int{}
	for _, it := range items {
		m[it.Family]++
	}
	return m
}

func TestFillPassBalancesTowardTargets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ValidationFraction = 0
	cfg.LineageCap = 10
	cfg.TrainSize = 10
	cfg.Targets = map[string]map[string]float64{DimFamily: {"A": 0.8, "B": 0.2}}
	res, err := Compose(lineagePool(10), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := familyCounts(res.Train); !reflect.DeepEqual(got, map[string]int{"A": 8, "B": 2}) {
		t.Errorf("train families %v, want A:8 B:2", got)
	}
	if len(res.Validation) != 0 {
		t.Errorf("validation %d items with fraction 0", len(res.Validation))
	}
	// The first pass takes the roots (one per lineage) before any fill.
	first := map[string]bool{}
	for _, a := range res.Assignments {
		if a.Pass == PassFirst {
			first[a.ItemID] = true
		}
	}
	if !reflect.DeepEqual(first, map[string]bool{"rootA": true, "rootB": true}) {
		t.Errorf("first pass %v", first)
	}
	var fam []CoverageRow
	for _, r := range res.Coverage {
		if r.Dimension == DimFamily || r.Dimension == "family_top" {
			fam = append(fam, r)
		}
	}
	wantCov := []CoverageRow{
		{SplitTrain, DimFamily, "A", 8, 0.8, 0.8}, {SplitTrain, DimFamily, "B", 2, 0.2, 0.2},
		{SplitTrain, "family_top", "top1", 8, 0.8, 0}, {SplitTrain, "family_top", "top3", 10, 1, 0},
		{SplitTrain, "family_top", "top5", 10, 1, 0},
		{SplitValidation, "family_top", "top1", 0, 0, 0}, {SplitValidation, "family_top", "top3", 0, 0, 0},
		{SplitValidation, "family_top", "top5", 0, 0, 0},
	}
	// The validation split is empty, so its family rows are the targets alone.
	wantCov = append(wantCov[:5], append([]CoverageRow{{SplitValidation, DimFamily, "A", 0, 0, 0.8}, {SplitValidation, DimFamily, "B", 0, 0, 0.2}}, wantCov[5:]...)...)
	if !reflect.DeepEqual(fam, wantCov) {
		t.Errorf("family coverage:\n got %v\nwant %v", fam, wantCov)
	}
}

func TestCapsBindBeforeTargets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ValidationFraction = 0
	cfg.LineageCap = 5
	cfg.TrainSize = 10
	cfg.Targets = map[string]map[string]float64{DimFamily: {"A": 0.8, "B": 0.2}}
	res, err := Compose(lineagePool(10), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := familyCounts(res.Train); !reflect.DeepEqual(got, map[string]int{"A": 5, "B": 5}) {
		t.Errorf("train families %v, want A:5 B:5", got)
	}
	if res.Skipped[SplitTrain] != 10 {
		t.Errorf("skipped %d, want 10", res.Skipped[SplitTrain])
	}
	// Issue 16.8: every item left out is a rejection row (the funnel used to
	// show "rejected 0" with 10 items gone).
	var notSelected int
	for _, r := range res.Rejections {
		if r.Reason == ReasonNotSelected && r.Gate == "selection" {
			notSelected++
		}
	}
	if notSelected != 10 || len(res.Train)+notSelected != 20 {
		t.Errorf("%d not_selected rejection rows, %d train items, want 10 + 10 = 20", notSelected, len(res.Train))
	}
}

func TestSplitKeepsLineagesApart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ValidationFraction = 0.5
	res, err := Compose(lineagePool(3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tf, vf := familyCounts(res.Train), familyCounts(res.Validation)
	if len(tf) != 1 || len(vf) != 1 || reflect.DeepEqual(tf, vf) {
		t.Errorf("train %v validation %v: want one whole lineage each", tf, vf)
	}
	if res.Lineages[SplitTrain] != 1 || res.Lineages[SplitValidation] != 1 {
		t.Errorf("lineages %v", res.Lineages)
	}
}

func TestAdmission(t *testing.T) {
	items := []engine.Item{item("ok", "", "", "f"), item("ok", "", "", "f"), item("", "", "", "f")}
	un := item("un", "", "", "f")
	un.ReferenceStatus = engine.RefUnverified
	bad := item("bad", "", "", "f")
	bad.ReferenceStatus = engine.RefFailed
	items = append(items, un, bad)
	cfg := DefaultConfig()
	res, err := Compose(items, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Rejection{
		{ItemID: "ok", Stage: "compose", Gate: "admission", Reason: "duplicate_item", Detail: `item_id "ok" appears more than once; first kept`},
		{ItemID: "", Stage: "compose", Gate: "admission", Reason: "missing_field", Detail: "item_id is empty"},
		{ItemID: "un", Stage: "compose", Gate: "admission", Reason: "unverified_reference", Detail: `reference_status "unverified", composition requires verified`},
		{ItemID: "bad", Stage: "compose", Gate: "admission", Reason: "unverified_reference", Detail: `reference_status "failed", composition requires verified`},
	}
	if !reflect.DeepEqual(res.Rejections, want) {
		t.Errorf("rejections:\n got %v\nwant %v", res.Rejections, want)
	}
	cfg.RequireVerified = false
	res, _ = Compose(items, cfg)
	if len(res.Train)+len(res.Validation) != 2 { // ok and un; bad stays out
		t.Errorf("without require_verified: %d items", len(res.Train)+len(res.Validation))
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := DefaultConfig()
	c.ValidationFraction, c.LineageCap, c.TrainSize = 1.5, 0, -1
	c.Targets = map[string]map[string]float64{"colour": {"red": 1}, DimFamily: {"A": -1}}
	c.DifficultyBuckets = []Bucket{{"easy", f64(0.5)}, {"hard", f64(0.4)}}
	err := c.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, f := range []string{"validation_fraction", "lineage_cap", "train_size", `unknown dimension "colour"`, "targets.family.A", "targets.family: shares", "difficulty_buckets[1].below"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

// randomPool makes a forest: each item is a root or a child of an earlier
// item; lineage ids are either unset or set to the true root, as the
// evolution stage writes them.
func randomPool(r *rand.Rand) []engine.Item {
	n := 1 + r.IntN(150)
	fams := []string{"counter", "fsm", "fifo", "alu", "gemm"}
	routes := []string{engine.RouteSeed, engine.RouteSolutionFirst, engine.RouteInstructionFirst, engine.RouteContractMutation}
	statuses := []string{engine.RefVerified, engine.RefVerified, engine.RefVerified, engine.RefUnverified, engine.RefFailed}
	items := make([]engine.Item, n)
	trueRoot := make([]int, n)
	for i := range items {
		it := engine.Item{ItemID: fmt.Sprintf("i%03d", i), Family: fams[r.IntN(len(fams))], Route: routes[r.IntN(len(routes))],
			Domain: []string{engine.DomainRTL, engine.DomainKernel}[r.IntN(2)], ReferenceStatus: statuses[r.IntN(len(statuses))],
			Difficulty: r.Float64(), Cost: r.Float64() * 20}
		trueRoot[i] = i
		if i > 0 && r.IntN(3) > 0 {
			p := r.IntN(i)
			it.ParentID = items[p].ItemID
			trueRoot[i] = trueRoot[p]
		}
		if r.IntN(2) == 0 {
			it.LineageID = items[trueRoot[i]].ItemID
			if trueRoot[i] == i {
				it.LineageID = it.ItemID
			}
		}
		items[i] = it
	}
	r.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
	return items
}

func TestComposeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		items := randomPool(r)
		cfg := DefaultConfig()
		cfg.Seed = r.Uint64()
		cfg.ValidationFraction = []float64{0, 0.1, 0.3, 0.5, 1}[r.IntN(5)]
		cfg.LineageCap = 1 + r.IntN(4)
		cfg.TrainSize = r.IntN(60)
		cfg.ValidationSize = r.IntN(20)
		if r.IntN(2) == 0 {
			cfg.Targets = map[string]map[string]float64{DimFamily: {"counter": 0.5, "gemm": 0.3, "fsm": 0.2}, DimDomain: {"rtl": 0.7, "kernel": 0.3}}
		}
		res, err := Compose(items, cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("trial %d (n=%d cap=%d frac=%g)", trial, len(items), cfg.LineageCap, cfg.ValidationFraction)
		// Ground truth lineage by parent links, independent of LineageRoots.
		byID := map[string]engine.Item{}
		for _, it := range items {
			byID[it.ItemID] = it
		}
		var truth func(id string) string
		truth = func(id string) string {
			if p := byID[id].ParentID; p != "" {
				return truth(p)
			}
			return id
		}
		side := map[string]string{}
		perRoot := map[string]map[string]int{SplitTrain: {}, SplitValidation: {}}
		for _, a := range res.Assignments {
			root := truth(a.ItemID)
			if s, ok := side[root]; ok && s != a.Split {
				t.Fatalf("%s: lineage %s in both splits", name, root)
			}
			side[root] = a.Split
			perRoot[a.Split][root]++
			if perRoot[a.Split][root] > cfg.LineageCap {
				t.Fatalf("%s: lineage %s has %d > cap %d in %s", name, root, perRoot[a.Split][root], cfg.LineageCap, a.Split)
			}
			if it := byID[a.ItemID]; it.ReferenceStatus != engine.RefVerified {
				t.Fatalf("%s: unverified item %s selected", name, a.ItemID)
			}
		}
		// First pass: every lineage with a verified item is represented in
		// exactly one split, by exactly one first-pass item.
		firsts := map[string]int{}
		for _, a := range res.Assignments {
			if a.Pass == PassFirst {
				firsts[truth(a.ItemID)]++
			}
		}
		for _, it := range items {
			if it.ReferenceStatus == engine.RefVerified && firsts[truth(it.ItemID)] != 1 {
				t.Fatalf("%s: lineage %s has %d first-pass items", name, truth(it.ItemID), firsts[truth(it.ItemID)])
			}
		}
		// Sizes bind the fill pass only.
		for split, size := range map[string]int{SplitTrain: cfg.TrainSize, SplitValidation: cfg.ValidationSize} {
			n := len(perRoot[split])
			total := 0
			for _, c := range perRoot[split] {
				total += c
			}
			if size > 0 && total > max(size, n) {
				t.Fatalf("%s: %s has %d items, size %d, %d lineages", name, split, total, size, n)
			}
		}
		// Coverage shares per dimension sum to 1 when the split is non-empty.
		sums := map[string]float64{}
		for _, c := range res.Coverage {
			if isDim(c.Dimension) {
				sums[c.Split+"/"+c.Dimension] += c.Share
			}
		}
		for k, s := range sums {
			if s != 0 && math.Abs(s-1) > 1e-9 {
				t.Fatalf("%s: %s shares sum to %v", name, k, s)
			}
		}
	}
}

func TestComposeIgnoresInputOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	items := randomPool(r)
	cfg := DefaultConfig()
	cfg.TrainSize = 30
	a, _ := Compose(items, cfg)
	shuffled := append([]engine.Item(nil), items...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b, _ := Compose(shuffled, cfg)
	if !reflect.DeepEqual(a.Assignments, b.Assignments) || !reflect.DeepEqual(a.Coverage, b.Coverage) {
		t.Error("input order changed the composition")
	}
}

func TestTertileBuckets(t *testing.T) {
	names := func(bs []Bucket) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Name)
		}
		return out
	}
	cases := []struct {
		in   []float64
		want []string
	}{
		{[]float64{1, 1, 2, 2, 3, 3, 4, 4, 4}, []string{"<2", "2-4", ">=4"}},
		{[]float64{0.9, 0.1, 0.5}, []string{"<0.5", "0.5-0.9", ">=0.9"}},
		{[]float64{1, 1, 1, 2}, []string{"<2", ">=2"}}, // the 1/3 cut equals the minimum: dropped
		{[]float64{3, 3, 3}, []string{"all"}},
		{nil, []string{"all"}},
	}
	for _, c := range cases {
		bs := tertileBuckets(c.in)
		if got := names(bs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("tertiles of %v: %v, want %v", c.in, got, c.want)
		}
		if err := checkBuckets("b", bs); err != nil {
			t.Errorf("tertiles of %v are not valid buckets: %v", c.in, err)
		}
	}
}
