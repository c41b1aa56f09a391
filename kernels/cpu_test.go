package kernels

import (
	"context"
	"github.com/crucible-data/crucible/internal/testenv"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Trials, cfg.Warmup, cfg.Reps = 3, 1, 3
	cfg.FlushBytes = 1 << 20
	cfg.Timeout = 3 * time.Second
	cfg.MemLimitBytes = 512 << 20
	cfg.Workers = 2
	cfg.BootstrapRounds = 200
	return cfg
}

func loadSeed(t *testing.T, name string) engine.Item {
	t.Helper()
	it, err := LoadSeedDir(filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel", name))
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func cpuCandidate(t *testing.T, item, name string) engine.Candidate {
	t.Helper()
	code, err := os.ReadFile(filepath.Join("testdata", "cpu", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	return engine.Candidate{ItemID: item, CandidateID: name, Code: string(code)}
}

// want is the expected verdict for each bundled CPU candidate.
var cpuWant = map[string]struct{ status, stage, gate string }{
	"correct":   {engine.StatusPass, "", ""},
	"wrong":     {engine.StatusFail, engine.StageMismatch, ""},
	"offbyone":  {engine.StatusFail, engine.StageMismatch, ""},
	"crash":     {engine.StatusFail, engine.StageSimulate, ""},
	"hang":      {engine.StatusFail, engine.StageTimeout, ""},
	"memhog":    {engine.StatusFail, engine.StageResource, ""},
	"identity":  {engine.StatusFail, engine.StageExploit, GateIdentityStore},
	"stale":     {engine.StatusFail, engine.StageExploit, GateStaleOutput},
	"thread":    {engine.StatusFail, engine.StageExploit, GateForbiddenCall},
	"escape":    {engine.StatusFail, engine.StageExploit, GateForbiddenCall},
	"delegate":  {engine.StatusFail, engine.StageExploit, GateDelegation},
	"nocompile": {engine.StatusFail, engine.StageCompile, ""},
	"noentry":   {engine.StatusFail, engine.StageElaborate, ""},
	"exitcall":  {engine.StatusFail, engine.StageSimulate, ""},
	"noop":      {engine.StatusFail, engine.StageExploit, GateLaunchEvidence},
}

// TestCPUBackendVerdicts runs every kind of candidate through one verifier
// pool concurrently, twice: each gets the right status and stage, the pool
// survives crashes, hangs and memory hogs, and the verdicts repeat exactly.
func TestCPUBackendVerdicts(t *testing.T) {
	it := loadSeed(t, "vector_add_f32")
	items := map[string]engine.Item{it.ItemID: it}
	var cands []engine.Candidate
	for name := range cpuWant {
		cands = append(cands, cpuCandidate(t, it.ItemID, name))
	}
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := v.backends[BackendCPU].Available(); err != nil {
		t.Skipf("cpu backend unavailable: %v", err)
	}
	var runs [2][]engine.Evidence
	for r := range runs {
		runs[r], err = v.VerifyAll(context.Background(), items, cands)
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, ev := range runs[0] {
		w := cpuWant[ev.CandidateID]
		sp, _ := ev.Measurement("speedup")
		t.Logf("%-9s %-8s %-10s speedup=%.2f %s", ev.CandidateID, ev.Status, ev.FailureStage, sp.Float, ev.Cause)
		if ev.Status != w.status || ev.FailureStage != w.stage {
			t.Errorf("%s: got %s/%s (%s), want %s/%s\nlog: %s", ev.CandidateID, ev.Status, ev.FailureStage, ev.Cause,
				w.status, w.stage, ev.LogExcerpt)
		}
		if w.gate != "" {
			if m, ok := ev.Measurement("exploit_" + w.gate); !ok || m.Int != 1 {
				t.Errorf("%s: gate %s did not fire (cause %q)", ev.CandidateID, w.gate, ev.Cause)
			}
		}
		if ev.Status == engine.StatusPass {
			for _, name := range []string{"speedup", "speedup_ci_lo", "cand_ms_median", "ref_ms_median", "max_abs_err"} {
				if _, ok := ev.Measurement(name); !ok {
					t.Errorf("%s: passing evidence lacks %s", ev.CandidateID, name)
				}
			}
			if m, _ := ev.Measurement("timed_samples"); m.Int != 9 {
				t.Errorf("%s: timed_samples = %d, want trials*reps = 9", ev.CandidateID, m.Int)
			}
		}
		again := runs[1][i]
		if again.Status != ev.Status || again.FailureStage != ev.FailureStage || again.CandidateID != ev.CandidateID {
			t.Errorf("%s: verdict changed between runs: %s/%s then %s/%s", ev.CandidateID, ev.Status, ev.FailureStage,
				again.Status, again.FailureStage)
		}
		if !reflect.DeepEqual(again.Provenance.Inputs, ev.Provenance.Inputs) {
			t.Errorf("%s: provenance inputs differ between runs", ev.CandidateID)
		}
	}
}

// Every bundled cpu seed's reference passes as its own candidate.
func TestCPUSeedReferencesPass(t *testing.T) {
	items, err := LoadSeeds(filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]engine.Item{}
	var cands []engine.Candidate
	for _, it := range items {
		if _, err := TaskFromItem(it); err != nil {
			t.Fatalf("seed %s: %v", it.ItemID, err)
		}
		if it.Verifier.Harness != BackendCPU {
			continue
		}
		m[it.ItemID] = it
		cands = append(cands, engine.Candidate{ItemID: it.ItemID, CandidateID: "self", Code: it.Reference})
	}
	if len(cands) < 3 {
		t.Fatalf("only %d cpu seeds", len(cands))
	}
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	evs, err := v.VerifyAll(context.Background(), m, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != engine.StatusPass {
			t.Errorf("%s reference as candidate: %s/%s %s", ev.ItemID, ev.Status, ev.FailureStage, ev.Cause)
		}
	}
}

// GPU tasks on a machine without the GPU backends end unjudged, never fail.
func TestGPUTaskWithoutDeviceIsUnjudged(t *testing.T) {
	it := loadSeed(t, "vector_add_f32_cuda")
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.backends[BackendCUDA].Available() == nil {
		t.Skip("CUDA available here")
	}
	ev := v.Verify(context.Background(), map[string]engine.Item{it.ItemID: it},
		engine.Candidate{ItemID: it.ItemID, CandidateID: "c", Code: it.Reference})
	if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageToolchainMissing || !strings.HasPrefix(ev.Cause, "no-device") {
		t.Fatalf("got %s/%s %q", ev.Status, ev.FailureStage, ev.Cause)
	}
}

func TestBackendRestriction(t *testing.T) {
	it := loadSeed(t, "vector_add_f32")
	cfg := testConfig()
	cfg.Backend = BackendCUDA
	v, err := NewVerifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ev := v.Verify(context.Background(), map[string]engine.Item{it.ItemID: it}, engine.Candidate{ItemID: it.ItemID, CandidateID: "c", Code: it.Reference})
	if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageToolchainUnsupported {
		t.Fatalf("got %s/%s", ev.Status, ev.FailureStage)
	}
	ev = v.Verify(context.Background(), nil, engine.Candidate{ItemID: "nope", CandidateID: "c"})
	if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StagePayloadCorrupt {
		t.Fatalf("unknown item: got %s/%s", ev.Status, ev.FailureStage)
	}
}

// A candidate far faster than any honest one fires suspicious_speedup even
// though its outputs are right.
func TestSuspiciousSpeedupGate(t *testing.T) {
	it := loadSeed(t, "vector_add_f32")
	it.ItemID = "slow_ref"
	it.Reference = "#include <stdint.h>\n#include <unistd.h>\nvoid vector_add(const float *a, const float *b, float *out, int64_t n) {\n" +
		"\tusleep(20000);\n\tfor (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];\n}\n"
	cfg := testConfig()
	cfg.SuspiciousSpeedup = 20
	v, err := NewVerifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ev := v.Verify(context.Background(), map[string]engine.Item{it.ItemID: it}, cpuCandidate(t, it.ItemID, "correct"))
	if ev.Status != engine.StatusFail || ev.FailureStage != engine.StageExploit {
		t.Fatalf("got %s/%s %s\n%+v", ev.Status, ev.FailureStage, ev.Cause, ev.Measurements)
	}
	if m, ok := ev.Measurement("exploit_" + GateSuspiciousSpeedup); !ok || m.Int != 1 {
		t.Fatalf("gate did not fire: %s", ev.Cause)
	}
	if m, _ := ev.Measurement("faster"); m.Int != 1 {
		t.Fatal("a 20x+ speedup should also count as faster by its CI")
	}
}

func TestBackendsReport(t *testing.T) {
	st := Backends(testConfig())
	if len(st) != 3 || st[0].Name != BackendCPU || st[1].Name != BackendCUDA || st[2].Name != BackendTriton {
		t.Fatalf("backends %+v", st)
	}
	for _, b := range st {
		if b.Detail == "" {
			t.Errorf("%s: no detail (version or reason)", b.Name)
		}
	}
	if !st[0].Available {
		t.Skipf("cpu backend unavailable here: %s", st[0].Detail)
	}
}
