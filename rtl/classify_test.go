package rtl

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// TestClassifyFromObservationsOnly: infrastructure stages come only from what
// the verifier observed (the sandbox failing, a timeout on a tree starved of
// CPU, its own statfs); what the tree can do to itself — block, kill itself,
// print "No space left on device" — is the candidate's.
func TestClassifyFromObservationsOnly(t *testing.T) {
	lim := DefaultConfig().Limits
	lim.CPUSeconds = 10
	mk := func(f func(*procResult)) procResult {
		r := procResult{ExitCode: -1, Stdout: newCapture(1024, 0, nil), Stderr: newCapture(1024, 0, nil), Disk: diskState{Free: 1 << 40}}
		f(&r)
		return r
	}
	noSpace := func(r *procResult) { r.Stderr.Write([]byte("fatal: No space left on device\n")) }
	for _, c := range []struct {
		name string
		r    procResult
		want string
	}{
		{"starved timeout", mk(func(r *procResult) {
			r.TimedOut, r.Starved, r.CPU, r.RunDelay, r.Signal = true, true, 2*time.Second, 50*time.Second, syscall.SIGKILL
		}), engine.StageWorkerCrash},
		{"blocked timeout (read of its own stdout)", mk(func(r *procResult) {
			r.TimedOut, r.CPU, r.Signal = true, 10*time.Millisecond, syscall.SIGKILL
		}), engine.StageTimeout},
		{"SIGXCPU", mk(func(r *procResult) { r.Signal = sigXCPU; r.CPU = 10 * time.Second }), engine.StageTimeout},
		{"hard CPU limit", mk(func(r *procResult) { r.Signal = syscall.SIGKILL; r.CPU = 11 * time.Second }), engine.StageTimeout},
		{"SIGKILL it sent itself", mk(func(r *procResult) { r.Signal = syscall.SIGKILL; r.CPU = time.Second }), engine.StageSimulate},
		{"SIGTERM it sent itself", mk(func(r *procResult) { r.Signal = syscall.SIGTERM }), engine.StageSimulate},
		{"prints no space, exits 0", mk(func(r *procResult) { noSpace(r); r.ExitCode = 0 }), ""},
		{"prints no space, exits 1", mk(func(r *procResult) { noSpace(r); r.ExitCode = 1 }), ""},
		{"disk really full", mk(func(r *procResult) { r.ExitCode = 1; r.Disk = diskState{Full: true, Free: 4096, JobBytes: 8192} }), engine.StageDiskFull},
		{"job filled the disk", mk(func(r *procResult) { r.ExitCode = 1; r.Disk = diskState{Full: true, JobBytes: 10 << 30} }), engine.StageResource},
		{"sandbox killed from outside", mk(func(r *procResult) { r.SandboxErr = errors.New("sandbox init ended without reporting") }), engine.StageWorkerCrash},
		{"build left too many files", mk(func(r *procResult) { r.SandboxErr = fmt.Errorf("%w (more than 200000)", sandbox.ErrJobDirTooLarge) }), engine.StageResource},
		{"no namespaces", mk(func(r *procResult) { r.SandboxErr = sandbox.ErrUnavailable }), engine.StageToolchainMissing},
		{"output flood", mk(func(r *procResult) { r.OutputExceeded, r.Signal = true, syscall.SIGKILL }), engine.StageResource},
	} {
		if st, cause := classifyProcess(c.r, "run", lim, time.Minute); st != c.want {
			t.Errorf("%s: %q (%s), want %q", c.name, st, cause, c.want)
		}
	}
}
