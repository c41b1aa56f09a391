package kernels

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// confinedProc describes a process that runs or compiles code a task or a
// candidate supplied: the C compiler on candidate or reference source, and
// the harness loading a candidate or reference library. Every such process
// is started by confinedCommand, and only there, so the confinement is
// applied in one place.
type confinedProc struct {
	Path       string
	Args       []string
	Dir        string   // the job directory: working directory and its only writable path
	ReadOnly   []string // paths it must read besides the system's (the harness binary)
	Env        []string
	ExtraFiles []*os.File // become fds 3, 4, ...
	MemBytes   uint64     // RLIMIT_AS applied before it starts (0: none; the harness limits itself)
	CPUSeconds uint64     // RLIMIT_CPU applied before it starts (0: none)
	Stdout     io.Writer
	Stderr     io.Writer
}

// confinedCommand builds the command for p: its own process group, killed
// as a group when ctx ends and killed when the verifier dies, its limits
// applied (through prlimit(1), so they hold from its first instruction).
func confinedCommand(ctx context.Context, p confinedProc) *exec.Cmd {
	path, args := p.Path, p.Args
	if p.MemBytes > 0 || p.CPUSeconds > 0 {
		if pl, err := exec.LookPath("prlimit"); err == nil {
			pre := []string{"--core=0"}
			if p.MemBytes > 0 {
				pre = append(pre, "--as="+strconv.FormatUint(p.MemBytes, 10))
			}
			if p.CPUSeconds > 0 {
				pre = append(pre, "--cpu="+strconv.FormatUint(p.CPUSeconds, 10))
			}
			args = append(append(append(pre, "--"), path), args...)
			path = pl
		}
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = p.Dir
	cmd.Env = p.Env
	cmd.ExtraFiles = p.ExtraFiles
	cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// killGroup ends cmd's process group (after it exited, anything it left).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// sandboxEnv is the whole environment of a confined process.
var sandboxEnv = []string{"PATH=/usr/bin:/bin", "LANG=C", "OMP_NUM_THREADS=1"}

// sandboxMountView reports whether confined processes get a mount view
// limited to their job directory and the system (internal/sandbox). Until
// then the harness's seccomp filter and privilege drop are what confine
// the candidate's process, and the compiler is confined by limits only.
const sandboxMountView = false
