package kernels

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// A side is one harness process running one library: the reference or the
// candidate, never both. The verifier talks to it over two pipes it owns
// (its stdin: commands, its stdout: replies); see embed/harness.c for the
// protocol.
// Everything the verdict uses comes from that pipe and from what the kernel
// reports about the process (its exit status or signal), never from a file.
type sideProc struct {
	name        string // "reference" | "candidate"
	t           *Task
	proc        procHandle
	res         procResult // set when done is closed
	stopCtx     func() bool
	toChild     *os.File
	fromChild   *bufio.Reader
	fromFile    *os.File
	log         cappedBuffer
	done        chan struct{}
	budget      time.Duration // wall time left for this side
	mu          sync.Mutex
	watchdog    bool // the budget ran out and the watchdog killed it
	allocFailed bool // it reported a failed allocation
	phase       string
	worker      bool     // a worker (not the C harness): it times calls itself and may report an outcome ('E')
	untrusted   bool     // a worker whose process runs the candidate's host code (triton): its reports are believed only before that code ran
	report      *Outcome // the outcome a worker reported ('E')
	hiddenMs    float64  // from a worker: device time still busy after the timed stream, last call
}

const (
	jobMagic2 = 0x324a4f4243555243
	cmdQuit   = 0
	cmdCall   = 1
)

// errSide is a side that died, stopped answering in time, or broke the
// protocol; classify says whose fault and which stage.
var errSide = errors.New("side failed")

// protocolError is a reply the harness would never send: the side's code
// wrote to the verifier's pipe itself.
type protocolError struct{ what string }

func (e protocolError) Error() string { return "protocol violation: " + e.what }

// startSide starts the C harness on lib in dir and waits until it loaded it.
func startSide(ctx context.Context, name, harness, dir, lib string, t *Task, cfg Config, budget time.Duration) (*sideProc, error) {
	var data int64
	for _, a := range t.Args {
		data += a.Bytes
	}
	var hdr bytes.Buffer
	w := func(v any) { binary.Write(&hdr, binary.LittleEndian, v) }
	w(uint64(jobMagic2))
	w(uint32(len(t.Args)))
	w(uint32(0))
	w(uint64(cfg.FlushBytes))
	w(uint64(cfg.MemLimitBytes + 2*data + cfg.FlushBytes))
	w(uint32(max(1, int(cfg.Timeout.Seconds()+0.999))))
	w(uint32(0))
	for _, a := range t.Args {
		w(map[string]uint32{RoleInput: 0, RoleOutput: 1, RoleScalar: 2}[a.Role])
		w(uint32(0))
		w(uint64(a.Bytes))
		w(a.Value)
		w(uint64(PoisonByte(a.DType)))
	}
	start := func(stdin io.Reader, stdout, stderr io.Writer) (procHandle, error) {
		return startConfined(confinedProc{Argv: []string{harnessPath, sandbox.JobDir + "/" + filepath.Base(lib), t.Entry}, Dir: dir,
			Binds:  []sandbox.Bind{{Source: harness, Target: harnessPath}},
			Limits: sandbox.Limits{Processes: 8, FileSizeBytes: 64 << 20, OpenFiles: 64},
			// A backstop only: the verifier's per-side budget kills it first.
			Timeout: 2*budget + 30*time.Second, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
	return launchSide(ctx, name, start, hdr.Bytes(), false, t, budget)
}

// launchSide starts a side with the two pipes as its stdin and stdout,
// sends the job header and waits for the side to have loaded its code. A C
// harness says 'S' (set up, filter installed) before loading; a trusted
// worker instead may answer 'E' with an outcome.
func launchSide(ctx context.Context, name string, start func(stdin io.Reader, stdout, stderr io.Writer) (procHandle, error),
	hdr []byte, worker bool, t *Task, budget time.Duration) (*sideProc, error) {
	return launchSideWith(ctx, &sideProc{name: name, t: t, worker: worker, budget: budget}, start, hdr)
}

// launchSideWith is launchSide for a side whose options are already set.
func launchSideWith(ctx context.Context, s *sideProc, start func(stdin io.Reader, stdout, stderr io.Writer) (procHandle, error), hdr []byte) (*sideProc, error) {
	s.done, s.phase = make(chan struct{}), "start"
	worker := s.worker
	s.log.limit = 32 << 10
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	s.proc, err = start(cmdR, repW, &s.log)
	cmdR.Close()
	repW.Close()
	if err != nil {
		cmdW.Close()
		repR.Close()
		return nil, err
	}
	s.toChild, s.fromFile, s.fromChild = cmdW, repR, bufio.NewReaderSize(repR, 1<<16)
	s.stopCtx = context.AfterFunc(ctx, s.proc.Kill)
	go func() { s.res = s.proc.Wait(); close(s.done) }()
	s.phase = "setup"
	err = s.exchange(func() error {
		if _, err := s.toChild.Write(hdr); err != nil {
			return err
		}
		if !worker || s.untrusted {
			if err := s.expect('S'); err != nil {
				return err
			}
		}
		s.phase = "load" // from here on the side's own code runs (its constructors)
		return s.expect('L')
	})
	return s, err
}

// exchange runs f under the side's wall-clock budget: past it, the
// watchdog kills the side's process group, which unblocks f's pipe I/O.
func (s *sideProc) exchange(f func() error) error {
	start := time.Now()
	timer := time.AfterFunc(max(s.budget, time.Millisecond), func() {
		s.mu.Lock()
		s.watchdog = true
		s.mu.Unlock()
		s.proc.Kill()
	})
	err := f()
	timer.Stop()
	s.budget -= time.Since(start)
	if err != nil {
		return fmt.Errorf("%w: %s during %s: %v", errSide, s.name, s.phase, err)
	}
	return nil
}

// expect reads reply tags until want; 'M' (a failed allocation) may come
// at any time and is noted.
func (s *sideProc) expect(want byte) error {
	for {
		b, err := s.fromChild.ReadByte()
		if err != nil {
			return err
		}
		if b == want {
			return nil
		}
		if b == 'E' && s.worker {
			return s.readReport()
		}
		if b != 'M' {
			return protocolError{fmt.Sprintf("got byte %#x, want %q", b, want)}
		}
		s.mu.Lock()
		s.allocFailed = true
		s.mu.Unlock()
	}
}

// errReported is a trusted worker that reported an outcome instead of
// a result (a compile error, a device fault, a launch failure).
var errReported = errors.New("the worker reported an outcome")

// readReport reads a trusted worker's outcome: a u32 length, then JSON.
func (s *sideProc) readReport() error {
	var n uint32
	if err := binary.Read(s.fromChild, binary.LittleEndian, &n); err != nil {
		return err
	}
	if n > 16<<20 {
		return protocolError{fmt.Sprintf("report of %d bytes", n)}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(s.fromChild, buf); err != nil {
		return err
	}
	var o Outcome
	if err := json.Unmarshal(buf, &o); err != nil {
		return protocolError{"unreadable report: " + err.Error()}
	}
	if !engine.IsKnownStage(o.Stage) || o.Stage == "" || !kernelStages[o.KernelStage] {
		return protocolError{fmt.Sprintf("report with unknown stage %q/%q", o.Stage, o.KernelStage)}
	}
	if s.untrusted && s.name == "candidate" && s.phase != "setup" && engine.IsInfraStage(o.Stage) {
		// Sent after the candidate's code ran in that process: it could
		// have sent it itself. A failure it claims is not the verifier's.
		o = Outcome{Stage: engine.StageSimulate, KernelStage: "runtime",
			Cause: fmt.Sprintf("the candidate's process reported %q after its code ran (not believed): %s", o.Stage, o.Cause)}
	}
	s.report = &o
	return errReported
}

// call runs the kernel once on inputs and returns its outputs and the
// wall time the verifier measured between 'G' and 'D'.
func (s *sideProc) call(inputs [][]byte) ([][]byte, float64, error) {
	outs := make([][]byte, len(s.t.Args))
	var ms float64
	s.phase = "call"
	err := s.exchange(func() error {
		var cmd [4]byte
		binary.LittleEndian.PutUint32(cmd[:], cmdCall)
		if _, err := s.toChild.Write(cmd[:]); err != nil {
			return err
		}
		for i, a := range s.t.Args {
			if a.Role == RoleInput {
				if _, err := s.toChild.Write(inputs[i]); err != nil {
					return err
				}
			}
		}
		if !s.worker {
			if err := s.expect('R'); err != nil {
				return err
			}
			if _, err := s.toChild.Write([]byte{'G'}); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if err := s.expect('D'); err != nil {
			return err
		}
		ms = float64(time.Since(t0).Nanoseconds()) / 1e6
		for i, a := range s.t.Args {
			if a.Role == RoleOutput {
				outs[i] = make([]byte, a.Bytes)
				if _, err := io.ReadFull(s.fromChild, outs[i]); err != nil {
					return err
				}
			}
		}
		if s.worker { // device-timed by the worker: the timed stream's events, then the post-sync wait
			var tm [2]float64
			if err := binary.Read(s.fromChild, binary.LittleEndian, &tm); err != nil {
				return err
			}
			ms, s.hiddenMs = tm[0], tm[1]
		}
		return nil
	})
	return outs, ms, err
}

// quit asks the side to leave and waits for it; a side that does not leave
// at once is killed.
func (s *sideProc) quit() {
	var cmd [4]byte
	binary.LittleEndian.PutUint32(cmd[:], cmdQuit)
	s.toChild.Write(cmd[:])
	s.toChild.Close()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.proc.Kill()
		<-s.done
	}
	s.fromFile.Close()
	s.stopCtx()
}

// kill ends the side and waits for it.
func (s *sideProc) kill() {
	s.proc.Kill()
	<-s.done
	s.toChild.Close()
	s.fromFile.Close()
	s.stopCtx()
}

// exitedCleanly reports whether the side, after quit, exited with status 0.
func (s *sideProc) exitedCleanly() bool {
	<-s.done
	return s.res.SetupErr == nil && s.res.Signal == 0 && s.res.ExitCode == 0
}

// classify turns a failed side into the outcome's stage, from what the
// verifier observed itself: which process failed, its exit status or
// signal, whether the verifier's watchdog killed it. A failure of the
// reference's process is the reference's (unjudged); any failure of the
// candidate's process is the candidate's.
func (s *sideProc) classify(o *Outcome, cause error) {
	if s.report != nil {
		s.kill()
		log := o.Log
		*o = *s.report
		o.Log = strings.TrimSpace(log + "\n" + o.Log + "\n" + s.log.String())
		if s.name == "reference" && !engine.IsInfraStage(o.Stage) {
			o.fail(engine.StageReferenceSelfCheck, o.KernelStage, "reference: "+o.Cause)
		}
		return
	}
	var pe protocolError
	if errors.As(cause, &pe) {
		s.kill()
		o.Log = s.log.String()
		if s.name == "reference" {
			o.fail(engine.StageReferenceSelfCheck, "runtime", "reference broke the harness protocol: "+pe.what)
		} else {
			o.fail(engine.StageSimulate, "runtime", "candidate broke the harness protocol ("+pe.what+") during "+s.phase)
		}
		return
	}
	// The pipe closed: the process is ending. One that closed it and lives
	// on is waited for within its budget, then killed by the watchdog.
	s.exchange(func() error { <-s.done; return nil })
	s.mu.Lock()
	watchdog, allocFailed := s.watchdog, s.allocFailed
	s.mu.Unlock()
	o.Log = s.log.String()
	ref := s.name == "reference"
	failRef := func(kstage, why string) {
		o.fail(engine.StageReferenceSelfCheck, kstage, "reference "+why)
	}
	r := s.res
	switch {
	case watchdog:
		if ref {
			failRef("timeout", fmt.Sprintf("ran past its wall-clock budget during %s", s.phase))
		} else {
			o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("ran past the wall-clock budget during %s", s.phase))
		}
	case r.SetupErr != nil:
		o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("%s process could not be started or confined: %v", s.name, r.SetupErr))
	case r.Killed:
		o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("%s process killed by the verifier's backstop (%v)", s.name, cause))
	case r.Signal == syscall.SIGSYS:
		if ref {
			failRef("exploit", "made a system call the sandbox forbids (killed by seccomp)")
		} else {
			o.exploit(GateForbiddenCall, "made a system call the sandbox forbids (killed by seccomp): process creation, exec, ptrace, signalling another process, opening files, raising limits, sockets or namespaces")
			o.fail(engine.StageExploit, "exploit", "exploit: "+o.exploitSummary())
		}
	case r.Signal == syscall.SIGXCPU || r.Signal == syscall.SIGKILL:
		if ref {
			failRef("timeout", "ran past its CPU-time limit")
		} else {
			o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("CPU-time limit reached (%s) during %s", r.Signal, s.phase))
		}
	case r.Signal != 0:
		switch {
		case ref:
			failRef("runtime", fmt.Sprintf("crashed: %s during %s", r.Signal, s.phase))
		case allocFailed:
			o.fail(engine.StageResource, "resource", fmt.Sprintf("killed by %s after an allocation failed under the memory limit", r.Signal))
		default:
			o.fail(engine.StageSimulate, "runtime", fmt.Sprintf("candidate crashed: %s during %s", r.Signal, s.phase))
		}
	case s.phase == "setup":
		// Before 'S' only the harness ran (reading its job, limiting
		// itself, installing the filter): nothing of the side has run yet.
		if ref {
			failRef("load", "setup failed: "+lastLines(o.Log))
		} else {
			o.fail(engine.StageWorkerCrash, "", s.name+" process setup failed: "+lastLines(o.Log))
		}
	case s.phase == "load":
		if ref {
			failRef("load", fmt.Sprintf("did not load (status %d): %s", r.ExitCode, lastLines(o.Log)))
		} else {
			o.fail(engine.StageElaborate, "load", fmt.Sprintf("candidate did not load (status %d): %s", r.ExitCode, firstLine(lastLines(o.Log), "see log")))
		}
	default:
		switch {
		case ref:
			failRef("runtime", fmt.Sprintf("ended its process with status %d during %s", r.ExitCode, s.phase))
		case allocFailed:
			o.fail(engine.StageResource, "resource", fmt.Sprintf("exited (status %d) after an allocation failed under the memory limit", r.ExitCode))
		default:
			o.fail(engine.StageSimulate, "runtime", fmt.Sprintf("candidate ended its process with status %d during %s", r.ExitCode, s.phase))
		}
	}
}

// driveCalls runs the job's calls on both sides: warm-up calls (judged,
// untimed), then Trials groups of Reps timed calls, the side that goes
// first alternating per group. Every call gets inputs drawn only now, with
// both processes running, from a seed neither has seen. It reports false
// when the run ended early (o holds why).
func driveCalls(ctx context.Context, t *Task, cfg Config, ref, cand *sideProc, o *Outcome) bool {
	rng := NewInputSource()
	j := newCallJudge(t, o)
	sides := [2]*sideProc{ref, cand}
	var hiddenRuns, timed int
	var maxHidden float64
	for trial := -1; trial < cfg.Trials; trial++ { // trial -1: warm-up
		n := cfg.Reps
		if trial < 0 {
			n = cfg.Warmup
		}
		for rep := 0; rep < n; rep++ {
			inputs := t.GenInputs(rng)
			var outs [2][][]byte
			var ms [2]float64
			for k := 0; k < 2; k++ {
				si := k
				if trial&1 == 1 {
					si = 1 - k
				}
				var err error
				if outs[si], ms[si], err = sides[si].call(inputs); err != nil {
					if ctx.Err() != nil {
						o.fail(engine.StageWorkerCrash, "", "verification cancelled: "+ctx.Err().Error())
					} else {
						sides[si].classify(o, err)
					}
					return false
				}
			}
			if trial >= 0 {
				o.RefTimes, o.CandTimes = append(o.RefTimes, ms[0]), append(o.CandTimes, ms[1])
				timed++
				if cand.worker && cand.hiddenMs > 0.05+0.25*ms[1] {
					hiddenRuns++
					maxHidden = max(maxHidden, cand.hiddenMs)
				}
			}
			if !j.add(inputs, outs[0], outs[1]) {
				o.Log = cand.log.String()
				return false
			}
		}
		if trial >= 0 {
			o.Trials = trial + 1
		}
	}
	if cand.worker {
		o.Measurements = append(o.Measurements, engine.FloatM("post_sync_ms_max", maxHidden))
		if hiddenRuns > 0 && 2*hiddenRuns >= timed {
			o.exploit(GateHiddenWork, fmt.Sprintf("device still busy after the timed stream finished in %d of %d runs (up to %.3f ms): work on other streams",
				hiddenRuns, timed, maxHidden))
		}
	}
	return true
}
