//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The sandbox's init is this binary itself, re-executed from
// /proc/self/exe with its configuration in one environment variable; the
// package's init function recognises it and never returns to main.
const envInit = "CRUCIBLE_SANDBOX_INIT"

// initConfig is what the parent tells the init.
type initConfig struct {
	Dir      string   `json:"dir"`
	WorkDir  string   `json:"work_dir"`
	Binds    []Bind   `json:"binds"`
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	Limits   Limits   `json:"limits"`
	Hostname string   `json:"hostname"`
	// OwnUID: the job runs in a nested user namespace under the init's own
	// host uid (the verifier is not root); otherwise it runs as InsideUID,
	// mapped to a host uid of its own.
	OwnUID bool `json:"own_uid"`
	// ExtraFiles: the init's fds 4.. go to the job as 3..
	ExtraFiles int `json:"extra_files,omitempty"`
	// ForcePrlimit skips the ptrace way of setting limits (tests).
	ForcePrlimit bool `json:"force_prlimit,omitempty"`
	// HoldFD, when not 0, is the init's fd of Spec.Hold's pipe: it reads
	// one byte (or EOF) from it before starting the job.
	HoldFD int `json:"hold_fd,omitempty"`
}

// initReport is the init's one message to the parent, on fd 3.
type initReport struct {
	Stage  string `json:"stage"` // "setup", "exec" or "exit"
	Err    string `json:"err,omitempty"`
	Status uint32 `json:"status"` // the main process's wait status (stage exit)
}

// forcePrlimit makes inits use prlimit(1) instead of ptrace (tests).
var forcePrlimit bool

// Process is one running sandboxed tree.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	ids     jobIDs
	start   time.Time
	exited  chan struct{}
	report  chan []byte
	waitErr error
	hold    *os.File // Spec.Hold's write end until Release

	mu       sync.Mutex
	killedBy string // "", "timeout" or "caller"
	wall     time.Duration
	sched    schedSample
	result   *Result
}

// Start launches spec's tree and returns once the init is running. The error
// is non-nil only when the sandbox cannot be created at all (ErrUnavailable)
// or spec is invalid; everything the job does is reported by Wait.
func Start(spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("sandbox: empty argv")
	}
	if !filepath.IsAbs(spec.Dir) {
		return nil, fmt.Errorf("sandbox: job directory %q is not absolute", spec.Dir)
	}
	if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox: job directory %q: not a directory (%v)", spec.Dir, err)
	}
	for _, b := range spec.Binds {
		if err := checkBindTarget(b.Target); err != nil {
			return nil, err
		}
	}
	ids, err := allocIDs()
	if err != nil {
		return nil, err
	}
	if !ids.own {
		if err := chownTree(spec.Dir, ids.jobUID, ids.jobGID); err != nil {
			ids.release()
			if errors.Is(err, ErrJobDirTooLarge) {
				return nil, fmt.Errorf("%w (more than %d)", err, maxJobEntries)
			}
			return nil, fmt.Errorf("sandbox: handing the job directory to the job's uid: %w", err)
		}
	}
	cfg := initConfig{Dir: spec.Dir, WorkDir: spec.WorkDir, Binds: spec.Binds, Argv: spec.Argv,
		Env: jobEnv(spec.Env), Limits: spec.Limits, Hostname: "sandbox", OwnUID: ids.own, ForcePrlimit: forcePrlimit,
		ExtraFiles: len(spec.ExtraFiles)}
	extra := append([]*os.File(nil), spec.ExtraFiles...)
	var holdR, holdW *os.File
	if spec.Hold {
		if holdR, holdW, err = os.Pipe(); err != nil {
			ids.release()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		defer holdR.Close()
		cfg.HoldFD = 4 + len(extra)
		extra = append(extra, holdR)
	}
	blob, err := json.Marshal(cfg)
	if err != nil {
		ids.release()
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		ids.release()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// The init is single-threaded by design and short-lived: one P and no
	// collector spare it the runtime's thread start-up (about 3 of its 11
	// CPU-ms per job, BenchmarkSandboxTrue). The job's environment is
	// cfg.Env, not this.
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"crucible-sandbox-init"},
		Env: []string{envInit + "=" + string(blob), "GOMAXPROCS=1", "GOGC=off"}, Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr,
		ExtraFiles: append([]*os.File{w}, extra...), SysProcAttr: ids.sysProcAttr(),
		// The tree's streams close when the namespace dies; this only bounds a
		// slow reader.
		WaitDelay: 2 * time.Second}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		if holdW != nil {
			holdW.Close()
		}
		ids.release()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	w.Close()
	p := &Process{spec: spec, cmd: cmd, ids: ids, start: start, exited: make(chan struct{}), report: make(chan []byte, 1), hold: holdW}
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 1<<16))
		r.Close()
		p.report <- b
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Run starts spec's tree and waits for it. A sandbox that cannot be created
// is reported as Result.SandboxErr wrapping ErrUnavailable.
func Run(ctx context.Context, spec Spec) Result {
	p, err := Start(spec)
	if err != nil {
		return Result{ExitCode: -1, SandboxErr: err}
	}
	return p.Wait(ctx)
}

// Pid is the host pid of the tree's init (pid 1 of its namespace).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Release lets a tree started with Spec.Hold start its job. Safe to call
// more than once, and on a tree not held.
func (p *Process) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold != nil {
		_, _ = p.hold.Write([]byte{1})
		p.hold.Close()
		p.hold = nil
	}
}

// Kill kills the whole tree (the init, and with it every process in its
// PID namespace). Safe to call at any time and more than once.
func (p *Process) Kill() { p.kill("caller") }

func (p *Process) kill(by string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return
	default:
	}
	if p.killedBy == "" {
		p.killedBy = by
		p.wall = time.Since(p.start)
	}
	// os.Process signals through a pidfd: it cannot reach a recycled pid.
	_ = p.cmd.Process.Kill()
}

// Wait waits for the tree to end, enforcing Spec.Timeout; a cancelled ctx
// kills the tree (Result.Killed). Calling Wait again returns the same Result.
func (p *Process) Wait(ctx context.Context) Result {
	p.mu.Lock()
	if p.result != nil {
		defer p.mu.Unlock()
		return *p.result
	}
	p.mu.Unlock()
	var timer <-chan time.Time
	if p.spec.Timeout > 0 {
		t := time.NewTimer(p.spec.Timeout - time.Since(p.start))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-p.exited:
	case <-timer:
		// Read where the tree stands before killing it: waiting for a CPU
		// (starved) or sleeping (blocked).
		s := sampleSched(p.Pid())
		p.mu.Lock()
		p.sched = s
		p.mu.Unlock()
		p.kill("timeout")
		<-p.exited
	case <-ctx.Done():
		p.Kill()
		<-p.exited
	}
	rep := <-p.report
	p.Release() // a held tree that was killed instead: drop the pipe
	res := p.build(rep)
	p.ids.release()
	p.mu.Lock()
	p.result = &res
	p.mu.Unlock()
	return res
}

func (p *Process) build(rep []byte) Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := Result{ExitCode: -1, Wall: time.Since(p.start)}
	if ps := p.cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss * 1024
		}
	}
	var r initReport
	haveReport := len(bytes.TrimSpace(rep)) > 0 && json.Unmarshal(rep, &r) == nil
	switch {
	case haveReport && r.Stage == "exit":
		// The main process ended on its own, before any kill of ours could
		// matter: its status is the verdict, whatever the timer did later.
		ws := syscall.WaitStatus(r.Status)
		if ws.Signaled() {
			res.Signal = ws.Signal()
		} else {
			res.ExitCode = ws.ExitStatus()
		}
	case haveReport && r.Stage == "exec":
		res.ExecErr = errors.New(r.Err)
	case haveReport:
		res.SandboxErr = fmt.Errorf("%w: %s: %s", ErrUnavailable, r.Stage, r.Err)
	case p.killedBy != "":
		res.Signal = syscall.SIGKILL
		res.Wall = p.wall
		res.TimedOut = p.killedBy == "timeout"
		res.Killed = p.killedBy == "caller"
		if res.TimedOut && p.sched.ok {
			res.SchedKnown, res.RunDelay = true, p.sched.runDelay
			res.CPU = max(res.CPU, p.sched.cpu)
		}
	default:
		// Only someone outside the tree can end our init without a report:
		// the tree can neither see nor signal it.
		status := "no status"
		if ps := p.cmd.ProcessState; ps != nil {
			status = ps.String()
		}
		if p.waitErr != nil && !errors.Is(p.waitErr, exec.ErrWaitDelay) {
			status += " (" + p.waitErr.Error() + ")"
		}
		res.SandboxErr = fmt.Errorf("sandbox init ended without reporting (%s): killed from outside the sandbox", status)
	}
	return res
}

// jobEnv completes the job's environment with PATH, HOME and TMPDIR.
func jobEnv(env []string) []string {
	out := append([]string{}, env...)
	has := func(k string) bool {
		for _, e := range env {
			if strings.HasPrefix(e, k+"=") {
				return true
			}
		}
		return false
	}
	if !has("PATH") {
		out = append(out, "PATH="+DefaultPath)
	}
	if !has("HOME") {
		out = append(out, "HOME="+JobDir)
	}
	if !has("TMPDIR") {
		out = append(out, "TMPDIR=/tmp")
	}
	return out
}

var reservedTargets = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/tmp", JobDir}

func checkBindTarget(t string) error {
	if !filepath.IsAbs(t) || filepath.Clean(t) != t || t == "/" {
		return fmt.Errorf("sandbox: bind target %q must be a clean absolute path", t)
	}
	for _, r := range reservedTargets {
		if t == r || strings.HasPrefix(t, r+"/") {
			return fmt.Errorf("sandbox: bind target %q lies in the sandbox's own %s", t, r)
		}
	}
	return nil
}

var (
	checkOnce sync.Once
	checkErr  error
)

// Check reports, once per process, whether sandboxes can be created here
// (it runs /bin/true in one). A non-nil error wraps ErrUnavailable.
func Check() error {
	checkOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crucible-sandbox-check-*")
		if err != nil {
			checkErr = fmt.Errorf("%w: %v", ErrUnavailable, err)
			return
		}
		defer os.RemoveAll(dir)
		var stderr bytes.Buffer
		res := Run(context.Background(), Spec{Argv: []string{"true"}, Dir: dir, Stderr: &stderr,
			Limits: Limits{AddressSpaceBytes: 256 << 20, CPUSeconds: 5, Processes: 16}, Timeout: time.Minute})
		switch {
		case res.SandboxErr != nil:
			checkErr = res.SandboxErr
			if !errors.Is(checkErr, ErrUnavailable) {
				checkErr = fmt.Errorf("%w: %v", ErrUnavailable, checkErr)
			}
		case !res.Exited0():
			checkErr = fmt.Errorf("%w: true in a sandbox: exit %d signal %v exec %v: %s", ErrUnavailable,
				res.ExitCode, res.Signal, res.ExecErr, strings.TrimSpace(stderr.String()))
		}
	})
	return checkErr
}
