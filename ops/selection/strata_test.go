package selection

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

func TestStratumBoundaries(t *testing.T) {
	cases := map[float64]string{0: StratumFrontier, 0.2499: StratumFrontier, 0.25: StratumExploration,
		0.49: StratumExploration, 0.5: StratumNearMastery, 0.74: StratumNearMastery, 0.75: StratumExploitation, 1: StratumExploitation}
	for rate, want := range cases {
		if got := StratumOf(rate); got != want {
			t.Errorf("StratumOf(%v) = %s, want %s", rate, got, want)
		}
	}
}

func TestPassAtK(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{0, 0, 4, 0}, {4, 0, 4, 0}, {2, 0, 4, 0}, {4, 1, 4, 1}, {2, 1, 4, 1},
		{8, 1, 4, 0.5},           // 1 - C(7,4)/C(8,4) = 1 - 35/70
		{10, 2, 1, 0.2},          // pass@1 is the mean
		{10, 3, 4, 1 - 35.0/210}, // C(7,4)/C(10,4)
	}
	for _, c := range cases {
		if got := PassAtK(c.n, c.c, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(%d,%d,%d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
}

func strataPool() []StrataTask {
	var ts []StrataTask
	counts := map[string]int{StratumFrontier: 10, StratumExploration: 3, StratumNearMastery: 6, StratumExploitation: 20}
	for _, s := range Strata {
		for i := 0; i < counts[s]; i++ {
			ts = append(ts, StrataTask{TaskID: fmt.Sprintf("%s-%02d", s, i), Stratum: s})
		}
	}
	return ts
}

func TestSampleStrataQuotas(t *testing.T) {
	w := map[string]float64{StratumFrontier: 0.4, StratumExploration: 0.3, StratumNearMastery: 0.2, StratumExploitation: 0.1}
	count := func(p []StrataPick) map[string]int {
		m := map[string]int{}
		for _, x := range p {
			m[x.Stratum]++
		}
		return m
	}
	// 10 → 4/3/2/1 exactly.
	if got := count(SampleStrata(strataPool(), w, 10, 1)); !reflect.DeepEqual(got, map[string]int{StratumFrontier: 4, StratumExploration: 3, StratumNearMastery: 2, StratumExploitation: 1}) {
		t.Errorf("n=10: %v", got)
	}
	// 20 → 8/6/4/2 wanted; exploration has only 3, so its 3 spare go to the
	// open strata 0.4:0.2:0.1 by largest remainder (1.71, 0.86, 0.43 →
	// frontier 2, near-mastery 1): 10/3/5/2.
	if got := count(SampleStrata(strataPool(), w, 20, 1)); !reflect.DeepEqual(got, map[string]int{StratumFrontier: 10, StratumExploration: 3, StratumNearMastery: 5, StratumExploitation: 2}) {
		t.Errorf("n=20: %v", got)
	}
	// Zero weight is never drawn, even when others run out.
	w0 := map[string]float64{StratumFrontier: 1}
	if got := count(SampleStrata(strataPool(), w0, 30, 1)); !reflect.DeepEqual(got, map[string]int{StratumFrontier: 10}) {
		t.Errorf("zero weights drawn: %v", got)
	}
}

func TestSampleStrataDeterministic(t *testing.T) {
	w := DefaultConfig().StrataWeights
	pool := strataPool()
	a := SampleStrata(pool, w, 12, 7)
	rev := make([]StrataTask, len(pool))
	for i := range pool {
		rev[len(pool)-1-i] = pool[i]
	}
	if b := SampleStrata(rev, w, 12, 7); !reflect.DeepEqual(a, b) {
		t.Errorf("input order changed the sample:\n%v\n%v", a, b)
	}
	if c := SampleStrata(pool, w, 12, 8); reflect.DeepEqual(a, c) {
		t.Errorf("seed had no effect")
	}
}

func TestGroupAdvantages(t *testing.T) {
	g, adv := GroupAdvantages([]float64{1, 0, -1}, []bool{true, true, false})
	s := math.Sqrt(0.5)
	if g.Valid != 2 || g.Mean != 0.5 || math.Abs(g.Std-s) > 1e-15 || adv[0] != 0.5/s || adv[1] != -0.5/s || adv[2] != 0 {
		t.Errorf("got %+v %v", g, adv)
	}
	if g, adv := GroupAdvantages([]float64{1}, []bool{true}); g.Valid != 1 || adv[0] != 0 {
		t.Errorf("single sample: %+v %v", g, adv)
	}
}
