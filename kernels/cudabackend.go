package kernels

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/crucible-data/crucible/cuda"
	"github.com/crucible-data/crucible/engine"
)

// cudaBackend runs CUDA C++ candidates. Each candidate is judged in a
// fresh child process (this same binary re-executed as a worker, see
// worker.go) pinned to the leased GPU: a sticky CUDA error such as an
// illegal address poisons every context of a process for good, and a hung
// kernel can only be stopped by ending its process, so isolation per
// candidate is what lets the pool survive them. Inside the worker NVRTC
// compiles for the GPU's arch and the device's owner goroutine launches
// reference and candidate interleaved on one timed stream.
type cudaBackend struct {
	cfg       Config
	pool      *gpuPool
	once      sync.Once
	initErr   error
	mgr       *cuda.Manager
	exe       string
	toolchain []engine.Tool
}

func newCUDABackend(cfg Config, pool *gpuPool) *cudaBackend {
	return &cudaBackend{cfg: cfg, pool: pool}
}

func (b *cudaBackend) Name() string { return BackendCUDA }

// Available loads the driver and NVRTC (without creating a context) and
// builds the device manager (NVML-backed where NVML works).
func (b *cudaBackend) Available() error {
	b.once.Do(func() {
		n, err := cuda.DeviceCount()
		if err != nil {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
			return
		}
		if n == 0 {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, cuda.ErrNoDevice)
			return
		}
		nv, err := cuda.NVRTCVersion()
		if err != nil {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
			return
		}
		if b.exe, err = os.Executable(); err != nil {
			b.initErr = fmt.Errorf("%w: cannot find this executable to start workers: %v", ErrBackendUnavailable, err)
			return
		}
		drv, _ := cuda.DriverVersion()
		b.toolchain = []engine.Tool{{Name: "cuda-driver-api", Version: fmt.Sprint(drv)}, {Name: "nvrtc", Version: nv}}
		mgr, tools, err := b.pool.get()
		if err != nil {
			b.initErr = err
			return
		}
		b.mgr, b.toolchain = mgr, append(b.toolchain, tools...)
	})
	return b.initErr
}

func (b *cudaBackend) Close() error { return nil }

func (b *cudaBackend) Verify(ctx context.Context, t *Task, c engine.Candidate) Outcome {
	o := Outcome{}
	if err := b.Available(); err != nil {
		o.fail(engine.StageToolchainMissing, "", "no-device: "+err.Error())
		return o
	}
	lease, err := b.mgr.Acquire(ctx)
	if err != nil {
		o.fail(engine.StageDeviceFault, "", "no GPU: "+err.Error())
		return o
	}
	infra := false
	defer func() { lease.Release(infra) }()
	info := lease.Info()
	o = runWorker(ctx, b.exe, workerCUDA, lease.Index(), b.cfg, t, c, b.cfg.Timeout+30*time.Second)
	o.Toolchain = append(append([]engine.Tool{}, b.toolchain...), o.Toolchain...)
	if info.UUID != "" {
		o.Toolchain = append(o.Toolchain, engine.Tool{Name: "gpu-nvml", Version: fmt.Sprintf("%s %s, SM %d/%d MHz, mem %d MHz at lease",
			info.Name, info.UUID, info.SMClockMHz, info.MaxSMClockMHz, info.MemClockMHz)})
	}
	if engine.IsInfraStage(o.Stage) && o.Stage != engine.StageReferenceSelfCheck {
		infra = true
	}
	return o
}

// verifyCUDAInProcess is the worker side: it owns GPU 0 of its process
// (CUDA_VISIBLE_DEVICES selects the leased one).
func verifyCUDAInProcess(ctx context.Context, cfg Config, t *Task, c engine.Candidate) Outcome {
	o := Outcome{}
	dev, err := cuda.OpenDevice(0)
	if err != nil {
		o.fail(engine.StageDeviceFault, "", "opening the GPU: "+err.Error())
		return o
	}
	var run *gpuRun
	defer func() {
		if run == nil || !run.needReset {
			dev.Close()
		}
	}()
	p := dev.Props
	o.Toolchain = []engine.Tool{
		{Name: "gpu", Version: fmt.Sprintf("%s %s (%d SMs, L2 %d KiB)", p.Name, p.Arch(), p.Multiprocessors, p.L2Bytes>>10)},
		{Name: "gpu-clocks", Version: fmt.Sprintf("max SM %d MHz, mem %d MHz", p.ClockKHz/1000, p.MemClockKHz/1000)}}

	refPlan, err := ParseLaunchPlan(t.Reference, t.Entry)
	if err != nil {
		o.fail(engine.StageReferenceSelfCheck, "compile", "reference launch plan: "+err.Error())
		return o
	}
	ref, err := cuda.Compile(t.Reference, "reference.cu", p.Arch(), nil)
	if err != nil {
		o.Log = ref.Log
		o.fail(engine.StageReferenceSelfCheck, "compile", "reference does not compile: "+err.Error())
		return o
	}
	candPlan, err := ParseLaunchPlan(c.Code, t.Entry)
	if err != nil {
		o.fail(engine.StageCompile, "compile", "launch plan: "+err.Error())
		return o
	}
	res, err := cuda.Compile(c.Code, "candidate.cu", p.Arch(), nil)
	o.Log = res.Log
	if err != nil {
		o.fail(engine.StageCompile, "compile", "NVRTC: "+firstLine(res.Log, err.Error()))
		return o
	}
	for _, l := range candPlan {
		if int(l.Cfg.SharedBytes) > p.MaxSharedOptin {
			o.fail(engine.StageResource, "launch", fmt.Sprintf("kernel %s asks for %d bytes of dynamic shared memory; the device allows %d per block",
				l.Kernel, l.Cfg.SharedBytes, p.MaxSharedOptin))
			return o
		}
		if l.Stream > 0 {
			o.Measurements = append(o.Measurements, engine.IntM("side_stream_launches", 1))
		}
	}
	run = &gpuRun{cfg: cfg, task: t, refImg: ref.Image, candImg: res.Image, refPlan: refPlan, candPlan: candPlan,
		deadline: time.Now().Add(cfg.Timeout)}
	if err := dev.Do(ctx, func(cx *cuda.Ctx) error { run.exec(cx, &o); return nil }); err != nil {
		o.fail(engine.StageWorkerCrash, "", err.Error())
	}
	return o
}

// gpuRun is one candidate's device work; exec runs on the device goroutine.
type gpuRun struct {
	cfg               Config
	task              *Task
	refImg, candImg   []byte
	refPlan, candPlan []Launch
	deadline          time.Time
	needReset         bool // the context is unusable (sticky error, hung kernel): skip tear-down
}

type side struct {
	name  string
	mod   *cuda.Module
	fns   []cuda.Function
	plan  []Launch
	bufs  []cuda.DevicePtr
	first [][]byte // outputs after the first timed repetition
	times []float64
}

func (r *gpuRun) remaining() time.Duration {
	d := time.Until(r.deadline)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// classify turns a device error into the outcome's stage. It returns false
// when err is nil.
func (r *gpuRun) classify(o *Outcome, err error, sideName, during string) bool {
	if err == nil {
		return false
	}
	var ce *cuda.Error
	switch {
	case errors.Is(err, cuda.ErrTimeout):
		r.needReset = true
		if sideName == "reference" {
			o.fail(engine.StageReferenceSelfCheck, "timeout", "reference ran past the time limit during "+during)
		} else {
			o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("ran past the %s limit during %s", r.cfg.Timeout, during))
		}
	case errors.As(err, &ce) && ce.Sticky():
		r.needReset = true
		if sideName == "reference" {
			o.fail(engine.StageReferenceSelfCheck, "runtime", "reference faulted: "+err.Error())
		} else {
			o.fail(engine.StageSimulate, "runtime", during+": "+err.Error())
		}
	case errors.As(err, &ce) && sideName == "candidate" && during == "launch":
		stage := engine.StageSimulate
		if ce.Code == cuda.CodeLaunchOutOfResource || ce.Code == cuda.CodeInvalidValue {
			stage = engine.StageResource // too many threads/registers/shared memory for the device
		}
		o.fail(stage, "launch", "launch failed: "+err.Error())
	case errors.As(err, &ce) && ce.Code == cuda.CodeOutOfMemory:
		o.fail(engine.StageResource, "launch", during+": "+err.Error())
	default:
		o.fail(engine.StageDeviceFault, "", during+": "+err.Error())
	}
	return true
}

func (r *gpuRun) exec(cx *cuda.Ctx, o *Outcome) {
	t := r.task
	ref := &side{name: "reference", plan: r.refPlan}
	cand := &side{name: "candidate", plan: r.candPlan}
	var streams [4]cuda.Stream
	var start, end cuda.Event
	var flush cuda.DevicePtr
	defer func() {
		if r.needReset {
			return // the context is poisoned or a kernel still runs: the worker process exits instead
		}
		for _, s := range []*side{ref, cand} {
			for _, p := range s.bufs {
				if p != 0 {
					cx.Free(p)
				}
			}
			cx.Unload(s.mod)
		}
		if flush != 0 {
			cx.Free(flush)
		}
		for _, s := range streams {
			cx.DestroyStream(s)
		}
		cx.DestroyEvent(start)
		cx.DestroyEvent(end)
	}()
	for _, s := range []*side{ref, cand} {
		img := r.refImg
		if s == cand {
			img = r.candImg
		}
		m, err := cx.LoadModule(img)
		if err != nil {
			if s == ref {
				o.fail(engine.StageReferenceSelfCheck, "load", err.Error())
			} else {
				o.fail(engine.StageElaborate, "load", "module load: "+err.Error())
			}
			return
		}
		s.mod = m
		for _, l := range s.plan {
			f, err := cx.Function(m, l.Kernel)
			if err != nil {
				if s == ref {
					o.fail(engine.StageReferenceSelfCheck, "load", err.Error())
				} else {
					o.fail(engine.StageElaborate, "load", fmt.Sprintf("kernel %q not found (declare it extern \"C\"): %v", l.Kernel, err))
				}
				return
			}
			if l.Cfg.SharedBytes > 48<<10 {
				if err := cx.SetFuncAttr(f, cuda.FuncMaxDynamicShared, int(l.Cfg.SharedBytes)); err != nil {
					o.fail(engine.StageResource, "launch", "opting in to dynamic shared memory: "+err.Error())
					return
				}
			}
			s.fns = append(s.fns, f)
		}
		for _, a := range t.Args {
			var p cuda.DevicePtr
			if a.Role != RoleScalar {
				var err error
				if p, err = cx.Alloc(int(a.Bytes)); err != nil {
					r.classify(o, err, "setup", "allocating "+a.Name)
					return
				}
			}
			s.bufs = append(s.bufs, p)
		}
		s.first = make([][]byte, len(t.Args))
	}
	var err error
	for i := range streams {
		if streams[i], err = cx.NewStream(true); err != nil {
			r.classify(o, err, "setup", "stream creation")
			return
		}
	}
	if start, err = cx.NewEvent(); err == nil {
		end, err = cx.NewEvent()
	}
	if err != nil {
		r.classify(o, err, "setup", "event creation")
		return
	}
	flushBytes := int(r.cfg.FlushBytes)
	if l2 := 2 * cx.Device().Props.L2Bytes; flushBytes < l2 {
		flushBytes = l2
	}
	if flush, err = cx.Alloc(flushBytes); err != nil {
		r.classify(o, err, "setup", "allocating the L2 flush buffer")
		return
	}

	// launch runs one side once: poison its outputs, flush L2, then the
	// plan between two events on the timed stream; waits for the end event;
	// then synchronises the whole context and measures how long that took,
	// which is how work hidden on other streams shows itself.
	launch := func(s *side, rep int) (ms, hiddenMs float64, err error, during string) {
		args := make([]any, len(t.Args))
		for i, a := range t.Args {
			if a.Role == RoleScalar {
				args[i] = a.Value
				continue
			}
			args[i] = s.bufs[i]
			if a.Role == RoleOutput {
				if err := cx.MemsetAsync(s.bufs[i], PoisonByte(a.DType), int(a.Bytes), streams[0]); err != nil {
					return 0, 0, err, "poisoning outputs"
				}
			}
		}
		if err := cx.MemsetAsync(flush, byte(rep), flushBytes, streams[0]); err != nil {
			return 0, 0, err, "L2 flush"
		}
		if err := cx.Record(start, streams[0]); err != nil {
			return 0, 0, err, "event record"
		}
		for i, l := range s.plan {
			if err := cx.Launch(s.fns[i], l.Cfg, streams[l.Stream], args...); err != nil {
				return 0, 0, err, "launch"
			}
		}
		if err := cx.Record(end, streams[0]); err != nil {
			return 0, 0, err, "event record"
		}
		if err := cx.WaitEvent(end, r.remaining()); err != nil {
			return 0, 0, err, "kernel execution"
		}
		t0 := time.Now()
		if err := cx.Synchronize(); err != nil {
			return 0, 0, err, "kernel execution"
		}
		hiddenMs = float64(time.Since(t0).Microseconds()) / 1e3
		ms, err = cx.Elapsed(start, end)
		return ms, hiddenMs, err, "timing"
	}
	download := func(s *side) ([][]byte, error) {
		out := make([][]byte, len(t.Args))
		for i, a := range t.Args {
			if a.Role == RoleOutput {
				out[i] = make([]byte, a.Bytes)
				if err := cx.CopyDtoH(out[i], s.bufs[i]); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}

	trials := make([]TrialOutputs, 0, r.cfg.Trials)
	var hiddenCount int
	var maxHidden float64
	for tr := 0; tr < r.cfg.Trials; tr++ {
		inputs := t.GenInputs(tr)
		for _, s := range []*side{ref, cand} {
			for i, in := range inputs {
				if in != nil {
					if err := cx.CopyHtoD(s.bufs[i], in); err != nil {
						r.classify(o, err, "setup", "uploading inputs")
						return
					}
				}
			}
		}
		order := []*side{ref, cand}
		if tr%2 == 1 {
			order = []*side{cand, ref}
		}
		if tr == 0 { // warm-up: module first-use, clocks ramp-up; untimed
			for _, s := range order {
				for w := 0; w < r.cfg.Warmup; w++ {
					if _, _, err, during := launch(s, w); r.classify(o, err, s.name, during) {
						return
					}
				}
			}
		}
		to := TrialOutputs{Inputs: inputs}
		for _, s := range order {
			var firstOut [][]byte
			for rep := 0; rep < r.cfg.Reps; rep++ {
				ms, hidden, err, during := launch(s, rep)
				if r.classify(o, err, s.name, during) {
					return
				}
				s.times = append(s.times, ms)
				if s == cand && hidden > 0.05+0.25*ms {
					hiddenCount++
					if hidden > maxHidden {
						maxHidden = hidden
					}
				}
				if rep == 0 || rep == r.cfg.Reps-1 {
					out, err := download(s)
					if r.classify(o, err, s.name, "reading outputs") {
						return
					}
					if rep == 0 {
						firstOut = out
					} else if s == cand {
						for i, a := range t.Args {
							if a.Role == RoleOutput && countByte(out[i], PoisonByte(a.DType)) > countByte(firstOut[i], PoisonByte(a.DType)) {
								o.exploit(GateStaleOutput, "later repetitions on identical inputs left outputs unwritten (work skipped)")
							}
						}
					}
				}
			}
			if s == ref {
				to.RefOut = firstOut
			} else {
				to.CandOut = firstOut
			}
		}
		trials = append(trials, to)
	}
	o.RefTimes, o.CandTimes = ref.times, cand.times
	judgeOutputs(t, trials, o)
	o.Measurements = append(o.Measurements, engine.IntM("launches", int64(len(cand.times)*len(cand.plan))),
		engine.FloatM("post_sync_ms_max", maxHidden))
	if hiddenCount > 0 && 2*hiddenCount >= len(cand.times) {
		o.exploit(GateHiddenWork, fmt.Sprintf("device still busy after the timed stream finished in %d of %d runs (up to %.3f ms): work on other streams",
			hiddenCount, len(cand.times), maxHidden))
	}
}

func countByte(b []byte, v byte) int {
	n := 0
	for _, x := range b {
		if x == v {
			n++
		}
	}
	return n
}
