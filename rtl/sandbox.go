package rtl

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/internal/sandbox"
)

// capture keeps the head and the tail of a stream and counts the rest, so a
// candidate printing gigabytes costs bounded memory while the verdict line
// (the harness's last word) is still seen. Past killAt bytes it fires onLimit
// once, which kills the job's process group.
type capture struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // ring buffer, tailPos is the next write index once full
	tailPos int
	tailCap int
	headCap int
	total   int64
	killAt  int64
	onLimit func()
	fired   bool
}

func newCapture(keep int, killAt int64, onLimit func()) *capture {
	return &capture{headCap: keep / 2, tailCap: keep - keep/2, killAt: killAt, onLimit: onLimit}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(c.tail) < c.tailCap {
			k := min(c.tailCap-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.tailPos:], p)
		c.tailPos = (c.tailPos + k) % c.tailCap
		p = p[k:]
	}
	fire := c.killAt > 0 && c.total > c.killAt && !c.fired
	if fire {
		c.fired = true
	}
	c.mu.Unlock()
	if fire && c.onLimit != nil {
		c.onLimit()
	}
	return n, nil
}

// Total is the number of bytes written.
func (c *capture) Total() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.total }

// Complete reports whether nothing was dropped.
func (c *capture) Complete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total == int64(len(c.head)+len(c.tail))
}

// Tail returns the kept tail in order (the whole stream when Complete).
func (c *capture) Tail() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total == int64(len(c.head)+len(c.tail)) {
		return append(append([]byte{}, c.head...), c.tail...)
	}
	out := make([]byte, 0, len(c.tail))
	out = append(out, c.tail[c.tailPos:]...)
	return append(out, c.tail[:c.tailPos]...)
}

// String renders head, an omission marker and tail.
func (c *capture) String() string {
	c.mu.Lock()
	total, kept := c.total, int64(len(c.head)+len(c.tail))
	head := append([]byte{}, c.head...)
	c.mu.Unlock()
	if total == kept {
		return string(c.Tail())
	}
	var b bytes.Buffer
	b.Write(head)
	fmt.Fprintf(&b, "\n...[%d bytes omitted]...\n", total-kept)
	b.Write(c.Tail())
	return b.String()
}

// procResult is what one sandboxed process tree did, as the verifier saw
// it: nothing here comes from what the tree printed or wrote.
type procResult struct {
	ExitCode       int            // -1 when killed by a signal or not started
	Signal         syscall.Signal // the terminating signal of the main process, 0 if it exited
	TimedOut       bool           // our wall-clock timer killed the tree
	Starved        bool           // ... while it was waiting for a CPU, not sleeping (see sandbox.Result.Starved)
	RunDelay       time.Duration  // run-queue wait of the tree when the timer fired
	OutputExceeded bool           // a stream passed OutputKillBytes and we killed the tree
	StartErr       error          // the tool could not be started in the sandbox (not found)
	SandboxErr     error          // the sandbox itself failed (could not be created, or was killed from outside)
	Stdout, Stderr *capture
	Wall           time.Duration
	CPU            time.Duration // of the whole tree
	// Disk is the verifier's own statfs of the job's filesystem after the
	// tree ended (never what a tool printed about it).
	Disk diskState
}

// jobEnv is the whole environment of every tool: nothing of the verifier's
// leaks in. HOME and TMPDIR are the job directory (on disk, bounded per
// file by RLIMIT_FSIZE); /tmp is the sandbox's small private tmpfs.
var jobEnv = []string{"PATH=" + sandbox.DefaultPath, "HOME=" + sandbox.JobDir, "TMPDIR=" + sandbox.JobDir, "LC_ALL=C"}

// runLimited runs argv in the job directory dir inside a fresh sandbox
// (internal/sandbox: its own user, PID, mount, network, IPC and UTS
// namespaces; dir is the only writable path; the limits hold for the whole
// tree, compilers included), with a wall-clock timeout and capped output.
// This is the one place the RTL verifier starts a process on candidate
// text. It returns an error only when ctx is cancelled (the run as a whole
// is being abandoned); everything the tree did, including failing to start
// and the sandbox failing, is reported in procResult.
func runLimited(ctx context.Context, dir string, lim Limits, timeout time.Duration,
	argv []string, onStart func(pid int)) (procResult, error) {
	res := procResult{ExitCode: -1}
	var k treeKiller
	var exceeded sync.Once
	onLimit := func() { exceeded.Do(func() { res.OutputExceeded = true; k.kill() }) }
	res.Stdout = newCapture(lim.OutputKeepBytes, lim.OutputKillBytes, onLimit)
	res.Stderr = newCapture(lim.OutputKeepBytes, lim.OutputKillBytes, onLimit)
	p, err := sandbox.Start(sandbox.Spec{Argv: argv, Env: jobEnv, Dir: dir, Limits: sandboxLimits(lim),
		Timeout: timeout, Stdout: res.Stdout, Stderr: res.Stderr, Hold: onStart != nil})
	if err != nil {
		res.SandboxErr = err
		return res, nil
	}
	k.set(p)
	if onStart != nil {
		// Held: the hook acts before any of the job runs, however fast it is.
		onStart(p.Pid())
		p.Release()
	}
	r := p.Wait(ctx)
	if r.Killed && !res.OutputExceeded && ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.ExitCode, res.Signal, res.TimedOut = r.ExitCode, r.Signal, r.TimedOut
	res.Starved, res.RunDelay = r.Starved(), r.RunDelay
	res.StartErr, res.SandboxErr = r.ExecErr, r.SandboxErr
	res.Wall, res.CPU = r.Wall, r.CPU
	res.Disk = checkDisk(dir)
	return res, nil
}

// diskState is what the verifier saw of the job's filesystem.
type diskState struct {
	Full     bool  // fewer than diskFullBytes (or no inodes) left for an unprivileged writer
	Free     int64 // bytes available to an unprivileged writer
	JobBytes int64 // bytes the job directory holds (counted only when Full)
}

// diskFullBytes: a filesystem with less room than this left is full.
const diskFullBytes = 1 << 20

// checkDisk statfs'es the job directory's filesystem and, when it is full,
// measures how much of it the job itself holds: a job that filled the disk
// ran out of a resource it consumed (the candidate's fault), a job that
// found it full did not.
func checkDisk(dir string) diskState {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return diskState{Free: -1}
	}
	d := diskState{Free: int64(st.Bavail) * st.Bsize}
	d.Full = d.Free < diskFullBytes || (st.Files > 0 && st.Ffree == 0)
	if d.Full {
		d.JobBytes = treeBytes(dir)
	}
	return d
}

// treeBytes sums the allocated size of everything under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := e.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// treeKiller lets the output capture kill a tree that may not have been
// started yet when the first bytes arrive.
type treeKiller struct {
	mu      sync.Mutex
	p       *sandbox.Process
	pending bool
}

func (k *treeKiller) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.p != nil {
		k.p.Kill()
	} else {
		k.pending = true
	}
}

func (k *treeKiller) set(p *sandbox.Process) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.p = p
	if k.pending {
		p.Kill()
	}
}
