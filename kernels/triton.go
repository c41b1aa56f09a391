package kernels

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
// defining ModelNew, typically with Triton kernels) in a fresh Python
// process per candidate, pinned to the leased GPU with CUDA_VISIBLE_DEVICES.
type tritonBackend struct {
	cfg     Config
	pool    *gpuPool
	once    sync.Once
	initErr error
	dir     string
	worker  string
	python  string
	tools   []engine.Tool
}

func newTritonBackend(cfg Config, pool *gpuPool) *tritonBackend {
	return &tritonBackend{cfg: cfg, pool: pool}
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

type tritonRequest struct {
	Reference       string  `json:"reference"`
	Candidate       string  `json:"candidate"`
	Entry           string  `json:"entry"`
	Trials          int     `json:"trials"`
	Warmup          int     `json:"warmup"`
	Reps            int     `json:"reps"`
	Seed            uint64  `json:"seed"`
	Tolerance       float64 `json:"tolerance"`
	AllowDelegation bool    `json:"allow_delegation"`
	FlushBytes      int64   `json:"flush_bytes"`
	Nonce           string  `json:"nonce"`
}

type tritonResult struct {
	Stage        string            `json:"stage"`
	KernelStage  string            `json:"kernel_stage"`
	Cause        string            `json:"cause"`
	Trials       int               `json:"trials"`
	MaxAbsErr    float64           `json:"max_abs_err"`
	MaxRelErr    float64           `json:"max_rel_err"`
	RefMs        []float64         `json:"ref_ms"`
	CandMs       []float64         `json:"cand_ms"`
	Exploits     map[string]string `json:"exploits"`
	Tools        map[string]string `json:"tools"`
	Measurements map[string]any    `json:"measurements"`
	Log          string            `json:"log"`
}

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
	o.Toolchain = b.tools
	dir, err := os.MkdirTemp(b.dir, "cand-")
	if err != nil {
		o.fail(engine.StageDiskFull, "", err.Error())
		return o
	}
	defer os.RemoveAll(dir)
	tol := t.Tolerance
	if tol == 0 {
		tol = DefaultTolerance("float32")
	}
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	req, _ := json.Marshal(tritonRequest{Reference: t.Reference, Candidate: c.Code, Entry: t.Entry, Trials: b.cfg.Trials,
		Warmup: b.cfg.Warmup, Reps: b.cfg.Reps, Seed: t.Seed, Tolerance: tol, AllowDelegation: t.AllowDelegation,
		FlushBytes: max(b.cfg.FlushBytes, 256<<20), Nonce: nonce})

	rctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout+tritonStartup)
	defer cancel()
	cmd := exec.CommandContext(rctx, b.python, b.worker)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strconv.Itoa(lease.Index()), "CUDA_DEVICE_ORDER=PCI_BUS_ID",
		"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "TRITON_CACHE_DIR="+filepath.Join(b.dir, "triton-cache"),
		"CRUCIBLE_NONCE="+nonce)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr cappedBuffer
	stdout.limit, stderr.limit = 1<<20, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := runGroup(cmd, 3*time.Second)
	o.Measurements = append(o.Measurements, engine.FloatM("run_wall_s", time.Since(start).Seconds()))
	o.Log = stderr.String()
	if ctx.Err() != nil {
		o.fail(engine.StageWorkerCrash, "", "verification cancelled")
		return o
	}
	if rctx.Err() != nil {
		o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("worker ran past %s", b.cfg.Timeout+tritonStartup))
		return o
	}
	res, err := parseTritonResult(stdout.String(), nonce)
	if err != nil {
		infra = true
		o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("worker gave no result (%v; exit: %v)", err, runErr))
		return o
	}
	canonicalise(res, &o, b.cfg)
	if engine.IsInfraStage(o.Stage) && o.Stage != engine.StageReferenceSelfCheck {
		infra = true
	}
	return o
}

// parseTritonResult takes the last result line; the candidate's own prints
// come before it.
func parseTritonResult(out, nonce string) (*tritonResult, error) {
	marker := "\nCRUCIBLE_RESULT " + nonce + " "
	idx := strings.LastIndex(out, marker)
	if idx < 0 {
		return nil, fmt.Errorf("no result line")
	}
	line := out[idx+len(marker):]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	var r tritonResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, fmt.Errorf("result line: %w", err)
	}
	return &r, nil
}

var kernelStages = map[string]bool{"": true, "compile": true, "load": true, "launch": true, "runtime": true,
	"mismatch": true, "timeout": true, "exploit": true, "resource": true}

var knownGates = map[string]bool{GateLaunchEvidence: true, GateIdentityStore: true, GateDelegation: true,
	GateForbiddenCall: true, GateStaleOutput: true, GateHiddenWork: true, GateSuspiciousSpeedup: true}

// canonicalise admits only known stages and gates, finite bounded numbers
// and bounded strings, in a stable order, whatever the worker printed.
func canonicalise(r *tritonResult, o *Outcome, cfg Config) {
	clip := func(s string, n int) string {
		if len(s) > n {
			s = s[:n]
		}
		return strings.ToValidUTF8(s, "?")
	}
	if !engine.IsKnownStage(r.Stage) || !kernelStages[r.KernelStage] {
		o.fail(engine.StagePayloadCorrupt, "", fmt.Sprintf("worker reported unknown stage %q/%q", clip(r.Stage, 40), clip(r.KernelStage, 40)))
		return
	}
	o.Stage, o.KernelStage, o.Cause = r.Stage, r.KernelStage, clip(r.Cause, 2000)
	o.Log = clip(r.Log+"\n"+o.Log, 16<<10)
	o.Trials = min(max(r.Trials, 0), cfg.Trials)
	o.MaxAbsErr, o.MaxRelErr = finiteOr(r.MaxAbsErr), finiteOr(r.MaxRelErr)
	limit := cfg.Trials * cfg.Reps
	for _, x := range r.RefMs {
		if x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) && len(o.RefTimes) < limit {
			o.RefTimes = append(o.RefTimes, x)
		}
	}
	for _, x := range r.CandMs {
		if x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) && len(o.CandTimes) < limit {
			o.CandTimes = append(o.CandTimes, x)
		}
	}
	for g, d := range r.Exploits {
		if knownGates[g] {
			o.exploit(g, clip(d, 300))
		}
	}
	keys := make([]string, 0, len(r.Tools))
	for k := range r.Tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "gpu" {
			o.Toolchain = append(append([]engine.Tool{}, o.Toolchain...), engine.Tool{Name: "gpu", Version: clip(r.Tools[k], 100)})
		}
	}
	keys = keys[:0]
	for k := range r.Measurements {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := "worker_" + clip(k, 40)
		switch v := r.Measurements[k].(type) {
		case float64:
			o.Measurements = append(o.Measurements, engine.FloatM(name, finiteOr(v)))
		case string:
			o.Measurements = append(o.Measurements, engine.TextM(name, clip(v, 500)))
		}
	}
}

func finiteOr(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.MaxFloat64
	}
	return x
}
