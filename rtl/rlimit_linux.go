package rtl

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Resource limits are applied in one of two ways. The fast way starts the
// child traced: it stops at its exec, before the tool runs a single
// instruction; the limits are set on it with prlimit(2) and it is let go.
// That costs no extra process. Where ptrace is not permitted (a seccomp
// profile, yama), each tool is instead run under prlimit(1), which sets the
// limits on itself and execs the tool: an extra exec (about a millisecond of
// CPU) per process. Both hold from the tool's first instruction and for
// every process it spawns.

var (
	ptraceOnce sync.Once
	ptraceOK   bool
	// useTracedStart picks the method; tests swap it to cover both.
	useTracedStart = ptraceLimitsWork
)

// ptraceLimitsWork probes once whether the traced start works here.
func ptraceLimitsWork() bool {
	ptraceOnce.Do(func() {
		path, err := exec.LookPath("true")
		if err != nil {
			return
		}
		cmd := exec.Command(path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := startTracedWithLimits(cmd, DefaultConfig().Limits); err != nil {
			return
		}
		ptraceOK = cmd.Wait() == nil
	})
	return ptraceOK
}

func rlimitsOf(l Limits) []struct {
	res int
	lim unix.Rlimit
} {
	as, fsize := uint64(l.AddressSpaceBytes), uint64(l.FileSizeBytes)
	return []struct {
		res int
		lim unix.Rlimit
	}{
		{unix.RLIMIT_AS, unix.Rlimit{Cur: as, Max: as}},
		{unix.RLIMIT_CPU, unix.Rlimit{Cur: uint64(l.CPUSeconds), Max: uint64(l.CPUSeconds + 1)}},
		{unix.RLIMIT_FSIZE, unix.Rlimit{Cur: fsize, Max: fsize}},
		{unix.RLIMIT_NPROC, unix.Rlimit{Cur: uint64(l.Processes), Max: uint64(l.Processes)}},
		{unix.RLIMIT_CORE, unix.Rlimit{}},
	}
}

// startTracedWithLimits starts cmd (whose SysProcAttr must be set) stopped
// at its exec, applies the limits and resumes it. On error the child, if
// any, has been killed; the caller still Waits for it when cmd.Process is set.
func startTracedWithLimits(cmd *exec.Cmd, l Limits) error {
	// ptrace requests must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
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
		// Reaped already: nothing left to limit or to wait for.
		cmd.Process = nil
		return fmt.Errorf("process ended before its exec stop (status %v)", ws)
	}
	for _, r := range rlimitsOf(l) {
		lim := r.lim
		if err := unix.Prlimit(pid, r.res, &lim, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			_ = unix.PtraceDetach(pid)
			return fmt.Errorf("prlimit: %w", err)
		}
	}
	if err := unix.PtraceDetach(pid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("ptrace detach: %w", err)
	}
	return nil
}

// LimitMethod says how resource limits are applied to simulator processes
// on this machine: "ptrace" (set on the stopped child at its exec),
// "prlimit" (prlimit(1) wraps each tool) or "none" (neither works: every
// verdict is unjudged, toolchain_missing). For `crucible doctor`.
func LimitMethod() string {
	if ptraceLimitsWork() {
		return "ptrace"
	}
	if probeTool("prlimit").Err == "" {
		return "prlimit"
	}
	return "none"
}
