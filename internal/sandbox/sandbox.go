package sandbox

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// JobDir is where Spec.Dir appears inside the sandbox; it is the working
// directory and HOME of the job.
const JobDir = "/job"

// InsideUID and InsideGID are the job's uid and gid inside its user
// namespace (unprivileged: no capabilities, no_new_privs).
const (
	InsideUID = 1000
	InsideGID = 1000
)

// DefaultPath is the PATH of a job whose Spec.Env sets none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// ErrUnavailable: the kernel refused to create the namespaces (or the
// sandbox could not be set up at all) on this machine. Callers must not fall
// back to running the job unsandboxed; they report it as an infrastructure
// failure (unjudged).
var ErrUnavailable = errors.New("sandbox: cannot create an isolated process tree on this machine")

// Limits are set on the job's first process before it runs its first
// instruction and so hold for every process of the tree. Zero means the
// limit is not set, except CoreBytes which is always 0.
type Limits struct {
	AddressSpaceBytes int64 // RLIMIT_AS per process (compilers included)
	CPUSeconds        int   // RLIMIT_CPU soft limit per process; hard = soft+1 (SIGKILL)
	FileSizeBytes     int64 // RLIMIT_FSIZE: largest file a process may write
	Processes         int   // RLIMIT_NPROC: processes of the job's uid (per job when the verifier is root)
	OpenFiles         int   // RLIMIT_NOFILE
	// TmpBytes sizes the private tmpfs at /tmp (and TMPDIR); 0 = no /tmp.
	TmpBytes int64
}

// Bind exposes one extra host path inside the sandbox. Target must be an
// absolute path outside the system directories (/usr, /bin, /lib*, /etc,
// /dev, /proc, /tmp, /job), e.g. "/ref". Read-only unless Writable.
type Bind struct {
	Source   string
	Target   string
	Writable bool
}

// Spec describes one sandboxed process tree.
type Spec struct {
	// Argv is the program and its arguments. Argv[0] without a slash is
	// looked up on the PATH of Env inside the sandbox's view.
	Argv []string
	// Env is the whole environment of the job (nothing is inherited). When
	// it sets no PATH, DefaultPath is used; HOME and TMPDIR default to
	// JobDir and /tmp.
	Env []string
	// Dir is the host job directory, bound read-write at JobDir. Run makes
	// it and everything in it owned by the job's uid.
	Dir string
	// WorkDir is the working directory inside, relative to JobDir ("" = JobDir).
	WorkDir string
	Binds   []Bind
	Limits  Limits
	// Timeout is the wall-clock limit of the whole tree (0 = none). When it
	// fires the tree is killed and Result says whether it was starved of
	// CPU or blocked.
	Timeout time.Duration
	// Stdin (nil = /dev/null), Stdout and Stderr (nil = discarded) are the
	// job's standard streams. They are the only channels out of the box
	// besides the job directory.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ExtraFiles are open files the job's main process gets as fds 3, 4, ...
	// (a pipe or a memfd for results that must not go through the job
	// directory). The caller keeps its own copies.
	ExtraFiles []*os.File
	// Hold makes the init wait, with the namespaces and the view built,
	// until Process.Release before it starts the job: a test can act on a
	// running sandbox (kill it, read its state) before any of the job runs,
	// so what it tests never depends on how fast the job is.
	Hold bool
}

// Result is what the verifier observed of one tree, never what the tree
// said about itself.
type Result struct {
	// ExitCode of the job's main process; -1 when it died of a signal, was
	// killed by us, or never started.
	ExitCode int
	// Signal that ended the main process (0 if it exited). When our timer or
	// Kill ended the tree this is SIGKILL.
	Signal syscall.Signal
	// TimedOut: our wall-clock timer (Spec.Timeout) killed the tree.
	TimedOut bool
	// Killed: the caller's Kill or a cancelled context killed the tree.
	Killed bool
	// SchedKnown: run-queue statistics were read when the timer fired.
	SchedKnown bool
	// RunDelay is the time the tree's live tasks had spent waiting for a CPU
	// when the timer fired (schedstat).
	RunDelay time.Duration
	// CPU is the user+system time of the whole tree: every process is
	// reaped by our init, so its rusage covers them all; when our timer
	// killed the tree, at least what schedstat showed at that moment.
	CPU  time.Duration
	Wall time.Duration
	// MaxRSS is the peak resident set of the tree's largest process, in
	// bytes (the init's rusage, which covers every process it reaped).
	MaxRSS int64
	// ExecErr: the job's program could not be started (not found in the
	// sandbox's view, not executable). The job's fault or a missing tool,
	// never something it did while running.
	ExecErr error
	// SandboxErr: the sandbox failed (setup, or our init was killed by
	// someone other than us): an infrastructure failure. A process inside
	// the tree cannot cause it: it cannot see, signal or trace the init.
	SandboxErr error
}

// Starved reports whether a wall-clock timeout hit a tree that was waiting
// for a CPU because of other load, rather than sleeping or competing with
// itself:
//
//   - more of the wall time it did not spend on a CPU went to the run queue
//     than to sleeping (a tree blocked on a read — of its own stdout, a
//     FIFO, a lock — is not starved: its timeout is its own doing), and
//   - it had about one runnable task at a time (CPU + run delay at most 1.5×
//     the wall time): a tree that forks spinning children and so makes its
//     own processes wait for each other starved itself.
func (r Result) Starved() bool {
	if !r.TimedOut || !r.SchedKnown {
		return false
	}
	offCPU := r.Wall - r.CPU
	return offCPU > 0 && 2*r.RunDelay > offCPU && 2*(r.CPU+r.RunDelay) <= 3*r.Wall
}

// Exited0 reports whether the main process ran and exited with code 0.
func (r Result) Exited0() bool {
	return r.ExecErr == nil && r.SandboxErr == nil && !r.TimedOut && !r.Killed && r.Signal == 0 && r.ExitCode == 0
}
