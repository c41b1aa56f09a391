package kernels

import (
	"github.com/crucible-data/crucible/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
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
	stagetest.Run(t, dir, pipeline, RegisterStages)
	o := stagetest.Read(t, dir, "verify")
	items, evs := o.Items, o.Evidence
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

// A task whose reference ignores its inputs (all zeros) is degenerate: the
// stage rejects it as weak_verifier and its reference evidence carries the
// measured strength; a sound task next to it is verified with strength 1.
func TestVerifyKernelStageRejectsWeakTask(t *testing.T) {
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds")
	src := filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel", "vector_add_f32")
	for _, id := range []string{"vector_add_f32", "weak_zero"} {
		d := filepath.Join(seeds, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"task.json", "instruction.md", "reference.c"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if id == "weak_zero" {
				switch f {
				case "task.json":
					b = []byte(strings.Replace(string(b), `"vector_add_f32"`, `"weak_zero"`, 1))
				case "reference.c":
					b = []byte("#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *out, int64_t n) {\n" +
						"\tfor (int64_t i = 0; i < n; i++) out[i] = 0;\n}\n")
				}
			}
			if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	pipeline := `name: kernel-weak-test
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
	stagetest.Run(t, dir, pipeline, RegisterStages)
	o := stagetest.Read(t, dir, "verify")
	items, rejs, evs := o.Items, o.Rejections, o.Evidence
	if len(items) != 1 || items[0].ItemID != "vector_add_f32" || items[0].ReferenceStatus != engine.RefVerified {
		t.Fatalf("items %+v", items)
	}
	if len(rejs) != 1 || rejs[0].ItemID != "weak_zero" || rejs[0].Reason != "weak_verifier" {
		t.Fatalf("rejections %+v", rejs)
	}
	for _, ev := range evs {
		m, ok := ev.Measurement("verifier_strength")
		switch {
		case !ok:
			t.Errorf("%s: no verifier_strength", ev.ItemID)
		case ev.ItemID == "weak_zero" && (m.Float >= 1 || ev.FailureStage != engine.StageWeakVerifier):
			t.Errorf("weak task: strength %g, stage %s", m.Float, ev.FailureStage)
		case ev.ItemID == "vector_add_f32" && m.Float != 1:
			t.Errorf("sound task: strength %g", m.Float)
		}
	}
}
