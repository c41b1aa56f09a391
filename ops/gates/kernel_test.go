package gates

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/evolve"
)

func fastKernelVerifier(t *testing.T) *kernels.Verifier {
	t.Helper()
	kc := kernels.DefaultConfig()
	kc.Trials, kc.Warmup, kc.Reps, kc.BootstrapRounds, kc.TempDir = 2, 0, 1, 20, t.TempDir()
	kv, err := kernels.NewVerifier(kc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close() })
	return kv
}

// TestKernelOperators evolves the bundled kernel seeds: the cpu ones are
// mutated and admitted with the invariant checked by the kernel verifier;
// the cuda ones stay unverified without a device and are skipped.
func TestKernelOperators(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (cpu kernel backend)")
	}
	requireTools(t)
	seeds := loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel"))
	// A ReLU kernel, so activation_swap has an activation to swap.
	for _, s := range seeds {
		if s.ItemID == "vector_add_f32" {
			r := s
			r.ItemID, r.LineageID, r.Family = "relu_scale_f32", "relu_scale_f32", "elementwise"
			r.Reference = "#include <math.h>\n#include <stdint.h>\n\nvoid relu_scale(const float *a, const float *b, float *out, int64_t n) {\n\tfor (int64_t i = 0; i < n; i++) out[i] = fmaxf(a[i] * 2.0f, 0.0f);\n}\n"
			r.Verifier.Top = "relu_scale"
			r.Instruction = "# ReLU of a scaled vector\n\nImplement `void relu_scale(const float *a, const float *b, float *out, int64_t n)`: out[i] = max(2 a[i], 0); b is unused."
			seeds = append(seeds, r)
		}
	}
	kv := fastKernelVerifier(t)
	ecfg := evolve.DefaultConfig()
	e, err := evolve.New(ecfg, nil, judgesOf(t, testVerifier(t), kv), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	er, err := e.Evolve(ctx, seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("evolve counts %v skipped %v", er.Counts, er.Skipped)
	a, err := New(DefaultConfig(), Env{Judges: judgesOf(t, testVerifier(t), kv)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Admit(ctx, seeds, er.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rejections {
		t.Logf("rejected %s at %s/%s: %s", r.ItemID, r.Gate, r.Reason, r.Detail)
	}
	perOp := checkInvariant(t, res)
	t.Logf("admitted per operator: %v", perOp)
	for _, op := range evolve.DefaultKernelOperatorNames() {
		if perOp[op] == 0 {
			t.Errorf("kernel operator %s: nothing admitted", op)
		}
	}
	// Without a kernel verifier nothing kernel-side is admitted: unjudged.
	a2, _ := New(DefaultConfig(), Env{Judges: judgesOf(t, testVerifier(t))})
	res2, err := a2.Admit(ctx, seeds, er.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	if len(res2.Admitted) != 0 {
		t.Errorf("admitted %d kernel items without a kernel verifier", len(res2.Admitted))
	}
	for _, r := range res2.Rejections {
		if r.Reason != ReasonUnjudged {
			t.Errorf("%s: %s/%s, want unjudged", r.ItemID, r.Gate, r.Reason)
		}
	}
	_ = engine.DomainKernel
}
