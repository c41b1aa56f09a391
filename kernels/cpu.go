package kernels

import (
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

//go:embed embed/harness.c
var harnessSrc string

// cpuBackend runs C candidates: the candidate and the reference each in
// their own harness process (see side.go and embed/harness.c), driven and
// judged by this process.
type cpuBackend struct {
	cfg       Config
	once      sync.Once
	initErr   error
	dir       string
	harness   string
	cc        string // the C compiler's absolute path (it runs inside the sandbox's view of /usr)
	toolchain []engine.Tool
	mu        sync.Mutex
	refs      map[string]*refBuild
	audits    map[string]*auditRun
	jobs      atomic.Int64
}

// refBuild is a reference compiled once per backend. Its shared object is
// kept in this process's memory only: every job writes its own copy into a
// directory no candidate process is given, and removes it once the
// reference's process has loaded it, so no candidate can see or replace
// the reference another job will load.
type refBuild struct {
	once sync.Once
	so   []byte
	log  string
	err  error
}

func newCPUBackend(cfg Config) *cpuBackend {
	return &cpuBackend{cfg: cfg, refs: map[string]*refBuild{}, audits: map[string]*auditRun{}}
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
		if err := sandbox.Check(); err != nil {
			b.initErr = fmt.Errorf("%w: candidates run only sandboxed: %v", ErrBackendUnavailable, err)
			return
		}
		if b.cc, err = filepath.EvalSymlinks(cc); err != nil {
			b.cc = cc
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
		os.Chmod(b.harness, 0o555)
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
// failed allocations are reported.
var candidateFlags = []string{"-O2", "-std=gnu11", "-fPIC", "-shared",
	"-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc"}

// compileOutcome is why a compilation failed, from what this process saw.
type compileOutcome struct {
	log        string
	timedOut   bool
	overMemory bool
}

// compile builds name.c in dir into name.so with the compiler in a
// sandbox whose only files are the system's and dir: an #include or
// .incbin of any other path finds nothing. Memory (per process, cc1
// included), CPU time and wall time are limited.
func (b *cpuBackend) compile(ctx context.Context, dir, name, code string) (string, compileOutcome, error) {
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return "", compileOutcome{}, err
	}
	var buf cappedBuffer
	buf.limit = 32 << 10
	in := func(f string) string { return sandbox.JobDir + "/" + f }
	argv := append(append([]string{b.cc}, candidateFlags...), "-o", in(name+".so"), in(name+".c"), "-lm")
	r := runConfined(ctx, confinedProc{Argv: argv, Dir: dir,
		Limits: sandbox.Limits{AddressSpaceBytes: b.cfg.CompileMemBytes, CPUSeconds: max(1, int(b.cfg.CompileTimeout.Seconds())),
			FileSizeBytes: 256 << 20, Processes: 32, TmpBytes: 256 << 20},
		Timeout: b.cfg.CompileTimeout, Stdout: &buf, Stderr: &buf})
	co := compileOutcome{log: strings.ReplaceAll(buf.String(), sandbox.JobDir+"/", "")}
	switch {
	case r.SetupErr != nil:
		return "", co, fmt.Errorf("%w: the compiler could not be started in its sandbox: %v", errInfra, r.SetupErr)
	case r.ExitCode == 0 && r.Signal == 0:
		return filepath.Join(dir, name+".so"), co, nil
	}
	// Why it failed, from what the kernel reported: the peak resident set
	// of the largest process (cc1), the signal, the backstop timer.
	co.timedOut = r.Killed || r.Signal == syscall.SIGXCPU || r.Signal == syscall.SIGKILL
	co.overMemory = r.MaxRSS >= b.cfg.CompileMemBytes/2
	return "", co, fmt.Errorf("compiler failed (status %d, signal %v)", r.ExitCode, r.Signal)
}

// errInfra marks a failure of the verifier's own machinery.
var errInfra = errors.New("infrastructure")

// reference builds each distinct reference once per backend, in a scratch
// directory of its own that is removed once the object is read.
func (b *cpuBackend) reference(ctx context.Context, t *Task) *refBuild {
	key := sha(t.Reference + "\x00" + t.Entry)
	b.mu.Lock()
	rb, ok := b.refs[key]
	if !ok {
		rb = &refBuild{}
		b.refs[key] = rb
	}
	b.mu.Unlock()
	rb.once.Do(func() {
		dir, err := os.MkdirTemp(b.dir, "refbuild-")
		if err != nil {
			rb.err = err
			return
		}
		defer os.RemoveAll(dir)
		so, co, err := b.compile(ctx, dir, "ref", t.Reference)
		rb.log = co.log
		if err != nil {
			rb.err = err
			return
		}
		rb.so, rb.err = os.ReadFile(so)
	})
	return rb
}

// alwaysForbidden are imports no kernel needs: process creation, program
// loading and raw syscalls. Rejecting them early gives a clear cause; the
// seccomp filter in the harness is what enforces it.
var alwaysForbidden = []string{"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
	"execlp", "execle", "execveat", "fexecve", "system", "popen", "posix_spawn", "posix_spawnp", "dlopen", "dlmopen",
	"dlsym", "dlvsym", "ptrace", "syscall", "kill", "mprotect", "pthread_create", "sigqueue", "process_vm_readv",
	"process_vm_writev"}

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
	rb := b.reference(ctx, t)
	if rb.err != nil {
		o.fail(engine.StageReferenceSelfCheck, "compile", "reference does not compile: "+rb.err.Error())
		o.Log = rb.log
		return o
	}
	audit := b.audit(ctx, t, rb)
	if audit.fail.Stage != "" {
		audit.fail.Toolchain = b.toolchain
		return audit.fail
	}
	o.Strength = audit.strength
	job, err := b.jobDir()
	if err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	defer os.RemoveAll(job)
	candDir := filepath.Join(job, "cand")
	if err := os.Mkdir(candDir, 0o755); err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	candSO, co, err := b.compile(ctx, candDir, "cand", c.Code)
	if err != nil {
		o.Log = co.log
		switch {
		case errors.Is(err, errInfra):
			o.fail(engine.StageWorkerCrash, "", err.Error())
		case ctx.Err() != nil:
			o.fail(engine.StageWorkerCrash, "", "verification cancelled: "+ctx.Err().Error())
		case co.timedOut:
			o.fail(engine.StageTimeout, "compile", "compilation ran past its time limit")
		case co.overMemory:
			o.fail(engine.StageResource, "compile", fmt.Sprintf("the compiler exceeded its %d MiB memory limit", b.cfg.CompileMemBytes>>20))
		default:
			o.fail(engine.StageCompile, "compile", "C compilation failed: "+firstLine(co.log, err.Error()))
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
	run := b.run(ctx, t, job, rb.so, candSO)
	run.Strength = audit.strength
	return run
}

// jobDir makes a fresh directory for one job under the backend's.
func (b *cpuBackend) jobDir() (string, error) {
	dir := filepath.Join(b.dir, fmt.Sprintf("job-%d", b.jobs.Add(1)))
	return dir, os.Mkdir(dir, 0o755)
}

// startReference writes this job's copy of the reference object into its
// own directory, starts the reference's process on it and removes the copy
// once it is loaded.
func (b *cpuBackend) startReference(ctx context.Context, t *Task, job string, so []byte) (*sideProc, error) {
	dir := filepath.Join(job, "ref")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	// World-readable in a directory only the verifier may enter: the
	// harness opens it before dropping its privileges and loads it through
	// that descriptor; no other process can reach it by its path.
	lib := filepath.Join(dir, "ref-"+sha(fmt.Sprint(NewInputSource().Uint64()))[:16]+".so")
	if err := os.WriteFile(lib, so, 0o444); err != nil {
		return nil, err
	}
	defer os.Remove(lib)
	return startSide(ctx, "reference", b.harness, dir, lib, t, b.cfg, b.cfg.Timeout)
}

// run starts the reference's process, then the candidate's, then draws
// fresh inputs for every call and judges each call's outputs here.
func (b *cpuBackend) run(ctx context.Context, t *Task, job string, refSO []byte, candSO string) Outcome {
	o := Outcome{Toolchain: b.toolchain}
	cfg := b.cfg
	start := time.Now()
	defer func() {
		o.Measurements = append(o.Measurements, engine.FloatM("run_wall_s", time.Since(start).Seconds()))
	}()
	ref, err := b.startReference(ctx, t, job, refSO)
	if ref == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the reference's process: "+err.Error())
		return o
	}
	defer ref.kill()
	if err != nil {
		ref.classify(&o, err)
		return o
	}
	cand, err := startSide(ctx, "candidate", b.harness, filepath.Dir(candSO), candSO, t, cfg, cfg.Timeout)
	if cand == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the candidate's process: "+err.Error())
		return o
	}
	defer cand.kill()
	if err != nil {
		cand.classify(&o, err)
		return o
	}
	if !driveCalls(ctx, t, cfg, ref, cand, &o) {
		return o
	}
	ref.quit()
	cand.quit()
	o.Log = cand.log.String()
	if !cand.exitedCleanly() {
		cand.classify(&o, errors.New("did not exit cleanly when told to quit"))
	}
	return o
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
