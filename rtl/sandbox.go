package rtl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// procResult is what one sandboxed process did.
type procResult struct {
	ExitCode       int            // -1 when killed by a signal or not started
	Signal         syscall.Signal // the terminating signal, 0 if exited
	TimedOut       bool           // our wall-clock timer killed it
	OutputExceeded bool           // a stream passed OutputKillBytes and we killed it
	StartErr       error          // the process could not be started
	Stdout, Stderr *capture
	Wall           time.Duration
	CPU            time.Duration
}

// Killed reports whether the process died of a signal that we did not send.
func (r procResult) killedByOutsider() bool {
	if r.TimedOut || r.OutputExceeded || r.Signal == 0 {
		return false
	}
	switch r.Signal {
	case syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// prlimitArgs renders the resource limits as a prlimit(1) prefix.
func prlimitArgs(prlimit string, l Limits) []string {
	return []string{prlimit,
		"--as=" + strconv.FormatInt(l.AddressSpaceBytes, 10),
		"--cpu=" + strconv.Itoa(l.CPUSeconds) + ":" + strconv.Itoa(l.CPUSeconds+1),
		"--fsize=" + strconv.FormatInt(l.FileSizeBytes, 10),
		"--nproc=" + strconv.Itoa(l.Processes),
		"--core=0",
		"--"}
}

// runLimited runs argv in dir under the resource limits (see
// rlimit_linux.go) in its own process group, with a
// wall-clock timeout and capped output. It returns an error only when ctx is
// cancelled (the run as a whole is being abandoned); everything the process
// did, including failing to start, is reported in procResult.
func runLimited(ctx context.Context, dir, prlimit string, lim Limits, timeout time.Duration,
	argv []string, onStart func(pid int)) (procResult, error) {
	traced := useTracedStart()
	full := argv
	if !traced {
		full = append(prlimitArgs(prlimit, lim), argv...)
	} else if p, err := exec.LookPath(argv[0]); err == nil {
		full = append([]string{p}, argv[1:]...)
	} else if !strings.Contains(argv[0], "/") {
		return procResult{ExitCode: -1, StartErr: err, Stdout: newCapture(1024, 0, nil), Stderr: newCapture(1024, 0, nil)}, nil
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	res := procResult{ExitCode: -1}
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			if cmd.Process != nil {
				// The negative pid addresses the whole process group, so
				// iverilog's ivlpp/ivl children and anything they spawn die too.
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		})
	}
	var exceeded sync.Once
	onLimit := func() { exceeded.Do(func() { res.OutputExceeded = true; kill() }) }
	res.Stdout = newCapture(lim.OutputKeepBytes, lim.OutputKillBytes, onLimit)
	res.Stderr = newCapture(lim.OutputKeepBytes, lim.OutputKillBytes, onLimit)
	cmd.Stdout, cmd.Stderr = res.Stdout, res.Stderr
	// Pipes are drained by goroutines; if a stray grandchild kept them open
	// after the group kill, don't wait forever.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	var startErr error
	if traced {
		startErr = startTracedWithLimits(cmd, lim)
	} else {
		startErr = cmd.Start()
	}
	if startErr != nil {
		res.StartErr = startErr
		if cmd.Process != nil {
			_ = cmd.Wait()
		}
		return res, nil
	}
	if onStart != nil {
		onStart(cmd.Process.Pid)
	}
	done := make(chan error, 1)
	go func() {
		// Wait for the leader without reaping it: while it is a zombie its
		// pid (and so the process-group id) cannot be reused, so killing the
		// group can only reach processes this job started. Then reap.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		done <- cmd.Wait()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		res.TimedOut = true
		kill()
		waitErr = <-done
	case <-ctx.Done():
		kill()
		<-done
		return res, ctx.Err()
	}
	res.Wall = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				res.Signal = ws.Signal()
			} else {
				res.ExitCode = ws.ExitStatus()
			}
		}
	} else if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		res.StartErr = waitErr
	}
	return res, nil
}
