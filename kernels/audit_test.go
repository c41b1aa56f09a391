package kernels

import (
	"context"
	"reflect"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// auditTestItem is the only item the test mutant source applies to, so the
// registration (process-wide) changes no other test's audit.
const auditTestItem = "vector_add_f32~audit"

func init() {
	engine.RegisterMutantSource(engine.DomainKernel, "audit_test", func(item engine.Item, ref, _ string, max int) []engine.StrengthCandidate {
		if item.ItemID != auditTestItem {
			return nil
		}
		return []engine.StrengthCandidate{
			{Name: "sub", Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *out, int64_t n) {\n\tfor (int64_t i = 0; i < n; i++) out[i] = a[i] - b[i];\n}\n"},
			{Name: "commuted", Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *out, int64_t n) {\n\tfor (int64_t i = 0; i < n; i++) out[i] = b[i] + a[i];\n}\n"},
			{Name: "broken", Code: "this is not C"},
		}[:min(3, max)]
	})
}

// TestKernelAudit: the kernel verifier's audit reports in the engine's one
// shape — the trivial-candidate audit read off the reference, registered
// mutants judged (a wrong one killed, an equivalent one survives, one that
// does not build is invalid) — and a tolerance that accepts anything is
// weak, with no mutant judged.
func TestKernelAudit(t *testing.T) {
	cfg := testConfig()
	v, err := NewVerifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	js, err := engine.NewJudges(1, v)
	if err != nil {
		t.Fatal(err)
	}
	item := loadSeed(t, "vector_add_f32")
	item.ItemID = auditTestItem
	rep, err := js.Audit(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Measured || rep.Trivial.Tried == 0 || rep.Trivial.Killed != rep.Trivial.Tried || rep.Weak() {
		t.Fatalf("sound task: %+v", rep)
	}
	want := engine.StrengthTally{Tried: 2, Killed: 1, Survivors: []string{"mutant:commuted"}, Invalid: []string{"mutant:broken"}}
	if !reflect.DeepEqual(rep.Mutants, want) {
		t.Errorf("mutants %+v, want %+v", rep.Mutants, want)
	}
	if is := rep.ItemStrength(); !is.Measured || is.MutantTried != 2 || is.MutantKilled != 1 {
		t.Errorf("item strength %+v", is)
	}
	again, err := js.Audit(context.Background(), item)
	if err != nil || !reflect.DeepEqual(again, rep) {
		t.Errorf("second audit (cached) differs: %+v, %v", again, err)
	}

	weak := item
	weak.Interface.Tolerance = 1e6
	rep, err = js.Audit(context.Background(), weak)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Weak() || len(rep.Trivial.Survivors) == 0 || rep.Mutants.Tried != 0 {
		t.Errorf("a tolerance of 1e6 is not weak, or mutants were judged: %+v", rep)
	}
}
