package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
)

// TestVerifyKernelCommand runs `verify kernel` on the bundled seed tasks
// with cpu candidates (right, wrong, identity exploit, unknown item) plus a
// cuda task, and reads the evidence shards back.
func TestVerifyKernelCommand(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc missing")
	}
	root := filepath.Join("..", "..", "examples", "seeds", "kernel")
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, "cands.jsonl"),
		engine.Candidate{ItemID: "vector_add_f32", CandidateID: "right",
			Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *o, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = b[i] + a[i]; }\n"},
		engine.Candidate{ItemID: "vector_add_f32", CandidateID: "wrong",
			Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *o, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = b[i] * a[i]; }\n"},
		engine.Candidate{ItemID: "vector_add_f32", CandidateID: "copy",
			Code: "#include <stdint.h>\n#include <string.h>\nvoid vector_add(const float *a, const float *b, float *o, int64_t n) { memcpy(o, b, n * 4); }\n"},
		engine.Candidate{ItemID: "nope", CandidateID: "orphan", Code: "void f(void) {}"})
	cfg := kernels.DefaultStageConfig()
	cfg.Trials, cfg.Reps, cfg.Warmup, cfg.Timeout = 2, 2, 1, 20*time.Second
	var out bytes.Buffer
	o := VerifyKernelOptions{Items: root, Candidates: filepath.Join(dir, "cands.jsonl"), Out: filepath.Join(dir, "out"),
		Config: cfg, Writer: engine.DefaultWriterOptions(), Stdout: &out}
	if err := runVerifyKernel(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	so, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := engine.ReadAll[engine.Evidence](so.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"right": "pass/", "wrong": "fail/mismatch", "copy": "fail/exploit", "orphan": "unjudged/payload_corrupt"}
	if len(evs) != len(want) {
		t.Fatalf("%d evidence rows, want %d", len(evs), len(want))
	}
	for _, ev := range evs {
		if got := ev.Status + "/" + ev.FailureStage; got != want[ev.CandidateID] {
			t.Errorf("%s: %s (%s), want %s", ev.CandidateID, got, ev.Cause, want[ev.CandidateID])
		}
	}
	if !strings.Contains(out.String(), "pass      1") {
		t.Errorf("summary:\n%s", out.String())
	}

	// --self-check on one seed directory; a usage error without candidates.
	out.Reset()
	o.Items, o.Candidates, o.SelfCheck, o.Out = filepath.Join(root, "matmul_f32_64"), "", true, filepath.Join(dir, "self")
	if err := runVerifyKernel(context.Background(), o); err != nil {
		t.Fatalf("self-check: %v", err)
	}
	if !strings.Contains(out.String(), "pass      1") {
		t.Errorf("self-check summary:\n%s", out.String())
	}
	o.SelfCheck = false
	if err := runVerifyKernel(context.Background(), o); err == nil {
		t.Fatal("no candidates and no --self-check accepted")
	}
}
