package kernels

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/internal/sandbox"
)

// confinedProc describes a process that runs or compiles code a task or a
// candidate supplied: the C compiler on candidate or reference source, and
// the harness loading a candidate or reference library. Every such process
// is started by startConfined, and only there: in a sandbox of its own
// (internal/sandbox: fresh user, PID, mount, network and IPC namespaces, an
// unprivileged uid, the job directory at /job as the only writable path,
// the system directories read-only, limits set before its first
// instruction and inherited by everything it starts, the whole tree killed
// with it).
type confinedProc struct {
	Argv    []string       // paths as the sandbox sees them (/job/..., bind targets)
	Dir     string         // host job directory, seen as /job
	Binds   []sandbox.Bind // extra read-only paths (the harness binary)
	Limits  sandbox.Limits // per process; the harness lowers its own further
	Timeout time.Duration  // wall clock of the whole tree (a backstop: callers keep their own)
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
}

// procResult is what the verifier observed of a process it started.
type procResult struct {
	ExitCode   int // -1 when it did not exit on its own
	Signal     syscall.Signal
	Killed     bool  // the verifier (or its backstop timer) killed it
	SetupErr   error // the process could not be started or confined: never the candidate's doing
	MaxRSS     int64 // peak resident set of its largest process, bytes
	CPUSeconds float64
}

// procHandle is a started process: confined (sandbox) or, for the GPU
// workers, a plain child of this binary.
type procHandle interface {
	Kill()
	Wait() procResult
}

// startConfined starts p in a sandbox of its own.
func startConfined(p confinedProc) (procHandle, error) {
	sp, err := sandbox.Start(sandbox.Spec{Argv: p.Argv, Env: sandboxEnv, Dir: p.Dir, Binds: p.Binds, Limits: p.Limits,
		Timeout: p.Timeout, Stdin: p.Stdin, Stdout: p.Stdout, Stderr: p.Stderr})
	if err != nil {
		return nil, err
	}
	return &sandboxed{p: sp}, nil
}

// runConfined runs p to completion (ctx cancelled: killed).
func runConfined(ctx context.Context, p confinedProc) procResult {
	h, err := startConfined(p)
	if err != nil {
		return procResult{ExitCode: -1, SetupErr: err}
	}
	stop := context.AfterFunc(ctx, h.Kill)
	defer stop()
	return h.Wait()
}

type sandboxed struct{ p *sandbox.Process }

func (s *sandboxed) Kill() { s.p.Kill() }

func (s *sandboxed) Wait() procResult {
	r := s.p.Wait(context.Background())
	out := procResult{ExitCode: r.ExitCode, Signal: r.Signal, Killed: r.Killed || r.TimedOut, MaxRSS: r.MaxRSS,
		CPUSeconds: r.CPU.Seconds()}
	switch {
	case r.SandboxErr != nil:
		out.SetupErr = r.SandboxErr
	case r.ExecErr != nil:
		out.SetupErr = r.ExecErr
	}
	return out
}

// plainProc is a child of this binary in its own process group, killed as
// a group (GPU workers: trusted Go code that needs the device nodes).
type plainProc struct{ cmd *exec.Cmd }

func startPlain(cmd *exec.Cmd) (procHandle, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &plainProc{cmd: cmd}, nil
}

func (p *plainProc) Kill() { syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

func (p *plainProc) Wait() procResult {
	err := p.cmd.Wait()
	p.Kill() // anything it left in its group
	ps := p.cmd.ProcessState
	if ps == nil {
		return procResult{ExitCode: -1, SetupErr: err}
	}
	out := procResult{ExitCode: -1, CPUSeconds: (ps.UserTime() + ps.SystemTime()).Seconds()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			out.Signal = ws.Signal()
		} else {
			out.ExitCode = ws.ExitStatus()
		}
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		out.MaxRSS = ru.Maxrss * 1024
	}
	return out
}

// sandboxEnv is the whole environment of a confined process.
var sandboxEnv = []string{"PATH=/usr/bin:/bin", "LANG=C", "OMP_NUM_THREADS=1"}

// harnessPath is where the harness binary appears inside a side's sandbox.
const harnessPath = "/crucible/harness"

// startGPUWorker starts a GPU worker (it needs the device nodes, which the
// sandbox's view lacks) in new user, PID, network and IPC namespaces: it
// cannot see, signal or trace the verifier or another job, has no network,
// and everything it starts dies with it. Its uid is the verifier's own,
// mapped into the namespace, and there is no mount view: it sees the host's
// files with that uid's rights (see doc.go, residual risks).
// CRUCIBLE_GPU_WORKER_NAMESPACES=0 turns the namespaces off, for a driver
// that refuses them.
func startGPUWorker(cmd *exec.Cmd) (procHandle, error) {
	if os.Getenv("CRUCIBLE_GPU_WORKER_NAMESPACES") == "0" {
		return startPlain(cmd)
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		// Take the mapped ids: until then the child holds the verifier's
		// credentials unmapped.
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &plainProc{cmd: cmd}, nil
}
