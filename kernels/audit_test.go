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

// TestReferenceVerdictRemembered: the reference judged as its own
// candidate runs once per verifier — the strength gate's audit and the
// audit gate both ask — and the remembered verdict keeps its cost
// (wall_time_ms); a caller appending to it does not change what the next
// caller gets, and a changed item is judged afresh.
func TestReferenceVerdictRemembered(t *testing.T) {
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	cpu := v.backends[BackendCPU].(*cpuBackend)
	ctx := context.Background()
	item := loadSeed(t, "vector_add_f32")
	first, err := v.SelfCheck(ctx, item)
	if err != nil || first.Status != engine.StatusPass {
		t.Fatalf("self-check: %+v, %v", first, err)
	}
	if _, ok := first.Measurement(engine.MeasureWallTimeMS); !ok {
		t.Fatalf("no %s in %+v", engine.MeasureWallTimeMS, first.Measurements)
	}
	jobs := cpu.jobs.Load()
	first.Measurements = append(first.Measurements, engine.IntM("caller_added", 1))
	ref := engine.Candidate{ItemID: item.ItemID, CandidateID: engine.ReferenceCandidateID, Code: item.Reference}
	again, err := v.Judge(ctx, item, ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := cpu.jobs.Load(); n != jobs {
		t.Errorf("the reference ran again: %d jobs, want %d", n, jobs)
	}
	if _, ok := again.Measurement("caller_added"); ok {
		t.Error("a caller's append reached the remembered verdict")
	}
	w1, _ := first.Measurement(engine.MeasureWallTimeMS)
	w2, _ := again.Measurement(engine.MeasureWallTimeMS)
	if again.Status != engine.StatusPass || w1 != w2 {
		t.Errorf("remembered verdict %s, wall %v, want pass, wall %v", again.Status, w2, w1)
	}
	changed := item
	changed.Interface.Tolerance *= 2
	if _, err := v.Judge(ctx, changed, ref); err != nil {
		t.Fatal(err)
	}
	if n := cpu.jobs.Load(); n == jobs {
		t.Error("a changed item was not judged again")
	}
	other := engine.Candidate{ItemID: item.ItemID, CandidateID: "cand", Code: item.Reference}
	before := cpu.jobs.Load()
	if _, err := v.Judge(ctx, item, other); err != nil {
		t.Fatal(err)
	}
	if cpu.jobs.Load() == before {
		t.Error("a candidate (not the reference) was answered from the memo")
	}
}
