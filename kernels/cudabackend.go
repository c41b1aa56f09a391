package kernels

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/crucible-data/crucible/cuda"
	"github.com/crucible-data/crucible/engine"
)

// cudaBackend runs CUDA C++ candidates. The reference and the candidate
// each run in a fresh worker process of their own (this same binary
// re-executed, see worker.go), both pinned to the leased GPU: separate
// processes have separate CUDA contexts, so the candidate's device code
// cannot read or write the reference's buffers, and a sticky CUDA error or
// a hung kernel ends only its own process. The workers compile with NVRTC
// for the GPU's arch and time each call with events on their timed stream;
// this process draws the inputs, sends them to both and compares.
type cudaBackend struct {
	cfg       Config
	pool      *gpuPool
	once      sync.Once
	initErr   error
	mgr       *cuda.Manager
	exe       string
	toolchain []engine.Tool
	mu        sync.Mutex
	audits    map[string]*auditRun
}

func newCUDABackend(cfg Config, pool *gpuPool) *cudaBackend {
	return &cudaBackend{cfg: cfg, pool: pool, audits: map[string]*auditRun{}}
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
	o = b.judge(ctx, lease.Index(), t, c)
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

// judge audits the task (cached), then runs the reference's and the
// candidate's workers on GPU gpu and drives their calls.
func (b *cudaBackend) judge(ctx context.Context, gpu int, t *Task, c engine.Candidate) Outcome {
	ar := cachedAudit(&b.mu, b.audits, t, ctx, func() (*Strength, Outcome) {
		return runAudit(ctx, t, func(ctx context.Context, inputs [][][]byte) ([][][]byte, Outcome) {
			var o Outcome
			ref, err := startCUDAWorker(ctx, b.exe, gpu, b.cfg, t, t.Reference, "reference")
			if ref == nil {
				o.fail(engine.StageWorkerCrash, "", "starting the reference's worker: "+err.Error())
				return nil, o
			}
			defer ref.kill()
			if err != nil {
				ref.classify(&o, err)
				return nil, o
			}
			outs := make([][][]byte, len(inputs))
			for k, in := range inputs {
				if outs[k], _, err = ref.call(in); err != nil {
					ref.classify(&o, err)
					return nil, o
				}
			}
			return outs, o
		})
	})
	if ar.fail.Stage != "" {
		return ar.fail
	}
	o := Outcome{Strength: ar.strength}
	ref, err := startCUDAWorker(ctx, b.exe, gpu, b.cfg, t, t.Reference, "reference")
	if ref == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the reference's worker: "+err.Error())
		return o
	}
	defer ref.kill()
	if err != nil {
		ref.classify(&o, err)
		return o
	}
	cand, err := startCUDAWorker(ctx, b.exe, gpu, b.cfg, t, c.Code, "candidate")
	if cand == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the candidate's worker: "+err.Error())
		return o
	}
	defer cand.kill()
	if err != nil {
		cand.classify(&o, err)
		o.Strength = ar.strength
		return o
	}
	if driveCalls(ctx, t, b.cfg, ref, cand, &o) {
		ref.quit()
		cand.quit()
		o.Log = cand.log.String()
	}
	o.Strength = ar.strength
	return o
}

// cudaSide is the worker side: it owns GPU 0 of its process
// (CUDA_VISIBLE_DEVICES selects the leased one) and runs ONE side's code.
type cudaSide struct {
	cfg      Config
	task     *Task
	role     string // "reference" | "candidate"
	img      []byte
	plan     []Launch
	mod      *cuda.Module
	fns      []cuda.Function
	bufs     []cuda.DevicePtr
	streams  [4]cuda.Stream
	start    cuda.Event
	end      cuda.Event
	flush    cuda.DevicePtr
	flushN   int
	calls    int
	poisoned bool // the context is unusable (sticky error, hung kernel)
}

// serveCUDA is a cuda worker's main: compile and load the side's code,
// say 'L', then run one call per command until told to quit. Failures are
// reported as an outcome ('E') and end the process.
func serveCUDA(job workerJob, in io.Reader, out io.Writer) int {
	o := Outcome{}
	fail := func() int { return writeReport(out, o) }
	dev, err := cuda.OpenDevice(0)
	if err != nil {
		o.fail(engine.StageDeviceFault, "", "opening the GPU: "+err.Error())
		return fail()
	}
	p := dev.Props
	o.Toolchain = []engine.Tool{
		{Name: "gpu", Version: fmt.Sprintf("%s %s (%d SMs, L2 %d KiB)", p.Name, p.Arch(), p.Multiprocessors, p.L2Bytes>>10)},
		{Name: "gpu-clocks", Version: fmt.Sprintf("max SM %d MHz, mem %d MHz", p.ClockKHz/1000, p.MemClockKHz/1000)}}
	t := &job.Task
	plan, err := ParseLaunchPlan(job.Code, t.Entry)
	if err != nil {
		o.fail(engine.StageCompile, "compile", "launch plan: "+err.Error())
		return fail()
	}
	res, err := cuda.Compile(job.Code, job.Role+".cu", p.Arch(), nil)
	o.Log = res.Log
	if err != nil {
		o.fail(engine.StageCompile, "compile", "NVRTC: "+firstLine(res.Log, err.Error()))
		return fail()
	}
	for _, l := range plan {
		if int(l.Cfg.SharedBytes) > p.MaxSharedOptin {
			o.fail(engine.StageResource, "launch", fmt.Sprintf("kernel %s asks for %d bytes of dynamic shared memory; the device allows %d per block",
				l.Kernel, l.Cfg.SharedBytes, p.MaxSharedOptin))
			return fail()
		}
	}
	s := &cudaSide{cfg: job.Cfg, task: t, role: job.Role, img: res.Image, plan: plan}
	ctx := context.Background()
	if err := dev.Do(ctx, func(cx *cuda.Ctx) error { s.setup(cx, &o); return nil }); err != nil {
		o.fail(engine.StageWorkerCrash, "", err.Error())
	}
	if o.Stage != "" {
		return fail()
	}
	if _, err := out.Write([]byte{'L'}); err != nil {
		return 2
	}
	for {
		var cmd uint32
		if err := binary.Read(in, binary.LittleEndian, &cmd); err != nil || cmd != cmdCall {
			return 0 // told to quit, or the verifier went away: process exit releases the GPU
		}
		inputs := make([][]byte, len(t.Args))
		for i, a := range t.Args {
			if a.Role == RoleInput {
				inputs[i] = make([]byte, a.Bytes)
				if _, err := io.ReadFull(in, inputs[i]); err != nil {
					return 0
				}
			}
		}
		var outs [][]byte
		var ms, hidden float64
		if err := dev.Do(ctx, func(cx *cuda.Ctx) error { outs, ms, hidden = s.call(cx, inputs, &o); return nil }); err != nil {
			o.fail(engine.StageWorkerCrash, "", err.Error())
		}
		if o.Stage != "" {
			return fail()
		}
		var reply bytes.Buffer
		reply.WriteByte('D')
		for i, a := range t.Args {
			if a.Role == RoleOutput {
				reply.Write(outs[i])
			}
		}
		binary.Write(&reply, binary.LittleEndian, [2]float64{ms, hidden})
		if _, err := out.Write(reply.Bytes()); err != nil {
			return 0
		}
	}
}

func (s *cudaSide) setup(cx *cuda.Ctx, o *Outcome) {
	t := s.task
	m, err := cx.LoadModule(s.img)
	if err != nil {
		o.fail(engine.StageElaborate, "load", "module load: "+err.Error())
		return
	}
	s.mod = m
	for _, l := range s.plan {
		f, err := cx.Function(m, l.Kernel)
		if err != nil {
			o.fail(engine.StageElaborate, "load", fmt.Sprintf("kernel %q not found (declare it extern \"C\"): %v", l.Kernel, err))
			return
		}
		if l.Cfg.SharedBytes > 48<<10 {
			if err := cx.SetFuncAttr(f, cuda.FuncMaxDynamicShared, int(l.Cfg.SharedBytes)); err != nil {
				o.fail(engine.StageResource, "launch", "opting in to dynamic shared memory: "+err.Error())
				return
			}
		}
		s.fns = append(s.fns, f)
		if l.Stream > 0 {
			o.Measurements = append(o.Measurements, engine.IntM("side_stream_launches", 1))
		}
	}
	for _, a := range t.Args {
		var p cuda.DevicePtr
		if a.Role != RoleScalar {
			if p, err = cx.Alloc(int(a.Bytes)); err != nil {
				s.classify(o, err, "setup", "allocating "+a.Name)
				return
			}
		}
		s.bufs = append(s.bufs, p)
	}
	for i := range s.streams {
		if s.streams[i], err = cx.NewStream(true); err != nil {
			s.classify(o, err, "setup", "stream creation")
			return
		}
	}
	if s.start, err = cx.NewEvent(); err == nil {
		s.end, err = cx.NewEvent()
	}
	if err != nil {
		s.classify(o, err, "setup", "event creation")
		return
	}
	s.flushN = int(s.cfg.FlushBytes)
	if l2 := 2 * cx.Device().Props.L2Bytes; s.flushN < l2 {
		s.flushN = l2
	}
	if s.flush, err = cx.Alloc(s.flushN); err != nil {
		s.classify(o, err, "setup", "allocating the L2 flush buffer")
	}
}

// call uploads inputs, poisons outputs, flushes L2, runs the plan between
// two events on the timed stream, waits for the end event, then
// synchronises the whole context and measures how long that took (work
// hidden on other streams shows itself there), and downloads the outputs.
func (s *cudaSide) call(cx *cuda.Ctx, inputs [][]byte, o *Outcome) ([][]byte, float64, float64) {
	t := s.task
	side := s.role
	args := make([]any, len(t.Args))
	for i, a := range t.Args {
		switch a.Role {
		case RoleScalar:
			args[i] = a.Value
			continue
		case RoleInput:
			if err := cx.CopyHtoD(s.bufs[i], inputs[i]); err != nil {
				s.classify(o, err, "setup", "uploading inputs")
				return nil, 0, 0
			}
		case RoleOutput:
			if err := cx.MemsetAsync(s.bufs[i], PoisonByte(a.DType), int(a.Bytes), s.streams[0]); err != nil {
				s.classify(o, err, "setup", "poisoning outputs")
				return nil, 0, 0
			}
		}
		args[i] = s.bufs[i]
	}
	s.calls++
	if err := cx.MemsetAsync(s.flush, byte(s.calls), s.flushN, s.streams[0]); err != nil {
		s.classify(o, err, "setup", "L2 flush")
		return nil, 0, 0
	}
	if err := cx.Record(s.start, s.streams[0]); err != nil {
		s.classify(o, err, "setup", "event record")
		return nil, 0, 0
	}
	for i, l := range s.plan {
		if err := cx.Launch(s.fns[i], l.Cfg, s.streams[l.Stream], args...); err != nil {
			s.classify(o, err, side, "launch")
			return nil, 0, 0
		}
	}
	if err := cx.Record(s.end, s.streams[0]); err != nil {
		s.classify(o, err, side, "event record")
		return nil, 0, 0
	}
	if err := cx.WaitEvent(s.end, s.cfg.Timeout); err != nil {
		s.classify(o, err, side, "kernel execution")
		return nil, 0, 0
	}
	t0 := time.Now()
	if err := cx.Synchronize(); err != nil {
		s.classify(o, err, side, "kernel execution")
		return nil, 0, 0
	}
	hidden := float64(time.Since(t0).Microseconds()) / 1e3
	ms, err := cx.Elapsed(s.start, s.end)
	if err != nil {
		s.classify(o, err, side, "timing")
		return nil, 0, 0
	}
	outs := make([][]byte, len(t.Args))
	for i, a := range t.Args {
		if a.Role == RoleOutput {
			outs[i] = make([]byte, a.Bytes)
			if err := cx.CopyDtoH(outs[i], s.bufs[i]); err != nil {
				s.classify(o, err, side, "reading outputs")
				return nil, 0, 0
			}
		}
	}
	return outs, ms, hidden
}

// classify turns a device error into the outcome's stage, as the side's
// own failure (the verifier turns a reference's into reference_self_check).
// sideName is "setup" for the worker's own steps. It returns false when err
// is nil.
func (r *cudaSide) classify(o *Outcome, err error, sideName, during string) bool {
	if err == nil {
		return false
	}
	var ce *cuda.Error
	switch {
	case errors.Is(err, cuda.ErrTimeout):
		r.poisoned = true
		o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("ran past the %s limit during %s", r.cfg.Timeout, during))
	case errors.As(err, &ce) && ce.Sticky():
		r.poisoned = true
		o.fail(engine.StageSimulate, "runtime", during+": "+err.Error())
	case errors.As(err, &ce) && sideName != "setup" && during == "launch":
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
