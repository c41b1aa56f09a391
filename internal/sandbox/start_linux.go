//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The sandbox's init is this binary itself, re-executed from
// /proc/self/exe with its configuration in one environment variable; a C
// constructor (init_linux.c) recognises it before the Go runtime starts and
// never returns to it.
const envInit = "CRUCIBLE_SANDBOX_INIT"

// initConfig is what the parent tells the init (encodeInitConfig).
type initConfig struct {
	Dir      string
	WorkDir  string
	Binds    []Bind
	Argv     []string
	Env      []string
	Limits   Limits
	Hostname string
	// OwnUID: the job runs in a nested user namespace under the init's own
	// host uid (the verifier is not root); otherwise it runs as InsideUID,
	// mapped to a host uid of its own.
	OwnUID bool
	// ExtraFiles: the init's fds 4.. go to the job as 3..
	ExtraFiles int
	// ForcePrlimit skips the ptrace way of setting limits (tests).
	ForcePrlimit bool
	// HoldFD, when not 0, is the init's fd of Spec.Hold's pipe: it reads
	// one byte (or EOF) from it before starting the job.
	HoldFD int
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
	init    *os.Process // pid 1 of the tree's PID namespace (nil if it never started)
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
	if errNoInit != nil {
		return nil, errNoInit
	}
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
	// abort undoes what Start has taken when it gives up.
	abort := func(err error) (*Process, error) {
		if holdW != nil {
			holdW.Close()
		}
		ids.release()
		return nil, err
	}
	blob := encodeInitConfig(cfg)
	if len(blob) > maxInitConfig {
		return abort(fmt.Errorf("sandbox: the job's argv, environment and binds take %d bytes, more than %d", len(blob), maxInitConfig))
	}
	ctl, ctlChild, err := socketPair()
	if err != nil {
		return abort(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	// The job's environment is cfg.Env, not this.
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"crucible-sandbox-init"},
		Env: []string{envInit + "=" + blob}, Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr,
		ExtraFiles: append([]*os.File{ctlChild}, extra...), SysProcAttr: ids.sysProcAttr(),
		// The tree's streams close when the namespace dies; this only bounds a
		// slow reader.
		WaitDelay: 2 * time.Second}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		ctl.Close()
		ctlChild.Close()
		return abort(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	ctlChild.Close()
	br := bufio.NewReader(ctl)
	pid1, err := handshake(br, ctl, cmd.Process.Pid, ids)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		ctl.Close()
		return abort(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	p := &Process{spec: spec, cmd: cmd, init: pid1, ids: ids, start: start, exited: make(chan struct{}), report: make(chan []byte, 1), hold: holdW}
	go func() {
		b, _ := io.ReadAll(io.LimitReader(br, 1<<16))
		ctl.Close()
		p.report <- b
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// socketPair is the init's control and report channel: ours, and the end
// the init gets as fd 3.
func socketPair() (ours, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-control"), os.NewFile(uintptr(fds[1]), "sandbox-control-init"), nil
}

// handshake answers the init's two messages (see run_init in init_linux.c):
// "U" once it has made its namespaces (we write its id maps), then
// "P<pid>\n", the host pid of pid 1 of its PID namespace (we open a pidfd
// for it: pid 1 cannot be reaped, so its pid cannot be reused, before we
// answer). A report instead of a message means the init failed: it is left
// in br for Wait, and the tree is nil.
func handshake(br *bufio.Reader, ctl *os.File, initPid int, ids jobIDs) (*os.Process, error) {
	if b, err := br.Peek(1); err != nil || b[0] == '{' {
		return nil, nil
	}
	if b, _ := br.ReadByte(); b != 'U' {
		return nil, fmt.Errorf("sandbox init: unexpected message %q", b)
	}
	if err := ids.writeIDMaps(initPid); err != nil {
		return nil, fmt.Errorf("writing the init's id maps: %w", err)
	}
	if _, err := ctl.Write([]byte{'A'}); err != nil {
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	if b, err := br.Peek(1); err != nil || b[0] == '{' {
		return nil, nil
	}
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "P") {
		return nil, fmt.Errorf("sandbox init: unexpected message %q", line)
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(line[1:], "\n"))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("sandbox init: unexpected message %q", line)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil, fmt.Errorf("sandbox init: pid 1 of the tree: %w", err)
	}
	if _, err := ctl.Write([]byte{'A'}); err != nil {
		proc.Release()
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	return proc, nil
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
func (p *Process) Pid() int {
	if p.init == nil {
		return p.cmd.Process.Pid
	}
	return p.init.Pid
}

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
	// Killing pid 1 kills the namespace; the process we started reaps it,
	// and so exits only once the whole tree is gone.
	if p.init != nil {
		_ = p.init.Kill()
		return
	}
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
	if p.init != nil {
		p.init.Release()
	}
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
