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
	"time"

	"github.com/crucible-data/crucible/engine"
)

// findSimulators lists vvp processes whose working directory is under root.
func findSimulators(root string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "vvp" {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, root) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestKilledSimulatorIsRetried kills the first two simulator processes it
// finds mid-run (the reference self-check's and the candidate's) with
// SIGKILL from outside; both jobs are retried and every candidate still
// gets a final verdict.
func TestKilledSimulatorIsRetried(t *testing.T) {
	cfg := testConfig(t)
	cfg.Workers = 1
	v := newTestVerifier(t, cfg)
	item := counterItem(t, 60000)
	cands := []engine.Candidate{
		{ItemID: "counter", CandidateID: "good", Code: goodCounter + "// kill-me\n"},
		{ItemID: "counter", CandidateID: "bad", Code: strings.Replace(goodCounter, "q + 1", "q + 2", 1)},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var killed []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[int]time.Time{}
		for ctx.Err() == nil {
			for _, pid := range findSimulators(cfg.TempDir) {
				first, ok := seen[pid]
				if !ok {
					seen[pid] = time.Now()
					continue
				}
				mu.Lock()
				n := len(killed)
				mu.Unlock()
				// Kill the first simulator (the reference self-check) and the
				// first one running the marked candidate.
				want := n == 0 || n == 1 && isMarked(pid)
				if want && time.Since(first) > 100*time.Millisecond {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						mu.Lock()
						killed = append(killed, pid)
						mu.Unlock()
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	evs, err := v.Verify(ctx, []engine.Item{item}, cands)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(killed) != 2 {
		t.Fatalf("killed %d simulator processes, want 2 (runs too short to catch?)", len(killed))
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
			_ = syscall.Kill(pid, syscall.SIGTERM)
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

// isMarked reports whether the process runs a job whose candidate carries
// the kill-me marker.
func isMarked(pid int) bool {
	cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(cwd, "candidate.sv"))
	return err == nil && strings.Contains(string(b), "kill-me")
}
