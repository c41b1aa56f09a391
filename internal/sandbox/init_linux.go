//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The init side: this runs in the re-executed binary as pid 1 of the new
// namespaces, as uid 0 of the new user namespace. It builds the mount view,
// starts the job's main process under the limits, reaps every process of
// the tree, reports the main process's status on fd 3 and exits, which
// makes the kernel kill whatever is left in the namespace.

func init() {
	if c, ok := os.LookupEnv(envInit); ok {
		runInit(c)
	}
}

func runInit(blob string) {
	// Setup syscalls, no_new_privs and the fork of the job must all happen on
	// one thread: no_new_privs and ptrace are per thread.
	runtime.LockOSThread()
	_ = os.Unsetenv(envInit)
	syscall.CloseOnExec(3)
	out := os.NewFile(3, "report")
	report := func(r initReport) {
		b, _ := json.Marshal(r)
		_, _ = out.Write(b)
		out.Close()
	}
	fail := func(stage string, err error) {
		report(initReport{Stage: stage, Err: err.Error()})
		os.Exit(2)
	}
	// pid 1 of a namespace gets from inside it only the signals it has a
	// handler for. The Go runtime installs its handler for every signal at
	// start-up, and that handler ends the process on a SIGTERM, SIGINT,
	// SIGHUP, SIGQUIT, SIGABRT or a fault signal sent by another process.
	// Those signals are set back to SIG_DFL here, directly with
	// rt_sigaction (the runtime's signal.Reset/Notify would each cost a
	// round trip between locked threads: about half of a job's start-up):
	// with no handler and no ignore, the kernel drops them when the tree
	// sends them. Default dispositions, unlike ignored ones, are what the
	// job inherits through exec, so it starts with default signal actions.
	// The signals left to the runtime's handler (SIGUSR1, SIGPIPE, SIGURG,
	// SIGXCPU, the real-time signals, ...) do nothing to it when another
	// process sends them (TestCannotKillParent sends every signal).
	if err := resetSignals(); err != nil {
		fail("setup", err)
	}
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&initName[0])), 0, 0, 0)
	var cfg initConfig
	if err := json.Unmarshal([]byte(blob), &cfg); err != nil {
		fail("setup", fmt.Errorf("config: %w", err))
	}
	if err := buildView(cfg); err != nil {
		fail("setup", err)
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		fail("setup", fmt.Errorf("sethostname: %w", err))
	}
	// The job gains no capability at exec, whatever it runs: empty bounding
	// set (the init keeps its own effective set), no_new_privs.
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			fail("setup", fmt.Errorf("dropping capability %d: %w", c, err))
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("setup", fmt.Errorf("no_new_privs: %w", err))
	}
	if cfg.HoldFD > 0 {
		// Spec.Hold: wait for the parent's go (a byte, or EOF when it is
		// gone), then close the fd: the job never inherits it.
		hold := os.NewFile(uintptr(cfg.HoldFD), "hold")
		_, _ = hold.Read(make([]byte, 1))
		hold.Close()
	}
	pid, err := startJob(cfg)
	if err != nil {
		var ee *execError
		if errors.As(err, &ee) {
			fail("exec", err)
		}
		fail("setup", err)
	}
	// Reap everything (orphans are reparented to us) until the main process
	// is gone.
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fail("setup", fmt.Errorf("wait: %w", err))
		}
		if wpid == pid && (ws.Exited() || ws.Signaled()) {
			report(initReport{Stage: "exit", Status: uint32(ws)})
			os.Exit(0)
		}
	}
}

// initFatalSignals are the signals the Go runtime's handler ends the
// process on when another process sends them (runtime's sigtable: the
// _SigKill, _SigThrow and _SigPanic entries).
var initFatalSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL,
	syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGTERM,
	syscall.SIGSTKFLT, syscall.SIGSYS}

// setDefaultAction sets sig's action to SIG_DFL behind the runtime's back.
// A fault in the init itself then ends it like the runtime's handler
// would have (the parent sees no report: a sandbox failure).
func setDefaultAction(sig syscall.Signal) error {
	// struct sigaction of the kernel: handler, flags, restorer, mask; all
	// zero is SIG_DFL with no flags on every architecture.
	var act [4]uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return fmt.Errorf("rt_sigaction(%v, SIG_DFL): %w", sig, e)
	}
	return nil
}

// resetSignals sets to SIG_DFL every signal in initFatalSignals and every
// signal the verifier's environment left ignored (a CI runner may leave
// SIGRTMIN or SIGHUP ignored, which would stay ignored through both execs:
// the job gets the default action instead). For the init a default action
// is as safe as ignoring: the kernel drops it.
func resetSignals() error {
	fatal := map[syscall.Signal]bool{}
	for _, s := range initFatalSignals {
		fatal[s] = true
	}
	for sig := syscall.Signal(1); sig < 65; sig++ {
		if sig == syscall.SIGKILL || sig == syscall.SIGSTOP {
			continue
		}
		if !fatal[sig] {
			var old [4]uint64
			if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
				if e == unix.EINVAL {
					continue // not a signal on this kernel
				}
				return fmt.Errorf("rt_sigaction(%d): %w", sig, e)
			}
			if old[0] != 1 { // not SIG_IGN: leave it to the runtime
				continue
			}
		}
		if err := setDefaultAction(sig); err != nil {
			return err
		}
	}
	return nil
}

// initName is the init's comm, as ps shows it inside and outside.
var initName = []byte("sandbox-init\x00")

type execError struct{ err error }

func (e *execError) Error() string { return e.err.Error() }

// startJob starts the main process as the job's uid with the limits set
// before its first instruction: traced, it stops at its exec, the limits are
// set on it with prlimit(2) and it is let go. Where ptrace is refused, it is
// started through prlimit(1) instead (an extra exec of a small C program).
func startJob(cfg initConfig) (int, error) {
	cwd := JobDir
	if cfg.WorkDir != "" {
		cwd = filepath.Join(JobDir, filepath.Clean("/"+cfg.WorkDir))
	}
	path, err := lookPath(cfg.Argv[0], cfg.Env)
	if err != nil {
		return 0, &execError{err}
	}
	sys := &syscall.SysProcAttr{}
	if cfg.OwnUID {
		// One host uid only: a nested user namespace makes the job
		// unprivileged (InsideUID, no capabilities over our namespace).
		sys.Cloneflags = syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: InsideUID, HostID: 0, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: InsideGID, HostID: 0, Size: 1}}
	} else {
		sys.Credential = &syscall.Credential{Uid: InsideUID, Gid: InsideGID, Groups: []uint32{}}
	}
	files := []uintptr{0, 1, 2}
	for i := 0; i < cfg.ExtraFiles; i++ {
		files = append(files, uintptr(4+i))
	}
	attr := &syscall.ProcAttr{Dir: cwd, Env: cfg.Env, Files: files, Sys: sys}
	if !cfg.ForcePrlimit {
		sys.Ptrace = true
		pid, err := syscall.ForkExec(path, cfg.Argv, attr)
		if err == nil {
			if err := limitStopped(pid, cfg.Limits); err != nil {
				return 0, err
			}
			return pid, nil
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSYS) {
			return 0, &execError{fmt.Errorf("%s: %w", cfg.Argv[0], err)}
		}
		sys.Ptrace = false
	}
	pl, err := lookPath("prlimit", cfg.Env)
	if err != nil {
		return 0, fmt.Errorf("ptrace is refused and prlimit(1) is not in the sandbox: cannot set limits")
	}
	argv := append(prlimitArgs(pl, cfg.Limits), append([]string{path}, cfg.Argv[1:]...)...)
	pid, err := syscall.ForkExec(pl, argv, attr)
	if err != nil {
		return 0, &execError{fmt.Errorf("%s: %w", cfg.Argv[0], err)}
	}
	return pid, nil
}

// limitStopped sets the limits on a tracee stopped at its exec and lets it go.
func limitStopped(pid int, l Limits) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return fmt.Errorf("waiting for the exec stop: %w", err)
		}
		break
	}
	if !ws.Stopped() {
		return fmt.Errorf("job ended before its exec stop (status %v)", ws)
	}
	for _, r := range rlimits(l) {
		lim := r.lim
		if err := unix.Prlimit(pid, r.res, &lim, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return fmt.Errorf("prlimit: %w", err)
		}
	}
	if err := unix.PtraceDetach(pid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("ptrace detach: %w", err)
	}
	return nil
}

type rlimit struct {
	res  int
	name string
	lim  unix.Rlimit
}

func rlimits(l Limits) []rlimit {
	var out []rlimit
	add := func(res int, name string, soft, hard uint64) {
		out = append(out, rlimit{res, name, unix.Rlimit{Cur: soft, Max: hard}})
	}
	if l.AddressSpaceBytes > 0 {
		add(unix.RLIMIT_AS, "as", uint64(l.AddressSpaceBytes), uint64(l.AddressSpaceBytes))
	}
	if l.CPUSeconds > 0 {
		add(unix.RLIMIT_CPU, "cpu", uint64(l.CPUSeconds), uint64(l.CPUSeconds+1))
	}
	if l.FileSizeBytes > 0 {
		add(unix.RLIMIT_FSIZE, "fsize", uint64(l.FileSizeBytes), uint64(l.FileSizeBytes))
	}
	if l.Processes > 0 {
		add(unix.RLIMIT_NPROC, "nproc", uint64(l.Processes), uint64(l.Processes))
	}
	if l.OpenFiles > 0 {
		add(unix.RLIMIT_NOFILE, "nofile", uint64(l.OpenFiles), uint64(l.OpenFiles))
	}
	add(unix.RLIMIT_CORE, "core", 0, 0)
	return out
}

func prlimitArgs(prlimit string, l Limits) []string {
	args := []string{prlimit}
	for _, r := range rlimits(l) {
		args = append(args, "--"+r.name+"="+strconv.FormatUint(r.lim.Cur, 10)+":"+strconv.FormatUint(r.lim.Max, 10))
	}
	return append(args, "--")
}

// lookPath resolves name on env's PATH in the sandbox's view.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := DefaultPath
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			path = p
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w in the sandbox's PATH", name, exec.ErrNotFound)
}
