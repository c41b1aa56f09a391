package kernels

import (
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
)

//go:embed embed/harness.c
var harnessSrc string

const (
	jobMagic = 0x314a4f4243555243
	outMagic = 0x3154554f43555243

	flagThreadLeak   = 1
	flagRepsDiffer   = 2
	flagInputWritten = 4
)

// cpuBackend runs C candidates in a child process (see harness.c).
type cpuBackend struct {
	cfg       Config
	once      sync.Once
	initErr   error
	dir       string
	harness   string
	toolchain []engine.Tool
	mu        sync.Mutex
	refs      map[string]*refBuild
}

type refBuild struct {
	once sync.Once
	so   string
	log  string
	err  error
}

func newCPUBackend(cfg Config) *cpuBackend {
	return &cpuBackend{cfg: cfg, refs: map[string]*refBuild{}}
}

func (b *cpuBackend) Name() string { return BackendCPU }

// Available compiles the harness on first use.
func (b *cpuBackend) Available() error {
	b.once.Do(func() {
		cc, err := exec.LookPath(b.cfg.CC)
		if err != nil {
			b.initErr = fmt.Errorf("%w: C compiler %q not found", ErrBackendUnavailable, b.cfg.CC)
			return
		}
		b.dir, err = os.MkdirTemp(b.cfg.TempDir, "crucible-kernels-cpu-")
		if err != nil {
			b.initErr = fmt.Errorf("%w: scratch dir: %v", ErrBackendUnavailable, err)
			return
		}
		src := filepath.Join(b.dir, "harness.c")
		if err := os.WriteFile(src, []byte(harnessSrc), 0o644); err != nil {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
			return
		}
		b.harness = filepath.Join(b.dir, "harness")
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.CompileTimeout)
		defer cancel()
		if out, err := runCapped(ctx, b.dir, cc, "-O2", "-std=gnu11", "-rdynamic", "-o", b.harness, src, "-ldl"); err != nil {
			b.initErr = fmt.Errorf("%w: building the harness: %v\n%s", ErrBackendUnavailable, err, out)
			return
		}
		ver, _ := runCapped(ctx, b.dir, cc, "-dumpfullversion")
		b.toolchain = []engine.Tool{{Name: filepath.Base(cc), Version: strings.TrimSpace(ver)},
			{Name: "crucible-cpu-harness", Version: sha(harnessSrc)[:12]}}
	})
	return b.initErr
}

func (b *cpuBackend) Close() error {
	if b.dir != "" {
		return os.RemoveAll(b.dir)
	}
	return nil
}

// candidateFlags link the malloc family through the harness's wrappers so
// failed allocations are recorded.
var candidateFlags = []string{"-O2", "-std=gnu11", "-fPIC", "-shared",
	"-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc"}

func (b *cpuBackend) compile(ctx context.Context, dir, name, code string) (string, string, error) {
	src := filepath.Join(dir, name+".c")
	so := filepath.Join(dir, name+".so")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return "", "", err
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.CompileTimeout)
	defer cancel()
	args := append(append([]string{}, candidateFlags...), "-o", so, src, "-lm")
	out, err := runCapped(cctx, dir, b.cfg.CC, args...)
	return so, out, err
}

// reference builds each distinct reference once per backend.
func (b *cpuBackend) reference(ctx context.Context, t *Task) (string, string, error) {
	key := sha(t.Reference + "\x00" + t.Entry)
	b.mu.Lock()
	rb, ok := b.refs[key]
	if !ok {
		rb = &refBuild{}
		b.refs[key] = rb
	}
	b.mu.Unlock()
	rb.once.Do(func() {
		dir := filepath.Join(b.dir, "ref-"+key[:16])
		if rb.err = os.MkdirAll(dir, 0o755); rb.err != nil {
			return
		}
		rb.so, rb.log, rb.err = b.compile(ctx, dir, "ref", t.Reference)
	})
	return rb.so, rb.log, rb.err
}

// alwaysForbidden are imports no kernel needs: process creation, program
// loading and raw syscalls would let a candidate escape the harness.
var alwaysForbidden = []string{"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
	"execlp", "execle", "system", "popen", "posix_spawn", "posix_spawnp", "dlopen", "dlmopen", "dlsym", "dlvsym",
	"ptrace", "syscall", "kill", "mprotect"}

// delegationPrefixes are library entry points that do the task's work for
// the candidate; forbidden unless the task allows delegation.
var delegationPrefixes = []string{"cblas_", "sgemm", "dgemm", "LAPACKE_", "openblas_", "mkl_", "omp_target"}

// staticGates inspects the candidate's undefined dynamic symbols.
func staticGates(so string, t *Task, o *Outcome) error {
	f, err := elf.Open(so)
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return err
	}
	for _, s := range syms {
		for _, bad := range alwaysForbidden {
			if s.Name == bad {
				o.exploit(GateForbiddenCall, "imports "+s.Name)
			}
		}
		if !t.AllowDelegation {
			for _, p := range delegationPrefixes {
				if strings.HasPrefix(s.Name, p) {
					o.exploit(GateDelegation, "imports "+s.Name+" but the task forbids delegation")
				}
			}
		}
	}
	return nil
}

func (b *cpuBackend) Verify(ctx context.Context, t *Task, c engine.Candidate) Outcome {
	o := Outcome{}
	if err := b.Available(); err != nil {
		o.fail(engine.StageToolchainMissing, "", err.Error())
		return o
	}
	o.Toolchain = b.toolchain
	refSO, refLog, err := b.reference(ctx, t)
	if err != nil {
		o.fail(engine.StageReferenceSelfCheck, "compile", "reference does not compile: "+err.Error())
		o.Log = refLog
		return o
	}
	dir, err := os.MkdirTemp(b.dir, "cand-")
	if err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	defer os.RemoveAll(dir)
	candSO, clog, err := b.compile(ctx, dir, "cand", c.Code)
	if err != nil {
		o.Log = clog
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			o.fail(engine.StageTimeout, "compile", "compilation timed out")
		} else {
			o.fail(engine.StageCompile, "compile", "C compilation failed: "+firstLine(clog, err.Error()))
		}
		return o
	}
	if err := staticGates(candSO, t, &o); err != nil {
		o.fail(engine.StageElaborate, "load", "unreadable shared object: "+err.Error())
		return o
	}
	if len(o.Exploits) > 0 {
		o.fail(engine.StageExploit, "exploit", "exploit: "+o.exploitSummary())
		return o
	}
	return b.run(ctx, t, dir, refSO, candSO)
}

// run writes the job, runs the harness and judges its results.
func (b *cpuBackend) run(ctx context.Context, t *Task, dir, refSO, candSO string) Outcome {
	o := Outcome{Toolchain: b.toolchain}
	cfg := b.cfg
	inputs := make([][][]byte, cfg.Trials)
	var job bytes.Buffer
	nonce := rand.Uint64()
	le := binary.LittleEndian
	var data int64
	for _, a := range t.Args {
		data += a.Bytes
	}
	memLimit := uint64(cfg.MemLimitBytes + int64(cfg.Trials+6)*data + cfg.FlushBytes)
	cpuSec := uint32(math.Ceil(cfg.Timeout.Seconds()))
	w := func(v any) { binary.Write(&job, le, v) }
	w(uint64(jobMagic))
	w(nonce)
	w(uint32(cfg.Trials))
	w(uint32(cfg.Warmup))
	w(uint32(cfg.Reps))
	w(uint32(len(t.Args)))
	w(uint64(cfg.FlushBytes))
	w(memLimit)
	w(cpuSec)
	w(uint32(0))
	for _, a := range t.Args {
		role := map[string]uint32{RoleInput: 0, RoleOutput: 1, RoleScalar: 2}[a.Role]
		w(role)
		w(uint32(0))
		w(uint64(a.Bytes))
		w(a.Value)
		w(uint64(PoisonByte(a.DType)))
	}
	for tr := 0; tr < cfg.Trials; tr++ {
		inputs[tr] = t.GenInputs(tr)
		for _, in := range inputs[tr] {
			job.Write(in)
		}
	}
	jobPath, statePath, outPath := filepath.Join(dir, "job.bin"), filepath.Join(dir, "state"), filepath.Join(dir, "out.bin")
	if err := os.WriteFile(jobPath, job.Bytes(), 0o600); err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	if err := os.WriteFile(statePath, []byte("--\x00\x00\x00\x00\x00\x00"), 0o600); err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, b.harness, jobPath, statePath, outPath, refSO, candSO, t.Entry, t.Entry)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "OMP_NUM_THREADS=1"}
	var logBuf cappedBuffer
	logBuf.limit = 64 << 10
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	start := time.Now()
	runErr := runGroup(cmd, 2*time.Second)
	wall := time.Since(start)
	o.Log = logBuf.String()
	o.Measurements = append(o.Measurements, engine.FloatM("run_wall_s", wall.Seconds()))
	st, _ := os.ReadFile(statePath)
	phase, allocFailed := byte('-'), false
	if len(st) >= 2 {
		phase, allocFailed = st[0], st[1] == 'M'
	}
	if ctx.Err() != nil {
		o.fail(engine.StageWorkerCrash, "", "verification cancelled: "+ctx.Err().Error())
		return o
	}
	if rctx.Err() != nil {
		o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("ran past the %s wall-clock limit (phase %q)", cfg.Timeout, phase))
		if phase == 'r' {
			o.fail(engine.StageReferenceSelfCheck, "timeout", "the reference ran past the wall-clock limit")
		}
		return o
	}
	if runErr != nil {
		return classifyExit(runErr, cmd.ProcessState, phase, allocFailed, o)
	}
	if phase != 'd' { // exited 0 without finishing: someone called exit()
		if phase == 'c' {
			o.fail(engine.StageSimulate, "runtime", "candidate ended the process (exit status 0) before the trials finished")
		} else {
			o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("harness ended early in phase %q", phase))
		}
		return o
	}
	trials, flags, refT, candT, err := readOut(outPath, nonce, t, cfg, inputs)
	if err != nil {
		o.fail(engine.StagePayloadCorrupt, "", "harness output unreadable: "+err.Error())
		return o
	}
	o.RefTimes, o.CandTimes = refT, candT
	judgeOutputs(t, trials, &o)
	if flags&flagThreadLeak != 0 {
		o.exploit(GateHiddenWork, "threads still running after the candidate returned")
	}
	if flags&flagRepsDiffer != 0 {
		o.exploit(GateStaleOutput, "later repetitions on identical inputs left outputs unwritten (work skipped)")
	}
	if flags&flagInputWritten != 0 {
		o.Measurements = append(o.Measurements, engine.IntM("input_written", 1))
	}
	if allocFailed {
		o.Measurements = append(o.Measurements, engine.IntM("alloc_failed", 1))
		if o.Stage == engine.StageMismatch {
			o.fail(engine.StageResource, "resource", "an allocation failed under the memory limit; "+o.Cause)
		}
	}
	return o
}

// classifyExit maps an abnormal harness exit to a stage, blaming the side
// that was running (from the state file).
func classifyExit(runErr error, ps *os.ProcessState, phase byte, allocFailed bool, o Outcome) Outcome {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		o.fail(engine.StageWorkerCrash, "", "harness failed: "+runErr.Error())
		return o
	}
	if ws.Exited() {
		switch code := ws.ExitStatus(); {
		case code == 3:
			o.fail(engine.StageElaborate, "load", "candidate did not load: "+firstLine(lastLines(o.Log), "see log"))
		case code == 4:
			o.fail(engine.StageReferenceSelfCheck, "load", "reference did not load: "+firstLine(lastLines(o.Log), "see log"))
		case phase == 'c':
			o.fail(engine.StageSimulate, "runtime", fmt.Sprintf("candidate exited the process with status %d", code))
		case code == 5 || phase == '-':
			o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("harness exited with status %d: %s", code, lastLines(o.Log)))
		default:
			o.fail(engine.StageReferenceSelfCheck, "runtime", fmt.Sprintf("reference exited with status %d", code))
		}
		return o
	}
	sig := ws.Signal()
	if sig == syscall.SIGXCPU || (sig == syscall.SIGKILL && phase != '-') {
		o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("CPU-time limit reached (%s)", sig))
	} else if allocFailed {
		o.fail(engine.StageResource, "resource", fmt.Sprintf("killed by %s after an allocation failed under the memory limit", sig))
	} else {
		o.fail(engine.StageSimulate, "runtime", fmt.Sprintf("candidate crashed: %s", sig))
	}
	if phase == 'r' {
		o.fail(engine.StageReferenceSelfCheck, "runtime", fmt.Sprintf("reference crashed: %s", sig))
	} else if phase == '-' {
		o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("harness crashed outside any kernel: %s", sig))
	}
	return o
}

func readOut(path string, nonce uint64, t *Task, cfg Config, inputs [][][]byte) ([]TrialOutputs, uint32, []float64, []float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	r := bytes.NewReader(raw)
	le := binary.LittleEndian
	var magic, gotNonce uint64
	binary.Read(r, le, &magic)
	binary.Read(r, le, &gotNonce)
	if magic != outMagic || gotNonce != nonce {
		return nil, 0, nil, nil, fmt.Errorf("bad header (magic %x nonce match %v)", magic, gotNonce == nonce)
	}
	trials := make([]TrialOutputs, cfg.Trials)
	var flags uint32
	var refT, candT []float64
	for tr := range trials {
		to := TrialOutputs{Inputs: inputs[tr], RefOut: make([][]byte, len(t.Args)), CandOut: make([][]byte, len(t.Args))}
		for i, a := range t.Args {
			if a.Role != RoleOutput {
				continue
			}
			to.RefOut[i], to.CandOut[i] = make([]byte, a.Bytes), make([]byte, a.Bytes)
			if _, err := r.Read(to.RefOut[i]); err != nil {
				return nil, 0, nil, nil, fmt.Errorf("trial %d: %w", tr, err)
			}
			if _, err := r.Read(to.CandOut[i]); err != nil {
				return nil, 0, nil, nil, fmt.Errorf("trial %d: %w", tr, err)
			}
		}
		rt, ct := make([]float64, cfg.Reps), make([]float64, cfg.Reps)
		var f, pad uint32
		if err := errors.Join(binary.Read(r, le, rt), binary.Read(r, le, ct), binary.Read(r, le, &f), binary.Read(r, le, &pad)); err != nil {
			return nil, 0, nil, nil, fmt.Errorf("trial %d timings: %w", tr, err)
		}
		flags |= f
		refT, candT = append(refT, rt...), append(candT, ct...)
		trials[tr] = to
	}
	return trials, flags, refT, candT, nil
}

// runGroup runs cmd in its own process group: the whole group is killed
// when cmd's context ends (waiting at most waitDelay for its output), and
// again once it exits, so nothing a candidate spawned outlives its run.
func runGroup(cmd *exec.Cmd, waitDelay time.Duration) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}

// runCapped runs a command in its own process group, killing the group when
// ctx ends, and returns its combined output (capped).
func runCapped(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var buf cappedBuffer
	buf.limit = 32 << 10
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	return buf.String(), err
}

// cappedBuffer keeps the first limit bytes written and counts the rest.
type cappedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	limit   int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
			c.dropped += len(p) - room
		} else {
			c.buf.Write(p)
		}
	} else {
		c.dropped += len(p)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return c.buf.String() + fmt.Sprintf("\n[%d bytes dropped]", c.dropped)
	}
	return c.buf.String()
}

func firstLine(s, fallback string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "error") || strings.Contains(l, "harness:") {
			return strings.TrimSpace(l)
		}
	}
	if l := strings.TrimSpace(s); l != "" {
		return strings.SplitN(l, "\n", 2)[0]
	}
	return fallback
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
