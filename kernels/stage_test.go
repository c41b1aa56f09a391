package kernels

import (
	"context"
	"github.com/crucible-data/crucible/internal/testenv"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
)

// TestVerifyKernelStage runs ingest (taskdir preset) over the bundled kernel
// seeds and then verify_kernel in a pipeline: cpu references are verified;
// GPU references on a GPU-less host stay as items marked unjudged.
func TestVerifyKernelStage(t *testing.T) {
	dir := t.TempDir()
	seeds := filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel")
	pipeline := `name: kernel-stage-test
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [` + seeds + `]
    config: {preset: taskdir}
  - name: verify
    type: verify_kernel
    from: [ingest]
    config: {trials: 2, reps: 2, warmup: 1, timeout: 20s}
`
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	RegisterStages(reg)
	cfg, err := engine.LoadPipeline(filepath.Join(dir, "p.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Runner{Registry: reg}
	if _, err := r.Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := engine.LoadStageOutput(filepath.Join(dir, "work", "verify"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := engine.ReadAll[engine.Item](out.Shards("items")...)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := engine.ReadAll[engine.Evidence](out.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 5 || len(evs) != 5 {
		t.Fatalf("items %d, evidence %d; want 5 and 5", len(items), len(evs))
	}
	gpu := newCUDABackend(DefaultConfig(), &gpuPool{}).Available() == nil
	for _, it := range items {
		want := engine.RefVerified
		if it.Verifier.Harness == BackendCUDA && !gpu {
			want = engine.RefUnjudged
		}
		if it.ReferenceStatus != want {
			t.Errorf("%s (%s): reference_status %q, want %q", it.ItemID, it.Verifier.Harness, it.ReferenceStatus, want)
		}
	}
}
