package kernels

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crucible-data/crucible/engine"
)

//go:embed embed/triton_worker.py
var tritonWorker string

// tritonStartup is the allowance for interpreter start, torch import and
// Triton JIT compilation on top of Config.Timeout.
const tritonStartup = 45 * time.Second

// tritonBackend judges KernelBench-style candidates (a Python module
// defining ModelNew, typically with Triton kernels): the reference and the
// candidate each in a fresh Python process of their own, pinned to the
// leased GPU with CUDA_VISIBLE_DEVICES.
type tritonBackend struct {
	cfg     Config
	pool    *gpuPool
	once    sync.Once
	initErr error
	dir     string
	worker  string
	python  string
	tools   []engine.Tool
	mu      sync.Mutex
	audits  map[string]*auditRun
}

func newTritonBackend(cfg Config, pool *gpuPool) *tritonBackend {
	return &tritonBackend{cfg: cfg, pool: pool, audits: map[string]*auditRun{}}
}

func (b *tritonBackend) Name() string { return BackendTriton }

func (b *tritonBackend) Available() error {
	b.once.Do(func() {
		py, err := exec.LookPath(b.cfg.Python)
		if err != nil {
			b.initErr = fmt.Errorf("%w: python %q not found", ErrBackendUnavailable, b.cfg.Python)
			return
		}
		b.python = py
		_, tools, err := b.pool.get()
		if err != nil {
			b.initErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, err := runCapped(ctx, "", py, "-c",
			"import torch, triton, sys; print('PROBE', torch.__version__, triton.__version__, int(torch.cuda.is_available()))")
		fields := []string{}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "PROBE ") {
				fields = strings.Fields(l)
			}
		}
		if err != nil || len(fields) != 4 {
			b.initErr = fmt.Errorf("%w: python cannot import torch and triton: %s", ErrBackendUnavailable, lastLines(out))
			return
		}
		if fields[3] != "1" {
			b.initErr = fmt.Errorf("%w: torch %s sees no CUDA device", ErrBackendUnavailable, fields[1])
			return
		}
		b.tools = append([]engine.Tool{{Name: "torch", Version: fields[1]}, {Name: "triton", Version: fields[2]}}, tools...)
		if b.dir, err = os.MkdirTemp(b.cfg.TempDir, "crucible-kernels-triton-"); err != nil {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
			return
		}
		b.worker = filepath.Join(b.dir, "worker.py")
		if err := os.WriteFile(b.worker, []byte(tritonWorker), 0o644); err != nil {
			b.initErr = fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
		}
	})
	return b.initErr
}

func (b *tritonBackend) Close() error {
	if b.dir != "" {
		return os.RemoveAll(b.dir)
	}
	return nil
}

// tritonJob is a triton worker's header (see embed/triton_worker.py).
type tritonJob struct {
	Role       string `json:"role"` // reference | candidate
	Code       string `json:"code"`
	Entry      string `json:"entry"`
	InitSeed   uint64 `json:"init_seed"`
	Init       []any  `json:"init,omitempty"` // the reference's get_init_inputs(), for the candidate
	FlushBytes int64  `json:"flush_bytes"`
}

// tensor is one value of a frame: a tensor (dtype, shape, raw bytes) or a
// plain JSON value.
type tensor struct {
	DType string  `json:"dtype,omitempty"`
	Shape []int64 `json:"shape,omitempty"`
	Value any     `json:"value,omitempty"`
	raw   []byte
}

func (t tensor) isTensor() bool { return t.DType != "" }

// Verify runs the reference and the candidate in two worker processes of
// their own on the leased GPU. The reference's worker draws every call's
// inputs (get_inputs() under a seed from this process's crypto source) and
// returns them with its outputs; the candidate's worker gets the inputs and
// returns its outputs; this process compares. Timings come from each
// worker's CUDA events (the candidate's own process: see doc.go).
func (b *tritonBackend) Verify(ctx context.Context, t *Task, c engine.Candidate) Outcome {
	o := Outcome{}
	if err := b.Available(); err != nil {
		o.fail(engine.StageToolchainMissing, "", "no-device: "+err.Error())
		return o
	}
	mgr, _, _ := b.pool.get()
	lease, err := mgr.Acquire(ctx)
	if err != nil {
		o.fail(engine.StageDeviceFault, "", "no GPU: "+err.Error())
		return o
	}
	infra := false
	defer func() { lease.Release(infra) }()
	o = b.judge(ctx, lease.Index(), t, c)
	o.Toolchain = append(append([]engine.Tool{}, b.tools...), o.Toolchain...)
	if engine.IsInfraStage(o.Stage) && o.Stage != engine.StageReferenceSelfCheck {
		infra = true
	}
	return o
}

func (b *tritonBackend) judge(ctx context.Context, gpu int, t *Task, c engine.Candidate) (o Outcome) {
	var strength *Strength
	defer func() { o.Strength = strength }() // a worker's report replaces o: keep the audit's figures
	initSeed := NewInputSource().Uint64()
	ref, init, err := b.startWorker(ctx, gpu, tritonJob{Role: "reference", Code: t.Reference, Entry: "Model", InitSeed: initSeed})
	if ref == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the reference's worker: "+err.Error())
		return o
	}
	defer ref.kill()
	if err != nil {
		ref.classify(&o, err)
		return o
	}
	// Strength: the reference on other inputs, and constants, judged
	// through the same comparison (cached per task).
	rng := NewInputSource()
	ar := cachedAudit(&b.mu, b.audits, t, ctx, func() (*Strength, Outcome) {
		return b.audit(ref, t, rng)
	})
	if ar.fail.Stage != "" {
		return ar.fail
	}
	strength = ar.strength
	cand, _, err := b.startWorker(ctx, gpu, tritonJob{Role: "candidate", Code: c.Code, Entry: t.Entry, InitSeed: initSeed, Init: init})
	if cand == nil {
		o.fail(engine.StageWorkerCrash, "", "starting the candidate's worker: "+err.Error())
		return o
	}
	defer cand.kill()
	if err != nil {
		cand.classify(&o, err)
		return o
	}
	var j *callJudge
	var shape *Task
	var hiddenRuns, timed int
	var maxHidden float64
	for trial := -1; trial < b.cfg.Trials; trial++ {
		n := b.cfg.Reps
		if trial < 0 {
			n = b.cfg.Warmup
		}
		for rep := 0; rep < n; rep++ {
			ins, refOuts, refMs, err := ref.tritonRefCall(rng.Uint64())
			if errors.Is(err, errFrameTooLarge) {
				o.fail(engine.StageToolchainUnsupported, "", err.Error())
				return o
			}
			if err != nil {
				ref.classify(&o, err)
				return o
			}
			candOuts, candMs, err := cand.tritonCandCall(ins)
			if err != nil {
				cand.classify(&o, err)
				return o
			}
			if shape == nil {
				if shape, err = frameTask(t, ins, refOuts); err != nil {
					o.fail(engine.StageReferenceSelfCheck, "load", err.Error())
					return o
				}
				j = newCallJudge(shape, &o)
			}
			in, r, cd, why := frameBuffers(shape, ins, refOuts, candOuts)
			if why != "" {
				o.fail(engine.StageMismatch, "mismatch", why)
				return o
			}
			if trial >= 0 {
				o.RefTimes, o.CandTimes = append(o.RefTimes, refMs), append(o.CandTimes, candMs)
				timed++
				if cand.hiddenMs > 0.1+0.25*candMs {
					hiddenRuns++
					maxHidden = max(maxHidden, cand.hiddenMs)
				}
			}
			if !j.add(in, r, cd) {
				o.Log = cand.log.String()
				return o
			}
		}
		if trial >= 0 {
			o.Trials = trial + 1
		}
	}
	o.Measurements = append(o.Measurements, engine.FloatM("post_sync_ms_max", maxHidden))
	if hiddenRuns > 0 && 2*hiddenRuns >= timed {
		o.exploit(GateHiddenWork, fmt.Sprintf("device still busy after the timed stream finished in %d of %d runs (up to %.3f ms)", hiddenRuns, timed, maxHidden))
	}
	// Delegation: the candidate calling the reference's own compute ops
	// (as the candidate's process reports them: see doc.go).
	if !t.AllowDelegation {
		refOps, err1 := ref.tritonOps()
		candOps, err2 := cand.tritonOps()
		if err1 == nil && err2 == nil {
			var shared []string
			for _, op := range candOps {
				if slices.Contains(refOps, op) {
					shared = append(shared, op)
				}
			}
			o.Measurements = append(o.Measurements, engine.TextM("candidate_aten_ops", clipText(strings.Join(candOps, ","), 500)))
			if len(shared) > 0 {
				o.exploit(GateDelegation, "calls the reference's framework ops "+clipText(strings.Join(shared, ","), 300))
			}
		}
	}
	ref.quit()
	cand.quit()
	o.Log = cand.log.String()
	return o
}

// audit runs the reference on two fresh input sets (and the first again)
// and judges the trivial candidates on them.
func (b *tritonBackend) audit(ref *sideProc, t *Task, rng *rand.Rand) (*Strength, Outcome) {
	var o Outcome
	seeds := []uint64{rng.Uint64(), 0, rng.Uint64()}
	seeds[1] = seeds[0]
	var ins [3][]tensor
	var outs [3][]tensor
	for k, seed := range seeds {
		var err error
		if ins[k], outs[k], _, err = ref.tritonRefCall(seed); errors.Is(err, errFrameTooLarge) {
			o.fail(engine.StageToolchainUnsupported, "", err.Error())
			return nil, o
		} else if err != nil {
			ref.classify(&o, err)
			return nil, o
		}
	}
	shape, err := frameTask(t, ins[0], outs[0])
	if err != nil {
		o.fail(engine.StageReferenceSelfCheck, "load", err.Error())
		return nil, o
	}
	var res [3][][]byte
	for k := range seeds {
		var why string
		if _, res[k], _, why = frameBuffers(shape, ins[k], outs[k], outs[k]); why != "" {
			o.fail(engine.StageReferenceSelfCheck, "mismatch", "the reference's outputs change between calls: "+why)
			return nil, o
		}
	}
	if why := selfConsistent(shape, res[0], res[1]); why != "" {
		o.fail(engine.StageReferenceSelfCheck, "mismatch", why)
		return nil, o
	}
	first, _, _, _ := frameBuffers(shape, ins[0], outs[0], outs[0])
	return auditStrength(shape, first, res[0], res[2]), o
}

// frameTask describes a triton task's calls as a Task (inputs, then
// outputs, each tensor an argument) so the shared judge and audit apply.
func frameTask(t *Task, ins, outs []tensor) (*Task, error) {
	ft := &Task{ItemID: t.ItemID, Backend: t.Backend, Entry: t.Entry, Tolerance: t.Tolerance}
	add := func(role string, i int, v tensor) error {
		info, ok := dtypes[v.DType]
		if !ok {
			return fmt.Errorf("the reference's %s %d has dtype %q, which the verifier cannot compare", role, i, v.DType)
		}
		n := int64(1)
		for _, d := range v.Shape {
			n *= d
		}
		ft.Args = append(ft.Args, Arg{KernelArg: engine.KernelArg{Name: fmt.Sprintf("%s%d", role, i), Role: role, Shape: v.Shape, DType: v.DType},
			Elems: n, Bytes: n * int64(info.size)})
		return nil
	}
	for i, v := range ins {
		if v.isTensor() {
			if err := add(RoleInput, i, v); err != nil {
				return nil, err
			}
		}
	}
	for i, v := range outs {
		if err := add(RoleOutput, i, v); err != nil {
			return nil, err
		}
	}
	return ft, nil
}

// frameBuffers lays one call's frames out like ft.Args; why says how the
// candidate's outputs do not fit (count, dtype, shape).
func frameBuffers(ft *Task, ins, ref, cand []tensor) (in, r, c [][]byte, why string) {
	in, r, c = make([][]byte, len(ft.Args)), make([][]byte, len(ft.Args)), make([][]byte, len(ft.Args))
	k := 0
	for _, v := range ins {
		if v.isTensor() && k < len(ft.Args) {
			in[k] = v.raw
			k++
		}
	}
	if len(cand) != len(ref) {
		return nil, nil, nil, fmt.Sprintf("the candidate returned %d tensors, the reference %d", len(cand), len(ref))
	}
	for i := range ref {
		if k+i >= len(ft.Args) {
			return nil, nil, nil, "the reference's outputs changed between calls"
		}
		a := ft.Args[k+i]
		if cand[i].DType != a.DType || !slices.Equal(cand[i].Shape, a.Shape) {
			return nil, nil, nil, fmt.Sprintf("output %d is %s%v, want %s%v", i, cand[i].DType, cand[i].Shape, a.DType, a.Shape)
		}
		if int64(len(ref[i].raw)) != a.Bytes || int64(len(cand[i].raw)) != a.Bytes {
			return nil, nil, nil, fmt.Sprintf("output %d has the wrong size", i)
		}
		r[k+i], c[k+i] = ref[i].raw, cand[i].raw
	}
	return in, r, c, ""
}

// startWorker starts a triton worker for one side; for the reference it
// also returns its get_init_inputs().
func (b *tritonBackend) startWorker(ctx context.Context, gpu int, job tritonJob) (*sideProc, []any, error) {
	job.FlushBytes = max(b.cfg.FlushBytes, 256<<20)
	blob, err := json.Marshal(job)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(b.dir, job.Role+"-")
	if err != nil {
		return nil, nil, err
	}
	env := append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strconv.Itoa(gpu), "CUDA_DEVICE_ORDER=PCI_BUS_ID",
		"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "TRITON_CACHE_DIR="+filepath.Join(dir, "triton-cache"), "HOME="+dir)
	start := func(stdin io.Reader, stdout, stderr io.Writer) (procHandle, error) {
		cmd := exec.Command(b.python, b.worker)
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, env, stdin, stdout, stderr
		return startGPUWorker(cmd)
	}
	s := &sideProc{name: job.Role, worker: true, untrusted: true, budget: b.cfg.Timeout + tritonStartup}
	s, err = launchSideWith(ctx, s, start, append(binary.LittleEndian.AppendUint32(nil, uint32(len(blob))), blob...))
	if s != nil {
		go func() { <-s.done; os.RemoveAll(dir) }()
	} else {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err != nil {
		return s, nil, err
	}
	var init struct {
		Init []any `json:"init"`
	}
	if err := s.exchange(func() error { return s.readJSON(&init) }); err != nil {
		return s, nil, err
	}
	return s, init.Init, nil
}

// readJSON reads a u32 length and that much JSON.
func (s *sideProc) readJSON(v any) error {
	var n uint32
	if err := binary.Read(s.fromChild, binary.LittleEndian, &n); err != nil {
		return err
	}
	if n > 16<<20 {
		return protocolError{fmt.Sprintf("%d-byte message", n)}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(s.fromChild, buf); err != nil {
		return err
	}
	if err := json.Unmarshal(buf, v); err != nil {
		return protocolError{"unreadable message: " + err.Error()}
	}
	return nil
}

// maxFrameBytes bounds one frame's tensor data: every call's inputs and
// outputs travel through this process (KernelBench's full-size problems,
// several GB per tensor, exceed it; see doc.go).
const maxFrameBytes = 2 << 30

// errFrameTooLarge: a side sent more tensor data than maxFrameBytes.
var errFrameTooLarge = errors.New("tensors too large to move between the reference's and the candidate's processes")

func (s *sideProc) readFrame() ([]tensor, error) {
	var n uint32
	if err := binary.Read(s.fromChild, binary.LittleEndian, &n); err != nil {
		return nil, err
	}
	if n > 4096 {
		return nil, protocolError{fmt.Sprintf("frame of %d values", n)}
	}
	out := make([]tensor, n)
	var total int64
	for i := range out {
		if err := s.readJSON(&out[i]); err != nil {
			return nil, err
		}
		if !out[i].isTensor() {
			continue
		}
		info, ok := dtypes[out[i].DType]
		size := int64(info.size)
		if !ok {
			size = int64(dtypeSize(out[i].DType))
		}
		if size == 0 {
			return nil, protocolError{fmt.Sprintf("tensor of unknown dtype %q", out[i].DType)}
		}
		elems := int64(1)
		for _, d := range out[i].Shape {
			if d < 0 || d > 1<<40 {
				return nil, protocolError{"bad shape"}
			}
			elems *= d
		}
		if total += elems * size; elems > 1<<34 || total > maxFrameBytes {
			return nil, fmt.Errorf("%w (%d bytes so far, at most %d)", errFrameTooLarge, total, int64(maxFrameBytes))
		}
		out[i].raw = make([]byte, elems*size)
		if _, err := io.ReadFull(s.fromChild, out[i].raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func dtypeSize(d string) int {
	switch d {
	case "bool", "int8", "uint8":
		return 1
	case "int16":
		return 2
	}
	return 0
}

func writeFrame(w io.Writer, vals []tensor) error {
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint32(len(vals)))
	for _, v := range vals {
		h, err := json.Marshal(v)
		if err != nil {
			return err
		}
		binary.Write(&buf, binary.LittleEndian, uint32(len(h)))
		buf.Write(h)
		buf.Write(v.raw)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (s *sideProc) readTimes() (float64, error) {
	var tm [2]float64
	if err := binary.Read(s.fromChild, binary.LittleEndian, &tm); err != nil {
		return 0, err
	}
	s.hiddenMs = finiteOr(tm[1])
	return finiteOr(tm[0]), nil
}

// tritonRefCall has the reference's worker draw inputs under seed and run.
func (s *sideProc) tritonRefCall(seed uint64) (ins, outs []tensor, ms float64, err error) {
	s.phase = "call"
	err = s.exchange(func() error {
		cmd := binary.LittleEndian.AppendUint32(nil, cmdCall)
		if _, err := s.toChild.Write(binary.LittleEndian.AppendUint64(cmd, seed)); err != nil {
			return err
		}
		if err := s.expect('D'); err != nil {
			return err
		}
		var err error
		if ins, err = s.readFrame(); err != nil {
			return err
		}
		if outs, err = s.readFrame(); err != nil {
			return err
		}
		ms, err = s.readTimes()
		return err
	})
	return ins, outs, ms, err
}

// tritonCandCall runs the candidate's worker on ins.
func (s *sideProc) tritonCandCall(ins []tensor) (outs []tensor, ms float64, err error) {
	s.phase = "call"
	err = s.exchange(func() error {
		if _, err := s.toChild.Write(binary.LittleEndian.AppendUint32(nil, cmdCall)); err != nil {
			return err
		}
		if err := writeFrame(s.toChild, ins); err != nil {
			return err
		}
		if err := s.expect('D'); err != nil {
			return err
		}
		var err error
		if outs, err = s.readFrame(); err != nil {
			return err
		}
		ms, err = s.readTimes()
		return err
	})
	return outs, ms, err
}

// tritonOps asks a worker for the compute ops of one call.
func (s *sideProc) tritonOps() ([]string, error) {
	var ops []string
	err := s.exchange(func() error {
		if _, err := s.toChild.Write(binary.LittleEndian.AppendUint32(nil, 2)); err != nil {
			return err
		}
		if err := s.expect('O'); err != nil {
			return err
		}
		return s.readJSON(&ops)
	})
	return ops, err
}

var kernelStages = map[string]bool{"": true, "compile": true, "load": true, "launch": true, "runtime": true,
	"mismatch": true, "timeout": true, "exploit": true, "resource": true}

func clipText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "?")
}

func finiteOr(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.MaxFloat64
	}
	return x
}
