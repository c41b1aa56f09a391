package kernels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Config tunes the verifier. Zero values are not defaults: start from
// DefaultConfig.
type Config struct {
	Backend           string        `yaml:"backend"`                // auto | cpu | cuda | triton
	Trials            int           `yaml:"trials"`                 // trials, each with fresh seeded inputs; all must pass
	Warmup            int           `yaml:"warmup"`                 // untimed calls per side before timing
	Reps              int           `yaml:"reps"`                   // timed calls per side per trial (interleaved ref/cand)
	FlushBytes        int64         `yaml:"flush_bytes"`            // cache-flush buffer written before every timed call (0: GPU uses 2×L2)
	Timeout           time.Duration `yaml:"timeout"`                // wall clock per candidate run
	CompileTimeout    time.Duration `yaml:"compile_timeout"`        // per compilation (also its CPU-time limit)
	CompileMemBytes   int64         `yaml:"compile_mem_bytes"`      // cpu backend: address-space limit of the C compiler
	MemLimitBytes     int64         `yaml:"mem_limit_bytes"`        // cpu backend: address-space limit of the child
	Workers           int           `yaml:"workers"`                // concurrent candidates on the cpu backend
	SpeedupThreshold  float64       `yaml:"speedup_threshold"`      // "faster" needs the CI's lower bound >= this
	SuspiciousSpeedup float64       `yaml:"suspicious_speedup"`     // above this the suspicious_speedup gate fires
	SuspiciousSamples int           `yaml:"suspicious_min_samples"` // timed calls per side the gate needs before it may fire
	BootstrapRounds   int           `yaml:"bootstrap_rounds"`
	Alpha             float64       `yaml:"alpha"`        // 1 - confidence of the speedup interval
	MaxAttempts       int           `yaml:"max_attempts"` // attempts for infrastructure failures
	CC                string        `yaml:"cc"`           // C compiler for the cpu backend
	Python            string        `yaml:"python"`       // interpreter for the triton backend
	TempDir           string        `yaml:"temp_dir"`     // parent of scratch dirs ("" = os.TempDir)
	// StrengthMutants bounds the mutants of the reference the strength
	// audit judges (audit.go), taken from the registered sources in order.
	StrengthMutants int `yaml:"strength_mutants"`
}

// DefaultConfig returns settings that judge a small kernel in about a second
// on the cpu backend.
func DefaultConfig() Config {
	return Config{Backend: BackendAuto, Trials: 5, Warmup: 2, Reps: 5, FlushBytes: 8 << 20, Timeout: 60 * time.Second,
		CompileTimeout: 60 * time.Second, CompileMemBytes: 1 << 30, MemLimitBytes: 1 << 30, Workers: runtime.NumCPU(), SpeedupThreshold: 1.05,
		SuspiciousSpeedup: 100, SuspiciousSamples: 8, BootstrapRounds: 1000, Alpha: 0.05, MaxAttempts: 2, CC: "gcc", Python: "python3",
		StrengthMutants: 3}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("%w: "+f, append([]any{ErrConfig}, a...)...)) }
	switch c.Backend {
	case BackendAuto, BackendCPU, BackendCUDA, BackendTriton:
	default:
		bad("backend %q: want auto, cpu, cuda or triton", c.Backend)
	}
	if c.StrengthMutants < 0 {
		bad("strength_mutants must be >= 0, got %d", c.StrengthMutants)
	}
	if c.Trials < 1 {
		bad("trials must be >= 1, got %d", c.Trials)
	}
	if c.Warmup < 0 {
		bad("warmup must be >= 0, got %d", c.Warmup)
	}
	if c.Reps < 1 {
		bad("reps must be >= 1, got %d", c.Reps)
	}
	if c.FlushBytes < 0 {
		bad("flush_bytes must be >= 0, got %d", c.FlushBytes)
	}
	if c.Timeout <= 0 {
		bad("timeout must be positive, got %s", c.Timeout)
	}
	if c.CompileTimeout <= 0 {
		bad("compile_timeout must be positive, got %s", c.CompileTimeout)
	}
	if c.CompileMemBytes < 128<<20 {
		bad("compile_mem_bytes must be >= 128 MiB, got %d", c.CompileMemBytes)
	}
	if c.MemLimitBytes < 64<<20 {
		bad("mem_limit_bytes must be >= 64 MiB, got %d", c.MemLimitBytes)
	}
	if c.Workers < 1 {
		bad("workers must be >= 1, got %d", c.Workers)
	}
	if c.SpeedupThreshold <= 0 {
		bad("speedup_threshold must be positive, got %g", c.SpeedupThreshold)
	}
	if c.SuspiciousSpeedup <= c.SpeedupThreshold {
		bad("suspicious_speedup (%g) must exceed speedup_threshold (%g)", c.SuspiciousSpeedup, c.SpeedupThreshold)
	}
	if c.SuspiciousSamples < 2 {
		bad("suspicious_min_samples must be >= 2, got %d", c.SuspiciousSamples)
	}
	if c.BootstrapRounds < 0 {
		bad("bootstrap_rounds must be >= 0, got %d", c.BootstrapRounds)
	}
	if c.Alpha <= 0 || c.Alpha >= 1 {
		bad("alpha must be in (0,1), got %g", c.Alpha)
	}
	if c.MaxAttempts < 1 {
		bad("max_attempts must be >= 1, got %d", c.MaxAttempts)
	}
	return errors.Join(errs...)
}

// Backend runs one candidate against its task's reference.
type Backend interface {
	Name() string
	// Available is nil when the backend can run here; else it says why not.
	Available() error
	// Verify never returns an error: every failure is a stage in the Outcome.
	Verify(ctx context.Context, t *Task, c engine.Candidate) Outcome
	Close() error
}

// Verifier judges kernel candidates with a bounded pool of workers.
type Verifier struct {
	cfg      Config
	log      *slog.Logger
	backends map[string]Backend
	pool     *gpuPool
	audits   memo[engine.StrengthReport]
	refRuns  memo[engine.Evidence] // definitive reference verdicts (Judge)
}

// NewVerifier builds the backends. Backends that cannot run here are kept:
// their tasks end unjudged (toolchain_missing) rather than failing.
func NewVerifier(cfg Config, log *slog.Logger) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{cfg: cfg, log: log, backends: map[string]Backend{}, pool: &gpuPool{}}
	v.backends[BackendCPU] = newCPUBackend(cfg)
	v.backends[BackendCUDA] = newCUDABackend(cfg, v.pool)
	v.backends[BackendTriton] = newTritonBackend(cfg, v.pool)
	return v, nil
}

// Close releases every backend's resources.
func (v *Verifier) Close() error {
	var errs []error
	for _, b := range v.backends {
		errs = append(errs, b.Close())
	}
	v.pool.close()
	return errors.Join(errs...)
}

// VerifyAll judges every candidate against its item through the engine's
// one fan-out (engine.FanOut); results are indexed like cands, so the output
// order never depends on scheduling.
func (v *Verifier) VerifyAll(ctx context.Context, items map[string]engine.Item, cands []engine.Candidate) ([]engine.Evidence, error) {
	out := make([]engine.Evidence, len(cands))
	err := engine.FanOut(ctx, v.cfg.Workers, len(cands), func(ctx context.Context, i int) error {
		out[i] = v.Verify(ctx, items, cands[i])
		return ctx.Err()
	})
	return out, err
}

// Verify judges one candidate, retrying infrastructure failures.
func (v *Verifier) Verify(ctx context.Context, items map[string]engine.Item, c engine.Candidate) engine.Evidence {
	ev := engine.Evidence{ItemID: c.ItemID, CandidateID: c.CandidateID, Provenance: engine.EvidenceProvenance{Verifier: "kernel"}}
	it, ok := items[c.ItemID]
	if !ok {
		return unjudged(ev, engine.StagePayloadCorrupt, fmt.Sprintf("no item %q for candidate %q", c.ItemID, c.CandidateID))
	}
	t, err := TaskFromItem(it)
	if err != nil {
		return unjudged(ev, engine.StagePayloadCorrupt, err.Error())
	}
	if v.cfg.Backend != BackendAuto && v.cfg.Backend != t.Backend {
		return unjudged(ev, engine.StageToolchainUnsupported,
			fmt.Sprintf("task needs backend %s; this run is restricted to --backend %s", t.Backend, v.cfg.Backend))
	}
	b := v.backends[t.Backend]
	ev.Provenance.Verifier = "kernel/" + b.Name()
	if err := b.Available(); err != nil {
		return unjudged(ev, engine.StageToolchainMissing, "no-device: "+err.Error())
	}
	var o Outcome
	start := time.Now()
	ev.Attempts, _ = v.retryPolicy().Run(ctx, "kernel verify "+c.ItemID+"/"+c.CandidateID, func(ctx context.Context, _ int) (string, string, error) {
		o = b.Verify(ctx, t, c)
		return o.Stage, o.Cause, nil
	})
	// The verdict's cost, retries included: the difficulty gate's budget
	// and the yield report read it, also off a remembered verdict.
	ev = v.evidence(ev, t, c, o)
	ev.Measurements = append(ev.Measurements, engine.FloatM(engine.MeasureWallTimeMS, float64(time.Since(start).Microseconds())/1000))
	return ev
}

func unjudged(ev engine.Evidence, stage, cause string) engine.Evidence {
	ev.Status, ev.FailureStage, ev.Cause = engine.StatusUnjudged, stage, cause
	if ev.Attempts == 0 {
		ev.Attempts = 1
	}
	return ev
}

// evidence turns an outcome into the verdict: timing statistics and the
// speedup interval, the suspicious-speedup gate, exploit precedence.
func (v *Verifier) evidence(ev engine.Evidence, t *Task, c engine.Candidate, o Outcome) engine.Evidence {
	m := []engine.Measurement{engine.IntM("trials", int64(o.Trials))}
	if o.Trials > 0 {
		m = append(m, engine.FloatM("max_abs_err", finite(o.MaxAbsErr)), engine.FloatM("max_rel_err", finite(o.MaxRelErr)))
	}
	if len(o.RefTimes) > 0 && len(o.CandTimes) > 0 {
		rt, ct := Summarize(o.RefTimes), Summarize(o.CandTimes)
		point, lo, hi := SpeedupCI(o.RefTimes, o.CandTimes, v.cfg.BootstrapRounds, v.cfg.Alpha, t.Seed^seedOf(c.CandidateID))
		faster := boolInt(lo >= v.cfg.SpeedupThreshold)
		m = append(m,
			engine.FloatM("ref_ms_median", rt.Median), engine.FloatM("ref_ms_p10", rt.P10), engine.FloatM("ref_ms_p90", rt.P90),
			engine.FloatM("cand_ms_median", ct.Median), engine.FloatM("cand_ms_p10", ct.P10), engine.FloatM("cand_ms_p90", ct.P90),
			engine.FloatM("cand_ms_min", ct.Min), engine.FloatM("ref_spread", rt.Spread()), engine.FloatM("cand_spread", ct.Spread()),
			engine.IntM("timed_samples", int64(ct.N)), engine.FloatM("speedup", point),
			engine.FloatM("speedup_ci_lo", lo), engine.FloatM("speedup_ci_hi", hi), engine.IntM("faster", faster))
		// The gate fails a candidate on timing alone, so it must not fire on
		// noise, nor miss on it: a busy host preempts calls and only ever
		// lengthens them, which moves medians and their interval either way.
		// The fastest call of each side is its least-disturbed one, so the
		// gate compares those: armed with enough calls per side, it fires
		// when the ratio of the fastest calls exceeds the ceiling and the
		// interval says the candidate is faster at all.
		armed := rt.N >= v.cfg.SuspiciousSamples && ct.N >= v.cfg.SuspiciousSamples
		m = append(m, engine.IntM("suspicious_gate_armed", boolInt(armed)))
		if o.Stage == "" && armed && ct.Min > 0 && rt.Min/ct.Min > v.cfg.SuspiciousSpeedup && faster == 1 {
			o.exploit(GateSuspiciousSpeedup, fmt.Sprintf("the reference's fastest call is %.0fx the candidate's (plausibility ceiling %.0fx; speedup CI %.1f-%.1fx)",
				rt.Min/ct.Min, v.cfg.SuspiciousSpeedup, lo, hi))
		}

	}
	gates := make([]string, 0, len(o.Exploits))
	for g := range o.Exploits {
		gates = append(gates, g)
	}
	sort.Strings(gates)
	for _, g := range gates {
		m = append(m, engine.IntM("exploit_"+g, 1))
	}
	// An exploit outranks a mismatch or a pass; it does not outrank a
	// failure that prevented running (compile, load) or an infra failure.
	if len(o.Exploits) > 0 && (o.Stage == "" || o.Stage == engine.StageMismatch) {
		cause := "exploit: " + o.exploitSummary()
		if o.Stage == engine.StageMismatch {
			cause += " (also: " + o.Cause + ")"
		}
		o.fail(engine.StageExploit, "exploit", cause)
	}
	if o.KernelStage != "" {
		m = append(m, engine.TextM("kernel_stage", o.KernelStage))
	}
	// A pass from a comparison that also accepts trivial candidates is no
	// evidence: the task, not the candidate, is at fault.
	m = append(m, o.Strength.Measurements()...)
	if o.Stage == "" && o.Strength.Weak() {
		o.fail(engine.StageWeakVerifier, "", fmt.Sprintf("the task's comparison also accepts trivial candidates (%s): a pass proves nothing",
			strings.Join(o.Strength.Survivors, ", ")))
	}
	ev.Measurements = append(m, o.Measurements...)
	ev.FailureStage, ev.Cause = o.Stage, o.Cause
	switch {
	case o.Stage == "":
		ev.Status = engine.StatusPass
	case engine.IsInfraStage(o.Stage):
		ev.Status = engine.StatusUnjudged
	default:
		ev.Status = engine.StatusFail
	}
	ev.Provenance.Toolchain = o.Toolchain
	ev.Provenance.Flags = []string{
		fmt.Sprintf("trials=%d", v.cfg.Trials), fmt.Sprintf("warmup=%d", v.cfg.Warmup), fmt.Sprintf("reps=%d", v.cfg.Reps),
		fmt.Sprintf("flush_bytes=%d", v.cfg.FlushBytes), fmt.Sprintf("speedup_threshold=%g", v.cfg.SpeedupThreshold),
		fmt.Sprintf("alpha=%g", v.cfg.Alpha), fmt.Sprintf("bootstrap_rounds=%d", v.cfg.BootstrapRounds),
	}
	argsJSON, _ := json.Marshal(t.Args)
	ev.Provenance.Inputs = []engine.InputHash{
		{Name: "reference", SHA256: sha(t.Reference)}, {Name: "candidate", SHA256: sha(c.Code)},
		{Name: "args", SHA256: sha(string(argsJSON))}, {Name: "seed", SHA256: sha(fmt.Sprint(t.Seed))},
	}
	// Logs and causes quote compiler output and the candidate's prints:
	// keep them valid UTF-8 so one bad candidate cannot break the writer.
	ev.Cause = strings.ToValidUTF8(ev.Cause, "\uFFFD")
	ev.LogExcerpt = strings.ToValidUTF8(excerpt(o.Log), "\uFFFD")
	return ev
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func finite(x float64) float64 {
	if math.IsInf(x, 1) || math.IsNaN(x) {
		return math.MaxFloat64
	}
	return x
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// excerpt keeps the end of a log (where errors are) within MaxLogExcerpt.
func excerpt(s string) string {
	if len(s) <= engine.MaxLogExcerpt {
		return s
	}
	return "…" + s[len(s)-engine.MaxLogExcerpt+len("…"):]
}
