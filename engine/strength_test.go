package engine

import (
	"context"
	"reflect"
	"testing"
)

// auditingJudge is a judge with a strength audit (test double).
type auditingJudge struct {
	inner Judge
	rep   StrengthReport
}

func (a auditingJudge) Domain() string { return a.inner.Domain() }
func (a auditingJudge) Judge(ctx context.Context, it Item, c Candidate) (Evidence, error) {
	return a.inner.Judge(ctx, it, c)
}
func (a auditingJudge) SelfCheck(ctx context.Context, it Item) (Evidence, error) {
	return a.inner.SelfCheck(ctx, it)
}
func (a auditingJudge) Check(ctx context.Context) error { return a.inner.Check(ctx) }
func (a auditingJudge) Close() error                    { return a.inner.Close() }

func (a auditingJudge) Audit(context.Context, Item) (StrengthReport, error) { return a.rep, nil }

// TestJudgesAuditRoutes: an item's audit goes to its domain's judge (also
// through a lazy judge); a domain with no judge, or a judge with no audit,
// gets an unmeasured report, so its passes are never trusted.
func TestJudgesAuditRoutes(t *testing.T) {
	pass := func(context.Context, Item, Candidate) (Evidence, error) { return Evidence{Status: StatusPass}, nil }
	want := StrengthReport{Measured: true, Trivial: StrengthTally{Tried: 4, Killed: 4}, Mutants: StrengthTally{Tried: 2, Killed: 2}, Definitive: true}
	rtl := auditingJudge{inner: JudgeFunc(DomainRTL, pass), rep: want}
	lazyBuilt := 0
	kernel := LazyJudge(DomainKernel, func() (Judge, error) {
		lazyBuilt++
		return auditingJudge{inner: JudgeFunc(DomainKernel, pass), rep: want}, nil
	})
	js, err := NewJudges(1, rtl, kernel, JudgeFunc("other", pass))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, d := range []string{DomainRTL, DomainKernel} {
		got, err := js.Audit(ctx, Item{ItemID: "x", Domain: d})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want the judge's report", d, got, err)
		}
	}
	if lazyBuilt != 1 {
		t.Errorf("lazy judge built %d times", lazyBuilt)
	}
	for _, d := range []string{"other", "missing"} {
		got, err := js.Audit(ctx, Item{ItemID: "x", Domain: d})
		if err != nil || got.Measured || got.Stage != StageToolchainUnsupported {
			t.Errorf("%s: %+v, %v; want unmeasured at toolchain_unsupported", d, got, err)
		}
	}
}

func TestStrengthReportReadings(t *testing.T) {
	r := StrengthReport{Measured: true, Trivial: StrengthTally{Tried: 3, Killed: 2, Survivors: []string{"trivial:all_x"}},
		Mutants: StrengthTally{Tried: 4, Killed: 3, Survivors: []string{"mutant:m1"}}}
	if !r.Weak() {
		t.Error("a trivial survivor is not weak")
	}
	if rate, ok := r.MutantKillRate(); !ok || rate != 0.75 {
		t.Errorf("kill rate %v %v", rate, ok)
	}
	is := r.ItemStrength()
	if !is.Weak() || is.MutantKilled != 3 || !reflect.DeepEqual(is.Survivors, []string{"trivial:all_x", "mutant:m1"}) {
		t.Errorf("item strength %+v", is)
	}
	if m := (StrengthReport{Stage: StageWorkerCrash, Cause: "x"}).Measurements(); len(m) != 1 || m[0].Name != "verifier_strength_unmeasured" {
		t.Errorf("unmeasured measurements %+v", m)
	}
	if (StrengthReport{}).ItemStrength().Measured {
		t.Error("an unmeasured report gave a measured item strength")
	}
}

func TestMutantSourcesByDomain(t *testing.T) {
	src := func(n string) MutantSource {
		return func(Item, string, string, int) []StrengthCandidate { return []StrengthCandidate{{Name: n}} }
	}
	RegisterMutantSource("test-domain", "b", src("b1"))
	RegisterMutantSource("test-domain", "a", src("a"))
	RegisterMutantSource("test-domain", "b", src("b2")) // replaces
	names, fns := MutantSources("test-domain")
	if !reflect.DeepEqual(names, []string{"a", "b"}) || len(fns) != 2 || fns[1](Item{}, "", "", 1)[0].Name != "b2" {
		t.Errorf("sources %v", names)
	}
	if names, _ := MutantSources("test-none"); len(names) != 0 {
		t.Errorf("a domain with no source has %v", names)
	}
}
