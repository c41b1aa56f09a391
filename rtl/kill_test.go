package rtl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestKilledSandboxIsRetried kills, from outside, the sandbox of two
// simulations as they start (the reference self-check's first run and the
// marked candidate's first run; the verifier's process-start hook names
// them, so which processes die never depends on timing): the tree cannot do
// that to itself, so both jobs are retried as infrastructure failures and
// every candidate still gets a final verdict. (A simulator process dying of
// a signal is not retried: the candidate can send its own processes any
// signal.)
func TestKilledSandboxIsRetried(t *testing.T) {
	cfg := testConfig(t)
	cfg.Workers = 1
	v := newTestVerifier(t, cfg)
	item := counterItem(t, 600)
	cands := []engine.Candidate{
		{ItemID: "counter", CandidateID: "good", Code: goodCounter + "// kill-me\n"},
		{ItemID: "counter", CandidateID: "bad", Code: strings.Replace(goodCounter, "q + 1", "q + 2", 1)},
	}
	var mu sync.Mutex
	var killed []string
	runs := 0
	v.onProcessStart = func(phase string, pid int) {
		if phase != "run" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		runs++
		marked := isMarked(pid)
		switch {
		case runs == 1: // the reference self-check runs first
			killed = append(killed, "reference")
		case marked && len(killed) == 1:
			killed = append(killed, "candidate")
		default:
			return
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("kill %d: %v", pid, err)
		}
	}
	evs, err := v.Verify(context.Background(), []engine.Item{item}, cands)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(killed) != 2 {
		t.Fatalf("killed %v, want the reference's and the marked candidate's first runs", killed)
	}
	if len(evs) != 2 {
		t.Fatalf("%d rows for 2 candidates", len(evs))
	}
	if evs[0].Status != engine.StatusPass || evs[0].Attempts != 2 {
		t.Errorf("good: %s/%s attempts=%d (%s), want pass after 2 attempts", evs[0].Status, evs[0].FailureStage, evs[0].Attempts, evs[0].Cause)
	}
	if evs[1].Status != engine.StatusFail || evs[1].FailureStage != engine.StageMismatch {
		t.Errorf("bad: %s/%s (%s), want fail/mismatch", evs[1].Status, evs[1].FailureStage, evs[1].Cause)
	}
}

// TestUnresolvedCrashIsUnjudged: a simulator killed on every attempt ends
// unjudged with worker_crash, never fail.
func TestUnresolvedCrashIsUnjudged(t *testing.T) {
	cfg := testConfig(t)
	cfg.Retries = 1
	v := newTestVerifier(t, cfg)
	v.onProcessStart = func(phase string, pid int) {
		if phase == "run" && isMarked(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // the sandbox's init: only an outsider can

		}
	}
	ev, err := v.VerifyOne(context.Background(), counterItem(t, 50), engine.Candidate{ItemID: "counter", CandidateID: "c", Code: goodCounter + "// kill-me\n"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageWorkerCrash || ev.Attempts != 2 {
		t.Errorf("got %s/%s attempts=%d (%s), want unjudged/worker_crash after 2 attempts", ev.Status, ev.FailureStage, ev.Attempts, ev.Cause)
	}
}

// isMarked reports whether the sandbox whose init is pid runs a job whose
// candidate carries the kill-me marker. The init's environment names its
// job directory (it is the sandbox's configuration).
func isMarked(pid int) bool {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if _, blob, ok := strings.Cut(kv, "CRUCIBLE_SANDBOX_INIT="); ok {
			// The init's configuration starts with the job directory as a
			// "<length>:<bytes>" field (internal/sandbox encodeInitConfig).
			n, rest, _ := strings.Cut(blob, ":")
			if l, err := strconv.Atoi(n); err == nil && l > 0 && l <= len(rest) {
				b, err := os.ReadFile(filepath.Join(rest[:l], "candidate.sv"))
				return err == nil && strings.Contains(string(b), "kill-me")
			}
		}
	}
	return false
}
