package rtl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestReferenceCheckCached: the reference self-check runs once per (task,
// toolchain) within a verifier, and a CacheDir carries it to the next one.
func TestReferenceCheckCached(t *testing.T) {
	cfg := testConfig(t)
	cfg.CacheDir = t.TempDir()
	v := newTestVerifier(t, cfg)
	var procs atomic.Int32
	v.onProcessStart = func(string, int) { procs.Add(1) }
	item := counterItem(t, 50)
	var cands []engine.Candidate
	for i := 0; i < 4; i++ {
		cands = append(cands, engine.Candidate{ItemID: "counter", CandidateID: fmt.Sprint(i), Code: goodCounter + strings.Repeat("\n", i+1)})
	}
	evs, err := v.Verify(context.Background(), []engine.Item{item}, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != engine.StatusPass {
			t.Fatalf("%s: %s/%s %s", ev.CandidateID, ev.Status, ev.FailureStage, ev.Cause)
		}
	}
	// The reference check: the trusted run and the reference's replay
	// (build+run each); each candidate: the preprocessor and its replay.
	if n := procs.Load(); n != 2*2+4*3 {
		t.Errorf("%d processes, want 16 (one reference check)", n)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "rtl-refcheck-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d cache files, want 1", len(files))
	}
	v2 := newTestVerifier(t, cfg)
	procs.Store(0)
	v2.onProcessStart = func(string, int) { procs.Add(1) }
	ev, err := v2.VerifyOne(context.Background(), item, cands[0])
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != engine.StatusPass || procs.Load() != 3 {
		t.Errorf("second verifier: %s with %d processes, want pass with 3 (cached reference: preprocessor, replay build and run)", ev.Status, procs.Load())
	}
	if m, ok := ev.Measurement("expected_samples"); !ok || m.Int != 100 {
		t.Errorf("expected_samples %v from the cache, want 100", m)
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Simulator, cfg.Workers, cfg.Retries = "modelsim", 0, -1
	cfg.Limits.CPUSeconds, cfg.Limits.OutputKeepBytes = 0, 10
	err := cfg.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v", err)
	}
	for _, f := range []string{"simulator", "workers", "retries", "cpu_seconds", "output_keep_bytes"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%q not named in %v", f, err)
		}
	}
	if _, err := NewVerifier(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("NewVerifier accepted a bad config: %v", err)
	}
}

func TestInfraStageMapping(t *testing.T) {
	if fsStage(fmt.Errorf("write: %w", syscall.ENOSPC)) != engine.StageDiskFull {
		t.Error("ENOSPC is not disk_full")
	}
	if fsStage(errors.New("permission denied")) != engine.StageWorkerCrash {
		t.Error("other I/O errors should be worker_crash")
	}
	if !engine.Transient(engine.StageDiskFull) || !engine.Transient(engine.StageWorkerCrash) || engine.Transient(engine.StageToolchainMissing) || engine.Transient(engine.StageMismatch) {
		t.Error("retry policy: only worker_crash and disk_full are retried")
	}
	// Items that cannot be judged are unjudged with a cause, never fail.
	v := newTestVerifier(t, testConfig(t))
	bad := []engine.Item{
		{ItemID: "no-harness", Reference: counterRef, Verifier: engine.Verifier{Kind: engine.VerifierDifferential}},
		{ItemID: "kernel-kind", Reference: counterRef, Verifier: engine.Verifier{Kind: engine.VerifierKernel, Harness: "x"}},
		{ItemID: "no-verdict-stmt", Reference: counterRef, Verifier: engine.Verifier{Kind: engine.VerifierDifferential, Harness: "module tb; endmodule"}},
		{ItemID: "no-refmodule", Reference: "module Other; endmodule", Verifier: engine.Verifier{Kind: engine.VerifierDifferential, Harness: counterItem(t, 5).Verifier.Harness}},
	}
	var cands []engine.Candidate
	for _, it := range bad {
		cands = append(cands, engine.Candidate{ItemID: it.ItemID, CandidateID: "c", Code: goodCounter})
	}
	evs, err := v.Verify(context.Background(), bad, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StagePayloadCorrupt || ev.Cause == "" {
			t.Errorf("%s: %s/%s %q, want unjudged/payload_corrupt with a cause", ev.ItemID, ev.Status, ev.FailureStage, ev.Cause)
		}
	}
}
