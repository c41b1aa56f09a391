package rtl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Verifier judges RTL candidates. It is safe for concurrent use; its
// reference self-check cache lives as long as it does (and on disk when
// Config.CacheDir is set).
type Verifier struct {
	cfg Config
	sim simulator
	log *slog.Logger

	refs flight[refResult] // reference self-checks, once per (task, toolchain)

	strength strengthState // harness-strength audit cache (strength.go)

	// onProcessStart, when set (tests), sees every sandboxed process.
	onProcessStart func(phase string, pid int)
}

// NewVerifier validates cfg. A missing toolchain is not an error here: it
// shows up as unjudged verdicts (toolchain_missing), so a run still
// produces one row per candidate.
func NewVerifier(cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TempDir != "" {
		if err := os.MkdirAll(cfg.TempDir, 0o700); err != nil {
			return nil, fmt.Errorf("%w: temp dir: %v", ErrConfig, err)
		}
	}
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: cache dir: %v", ErrConfig, err)
		}
	}
	v := &Verifier{cfg: cfg, sim: newSimulator(cfg), log: cfg.Logger}
	return v, nil
}

// Config returns the verifier's configuration.
func (v *Verifier) Config() Config { return v.cfg }

// Verify judges every candidate against its item (as an RTL item, whatever
// its domain field says) and returns one evidence row per candidate, in
// candidate order, through the engine's one fan-out (engine.FanOut).
// Verdicts are data: the error is non-nil only when ctx is cancelled.
func (v *Verifier) Verify(ctx context.Context, items []engine.Item, cands []engine.Candidate) ([]engine.Evidence, error) {
	byID := make(map[string]*engine.Item, len(items))
	for i := range items {
		byID[items[i].ItemID] = &items[i]
	}
	out := make([]engine.Evidence, len(cands))
	err := engine.FanOut(ctx, v.cfg.Workers, len(cands), func(ctx context.Context, i int) error {
		var err error
		if it := byID[cands[i].ItemID]; it != nil {
			out[i], err = v.VerifyOne(ctx, *it, cands[i])
		} else {
			out[i], err = v.verifyOne(ctx, nil, cands[i]) // payload_corrupt: no such item
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// VerifyOne judges a single candidate (engine.Judge's Judge): the
// candidate's verdict, then the harness-strength audit of its item (cached
// per task and toolchain), which turns a pass on a weak harness unjudged.
func (v *Verifier) VerifyOne(ctx context.Context, item engine.Item, cand engine.Candidate) (engine.Evidence, error) {
	ev, err := v.verifyOne(ctx, &item, cand)
	if err != nil || !v.cfg.StrengthAudit {
		return ev, err
	}
	rep, err := v.Strength(ctx, item)
	if err != nil {
		return engine.Evidence{}, err
	}
	applyStrength(&ev, rep)
	return ev, nil
}

func (v *Verifier) verifyOne(ctx context.Context, item *engine.Item, cand engine.Candidate) (engine.Evidence, error) {
	ev := engine.Evidence{ItemID: cand.ItemID, CandidateID: cand.CandidateID}
	ev.Provenance.Verifier = "rtl"
	ev.Provenance.Toolchain = v.sim.Tools()
	ev.Provenance.Flags = v.sim.Flags()
	ev.Provenance.Inputs = []engine.InputHash{{Name: "candidate", SHA256: sha(cand.Code)}}
	if item == nil {
		return finish(ev, infraOutcome(engine.StagePayloadCorrupt, "no item with item_id "+cand.ItemID), 0), nil
	}
	ev.Provenance.Inputs = append(ev.Provenance.Inputs,
		engine.InputHash{Name: "harness", SHA256: sha(item.Verifier.Harness)},
		engine.InputHash{Name: "reference", SHA256: sha(item.Reference)},
		engine.InputHash{Name: "contract", SHA256: sha(contractKey(item))})
	if st, cause := v.sim.Check(); st != "" {
		return finish(ev, infraOutcome(st, cause), 0), nil
	}
	if st, cause := isolationUnavailable(); st != "" {
		return finish(ev, infraOutcome(st, cause), 0), nil
	}
	c, err := ContractFor(*item)
	if err != nil {
		return finish(ev, infraOutcome(engine.StagePayloadCorrupt, err.Error()), 0), nil
	}
	ev.Provenance.Verifier = "rtl/" + c.Kind() + "/" + v.sim.Name()

	ref, err := v.referenceCheck(ctx, *item, c)
	if err != nil {
		return ev, err
	}
	if !ref.OK {
		return finish(ev, infraOutcome(ref.Stage, ref.Cause), ref.Attempts), nil
	}
	assembled, finding := c.Assemble(cand.Code)
	pre := ""
	if finding == nil {
		var infra *jobOutcome
		pre, finding, infra, err = v.staticCheck(ctx, assembled)
		if err != nil {
			return ev, err
		}
		if infra != nil {
			return finish(ev, *infra, 0), nil
		}
	}
	if finding == nil {
		toks, lerr := lexVerilog(pre, lexOptions{})
		if lerr != nil {
			finding = &screenFinding{"lex", lerr.Error()}
		} else {
			finding = c.checkUnits(toks)
		}
	}
	if finding != nil {
		return finish(ev, jobOutcome{Status: engine.StatusFail, Stage: engine.StageStatic, Cause: finding.Error()}, 0), nil
	}
	var o jobOutcome
	var attempts int32
	if ref.assembled != "" && assembled == ref.assembled {
		// The candidate is the reference itself (a --self-check run): its
		// verdict under this toolchain is exactly the self-check's replay.
		o, attempts = ref.outcome, ref.Attempts
	} else {
		lim := v.cfg.Limits
		budget := runBudget{CPUSeconds: lim.CandidateCPUSeconds(ref.CPU()),
			Why: "the candidate's budget: " + lim.budgetRule()}
		o, attempts, err = v.judgeCandidate(ctx, c, ref, pre, budget)
		if err != nil {
			return ev, err
		}
	}
	if o.Status == engine.StatusPass && ref.Weak != "" {
		o.Status, o.Stage = engine.StatusUnjudged, engine.StageWeakVerifier
		o.Cause = "passed, but the task's verifier is weak: " + ref.Weak
	}
	if o.Status == engine.StatusPass && !v.sim.FourState() && !v.cfg.TrustTwoState {
		o.Status, o.Stage = engine.StatusUnjudged, engine.StageToolchainUnsupported
		o.Cause = "passed under 2-state " + v.sim.Name() + ", which this contract does not trust for pass (set TrustTwoState)"
	}
	ev = finish(ev, o, attempts)
	if o.Verdict.Counted || ref.Expected > 0 {
		ev.Measurements = append(ev.Measurements, engine.IntM("expected_samples", ref.Expected))
	}
	if v.cfg.Synth && o.Status == engine.StatusPass {
		rep, err := Synthesize(ctx, assembled, c.DUT(), v.cfg.Limits)
		if err != nil {
			ev.Measurements = append(ev.Measurements, engine.TextM("synth_error", truncate(err.Error(), 300)))
		} else {
			ev.Measurements = append(ev.Measurements, engine.IntM("yosys_cells", rep.Cells),
				engine.IntM("latches", int64(len(rep.Latches))), engine.IntM("comb_loops", int64(len(rep.Loops))))
		}
	}
	return ev, nil
}

// judgeCandidate runs the candidate alone under the replay driver and
// compares its trace with the reference's; under a self-checking contract
// a trace that matches must also pass the trusted harness (run with the
// candidate: harnesses may check what a port trace does not, such as
// internal state, and the stimulus of a handshake depends on the outputs).
func (v *Verifier) judgeCandidate(ctx context.Context, c Contract, ref refResult, code string, budget runBudget) (jobOutcome, int32, error) {
	o, n, err := v.runWithRetries(ctx, func(ctx context.Context) (jobOutcome, error) {
		return v.replayJob(ctx, ref.rt, ref.Timescale, code, c.DUT(), budget)
	})
	if err != nil || o.Status != engine.StatusPass || c.Kind() != engine.VerifierSelfChecking {
		return o, n, err
	}
	h, n2, err := v.runWithRetries(ctx, func(ctx context.Context) (jobOutcome, error) {
		return v.runHarnessJob(ctx, c, code, 0, budget)
	})
	if err != nil {
		return h, n + n2, err
	}
	if h.Status != engine.StatusPass {
		h.Cause = "the trace matches the reference's, but the trusted harness run with the candidate did not pass: " + h.Cause
		h.Verdict = o.Verdict
		return h, n + n2, nil
	}
	o.Wall += h.Wall
	o.CPU += h.CPU
	return o, n + n2, nil
}

// runWithRetries runs job under the engine's retry policy (transient
// infrastructure stages only); an infrastructure outcome left at the end is
// unjudged.
func (v *Verifier) runWithRetries(ctx context.Context, job func(context.Context) (jobOutcome, error)) (jobOutcome, int32, error) {
	var o jobOutcome
	n, err := v.retryPolicy().Run(ctx, "rtl", func(ctx context.Context, _ int) (string, string, error) {
		var err error
		o, err = job(ctx)
		return o.Stage, o.Cause, err
	})
	if err != nil {
		return o, n, err
	}
	if engine.IsInfraStage(o.Stage) {
		o.Status = engine.StatusUnjudged
		if engine.Transient(o.Stage) {
			o.Cause = fmt.Sprintf("%s (unresolved after %d attempts)", o.Cause, n)
		}
	}
	return o, n, nil
}

// finish fills the verdict fields of ev from an outcome. Only wall_time_ms
// and cpu_time_ms vary between identical runs; everything else is a function
// of inputs (cpu_budget_s too, while the budget is the floor or the ceiling,
// or the reference's self-check comes from the cache).
func finish(ev engine.Evidence, o jobOutcome, attempts int32) engine.Evidence {
	ev.Status, ev.FailureStage, ev.Cause, ev.Attempts = o.Status, o.Stage, o.Cause, attempts
	if o.Verdict.Counted {
		ev.Measurements = append(ev.Measurements,
			engine.IntM("mismatches", o.Verdict.Mismatches),
			engine.IntM("samples", o.Verdict.Samples),
			engine.IntM("sim_time", o.Verdict.SimTime))
	}
	if attempts > 0 {
		ev.Measurements = append(ev.Measurements, engine.IntM("output_bytes", o.OutputBytes),
			engine.FloatM(engine.MeasureWallTimeMS, float64(o.Wall.Microseconds())/1000))
		if o.CPUBudget > 0 {
			ev.Measurements = append(ev.Measurements, engine.IntM("cpu_budget_s", int64(o.CPUBudget)),
				engine.FloatM(engine.MeasureCPUTimeMS, float64(o.CPU.Microseconds())/1000))
		}
	}
	ev.LogExcerpt = truncate(o.Log, engine.MaxLogExcerpt-3)
	return ev
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func contractKey(item *engine.Item) string {
	return strings.Join([]string{item.Verifier.Kind, item.Verifier.Top, item.Interface.Top, item.Verifier.PassMarker}, "\x00")
}

// ---- reference self-check ----------------------------------------------

// refResult is what the reference did under its own harness: the trusted
// run's verdict, the port trace recorded there, and the replay of that
// trace through the candidate path (which must reproduce it).
type refResult struct {
	OK       bool   `json:"ok"`
	Expected int64  `json:"expected_samples"` // sample instants of the trace
	Stage    string `json:"stage,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Attempts int32  `json:"attempts"`
	// CPUMicros is the larger of the trusted run's and the reference
	// replay's CPU time, the base of its candidates' budgets (Limits).
	CPUMicros int64 `json:"cpu_us"`
	// HarnessSamples is the sample count the harness itself reported.
	HarnessSamples int64        `json:"harness_samples"`
	Trace          string       `json:"trace,omitempty"`   // the recorder's file
	SampleLog      string       `json:"samples,omitempty"` // the sample monitor's file
	Sampled        bool         `json:"harness_sampled"`
	Timescale      string       `json:"timescale,omitempty"`
	In             []modulePort `json:"inputs,omitempty"`
	Out            []modulePort `json:"outputs,omitempty"`
	// TogglingOutputs counts outputs that take more than one defined value
	// at the samples; Weak says why the task's verifier cannot tell a
	// constant candidate from the reference ("" when it can).
	TogglingOutputs int    `json:"toggling_outputs"`
	DefinedSamples  int    `json:"defined_samples"`
	Weak            string `json:"weak,omitempty"`
	// Split are the racy timesteps the replay applies edge-first (see
	// refTrace.schedule), found by findSplits.
	Split      []int64 `json:"split,omitempty"`
	definitive bool
	outcome    jobOutcome // the reference replay's outcome
	assembled  string
	rt         *refTrace
}

func (r refResult) CPU() time.Duration { return time.Duration(r.CPUMicros) * time.Microsecond }

// refKey identifies (task, toolchain): the trusted texts, the contract and
// the simulator with its version and flags.
func (v *Verifier) refKey(item engine.Item, c Contract) string {
	h := sha256.New()
	for _, s := range []string{refCacheVersion, c.Kind(), contractKey(&item), item.Verifier.Harness, item.Reference, item.Instruction} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	for _, t := range v.sim.Tools() {
		fmt.Fprintf(h, "%s=%s;", t.Name, t.Version)
	}
	fmt.Fprintf(h, "%q", v.sim.Flags())
	return hex.EncodeToString(h.Sum(nil))
}

// referenceCheck runs (once per key) the item's reference as a candidate
// under its own harness. A reference that fails makes the task unjudged
// for this toolchain; that result is cached. An unresolved infrastructure
// failure is not cached, so a later call tries again.
func (v *Verifier) referenceCheck(ctx context.Context, item engine.Item, c Contract) (refResult, error) {
	key := v.refKey(item, c)
	return v.refs.do(ctx, key, func(r refResult) bool { return r.definitive },
		func() (refResult, error) { return v.computeReference(ctx, item, c, key) })
}

// refCacheVersion names the on-disk self-check format: v3 entries carry
// the reference's port trace (the verdict of the trace design).
const refCacheVersion = "v3"

func (v *Verifier) computeReference(ctx context.Context, item engine.Item, c Contract, key string) (refResult, error) {
	refCand, err := c.ReferenceCandidate()
	if err != nil {
		return refResult{Stage: engine.StagePayloadCorrupt, Cause: "reference: " + err.Error(), definitive: true}, nil
	}
	assembled, finding := c.Assemble(refCand)
	if finding != nil {
		return refResult{Stage: engine.StagePayloadCorrupt, Cause: "reference: " + finding.Error(), definitive: true}, nil
	}
	dutRef, err := c.dutReference()
	if err != nil {
		return refResult{Stage: engine.StagePayloadCorrupt, Cause: "reference: " + err.Error(), definitive: true}, nil
	}
	cachePath := ""
	if v.cfg.CacheDir != "" {
		cachePath = filepath.Join(v.cfg.CacheDir, "rtl-refcheck-"+refCacheVersion+"-"+key+".json")
		if b, err := os.ReadFile(cachePath); err == nil {
			var r refResult
			if json.Unmarshal(b, &r) == nil && (!r.OK || (r.Expected > 0 && r.CPUMicros > 0)) {
				if !r.OK || r.rebuild() == nil {
					r.definitive, r.assembled = true, ""
					return r, nil
				}
			}
		}
	}
	ceiling := runBudget{CPUSeconds: v.cfg.Limits.CPUSeconds,
		Why: fmt.Sprintf("the reference's budget: the ceiling cpu_seconds=%d", v.cfg.Limits.CPUSeconds)}
	var tr trustedResult
	o, n, err := v.runWithRetries(ctx, func(ctx context.Context) (jobOutcome, error) {
		var o jobOutcome
		var err error
		tr, o, err = v.trustedJob(ctx, c, dutRef, ceiling)
		return o, err
	})
	if err != nil {
		return refResult{}, err
	}
	r := refResult{Attempts: n, assembled: assembled}
	fail := func(o jobOutcome, what string) refResult {
		switch {
		case engine.IsInfraStage(o.Stage):
			r.Stage, r.Cause = o.Stage, "reference self-check: "+what+o.Cause
			r.definitive = !engine.Transient(o.Stage)
		default:
			r.Stage = engine.StageReferenceSelfCheck
			r.Cause = fmt.Sprintf("reference fails its own harness under %s (%s): %s%s: %s",
				v.sim.Name(), toolVersions(v.sim.Tools()), what, o.Stage, o.Cause)
			r.definitive = true
		}
		return r
	}
	if o.Status != engine.StatusPass {
		return v.storeRef(cachePath, fail(o, "")), nil
	}
	r.HarnessSamples = o.Verdict.Samples
	r.Trace, r.SampleLog, r.Sampled, r.Timescale, r.In, r.Out = tr.trace, tr.samples, tr.sampled, tr.timescale, tr.in, tr.out
	if err := r.rebuild(); err != nil {
		return v.storeRef(cachePath, fail(jobOutcome{Stage: engine.StageNoVerdict, Cause: err.Error()}, "trace: ")), nil
	}
	// The replay of the reference must reproduce the reference's own trace:
	// that is what makes the candidate's replay a faithful stand-in for
	// the harness.
	ro, n2, err := v.findSplits(ctx, &r, dutRef, c.DUT(), ceiling)
	if err != nil {
		return refResult{}, err
	}
	r.Attempts += n2
	if ro.Status != engine.StatusPass {
		return v.storeRef(cachePath, fail(ro, "the replay of the recorded inputs does not reproduce the reference's trace: ")), nil
	}
	r.OK, r.Expected, r.definitive, r.outcome = true, ro.Verdict.Samples, true, ro
	r.CPUMicros = max(o.CPU.Microseconds(), ro.CPU.Microseconds(), 1)
	return v.storeRef(cachePath, r), nil
}

// rebuild parses the stored trace into the in-memory reference trace and
// derives the verifier-strength facts from it.
func (r *refResult) rebuild() error {
	recs, err := parseTrace([]byte(r.Trace), len(r.In), len(r.Out))
	if err != nil {
		return err
	}
	var samples []int64
	if r.Sampled {
		s, err := parseTrace([]byte(r.SampleLog), 0, 0)
		if err != nil {
			return err
		}
		samples = s.Samples
	}
	rt, err := buildRefTrace(r.In, r.Out, recs, samples, r.Sampled && len(samples) > 0)
	if err != nil {
		return err
	}
	if len(r.Split) > 0 {
		split := map[int64]bool{}
		for _, t := range r.Split {
			split[t] = true
		}
		rt = rt.withSplit(split)
	}
	if len(rt.Samples) == 0 {
		return fmt.Errorf("%w: the reference trace has no sample instants", ErrParse)
	}
	r.rt = rt
	toggling, defined, vary := outputActivity(rt)
	r.TogglingOutputs, r.DefinedSamples = toggling, defined
	switch {
	case defined == 0:
		r.Weak = fmt.Sprintf("the reference's outputs are x (don't-care) at all its %d samples, so nothing is compared", len(rt.Samples))
	case toggling == 0 && vary:
		r.Weak = fmt.Sprintf("no output of the reference takes two defined values over its %d samples (defined at %d) while its inputs vary, so a constant candidate passes", len(rt.Samples), defined)
	default:
		r.Weak = ""
	}
	return nil
}

// maxSplitRuns bounds the replays findSplits may spend on one reference.
const maxSplitRuns = 64

// findSplits replays the reference and, while the replay diverges from the
// recorded trace, looks for the racy timestep (a clock edge raced by
// blocking stimulus) whose other order the reference saw: the latest racy
// timesteps before the first divergence are tried in turn, and a change is
// kept when it moves the first divergence later. The schedule found is the
// stimulus as the reference consumed it, and candidates get the same one.
func (v *Verifier) findSplits(ctx context.Context, r *refResult, dutRef, dut string, budget runBudget) (jobOutcome, int32, error) {
	var attempts int32
	run := func(rt *refTrace) (jobOutcome, traceComparison, error) {
		var cmp traceComparison
		o, n, err := v.runWithRetries(ctx, func(ctx context.Context) (jobOutcome, error) {
			var o jobOutcome
			var err error
			o, cmp, err = v.replayCompare(ctx, rt, r.Timescale, dutRef, dut, budget)
			return o, err
		})
		attempts += n
		return o, cmp, err
	}
	o, cmp, err := run(r.rt)
	if err != nil {
		return o, attempts, err
	}
	racy := r.rt.racyTimes()
	split := map[int64]bool{}
	runs := 1
	for o.Stage == engine.StageMismatch && cmp.FirstT >= 0 && runs < maxSplitRuns {
		improved := false
		tried := 0
		for k := len(racy) - 1; k >= 0 && tried < 6 && runs < maxSplitRuns; k-- {
			t := racy[k]
			if t >= cmp.FirstT {
				continue
			}
			trial := map[int64]bool{}
			for x := range split {
				trial[x] = true
			}
			if trial[t] {
				delete(trial, t)
			} else {
				trial[t] = true
			}
			tried++
			runs++
			rt := r.rt.withSplit(trial)
			o2, c2, err := run(rt)
			if err != nil {
				return o2, attempts, err
			}
			if o2.Status == engine.StatusPass || (o2.Stage == engine.StageMismatch && c2.FirstT > cmp.FirstT) {
				split, o, cmp, r.rt = trial, o2, c2, rt
				improved = true
				break
			}
		}
		if !improved {
			break
		}
	}
	r.Split = nil
	for t := range split {
		r.Split = append(r.Split, t)
	}
	sort.Slice(r.Split, func(i, j int) bool { return r.Split[i] < r.Split[j] })
	return o, attempts, nil
}

func (v *Verifier) storeRef(cachePath string, r refResult) refResult {
	if cachePath != "" && r.definitive {
		if b, err := json.Marshal(r); err == nil {
			_ = engine.WriteFileAtomic(cachePath, b)
		}
	}
	return r
}

func toolVersions(ts []engine.Tool) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.Version)
	}
	return strings.Join(parts, ", ")
}

// ReferenceCandidateID is the candidate_id of reference self-check rows.
const ReferenceCandidateID = engine.ReferenceCandidateID

// VerifyReferences runs every item's reference self-check (cached per task
// and toolchain; engine.Judge's SelfCheck) through the engine's one fan-out
// (engine.FanOut) and returns one evidence row per item, candidate_id "reference": pass when
// the reference passes its own harness, otherwise unjudged with the stage
// that says why (reference_self_check when the reference itself fails under
// this toolchain). The reference is trusted, so it is not screened.
func (v *Verifier) VerifyReferences(ctx context.Context, items []engine.Item) ([]engine.Evidence, error) {
	out := make([]engine.Evidence, len(items))
	err := engine.FanOut(ctx, v.cfg.Workers, len(items), func(ctx context.Context, i int) error {
		var err error
		out[i], err = v.verifyReference(ctx, items[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (v *Verifier) verifyReference(ctx context.Context, item engine.Item) (engine.Evidence, error) {
	ev := engine.Evidence{ItemID: item.ItemID, CandidateID: ReferenceCandidateID}
	ev.Provenance.Verifier = "rtl"
	ev.Provenance.Toolchain = v.sim.Tools()
	ev.Provenance.Flags = v.sim.Flags()
	ev.Provenance.Inputs = []engine.InputHash{
		{Name: "harness", SHA256: sha(item.Verifier.Harness)},
		{Name: "reference", SHA256: sha(item.Reference)},
		{Name: "contract", SHA256: sha(contractKey(&item))}}
	if st, cause := v.sim.Check(); st != "" {
		return finish(ev, infraOutcome(st, cause), 0), nil
	}
	if st, cause := isolationUnavailable(); st != "" {
		return finish(ev, infraOutcome(st, cause), 0), nil
	}
	c, err := ContractFor(item)
	if err != nil {
		return finish(ev, infraOutcome(engine.StagePayloadCorrupt, err.Error()), 0), nil
	}
	ev.Provenance.Verifier = "rtl/" + c.Kind() + "/" + v.sim.Name()
	ref, err := v.referenceCheck(ctx, item, c)
	if err != nil {
		return ev, err
	}
	if !ref.OK {
		return finish(ev, infraOutcome(ref.Stage, ref.Cause), ref.Attempts), nil
	}
	o := ref.outcome
	if o.Status == "" { // loaded from the on-disk cache: the verdict without its run
		o = jobOutcome{Status: engine.StatusPass}
	}
	if ref.Weak != "" {
		o.Status, o.Stage, o.Cause = engine.StatusUnjudged, engine.StageWeakVerifier, ref.Weak
	}
	// cpu_time_ms is the base of the candidates' budgets: the larger of
	// the trusted run's and the reference replay's CPU time.
	o.CPU = ref.CPU()
	ev = finish(ev, o, ref.Attempts)
	ev.Measurements = append(ev.Measurements, engine.IntM("expected_samples", ref.Expected),
		engine.IntM("harness_samples", ref.HarnessSamples),
		engine.IntM("toggling_outputs", int64(ref.TogglingOutputs)),
		engine.IntM("defined_samples", int64(ref.DefinedSamples)),
		engine.IntM("outputs", int64(len(ref.Out))),
		engine.TextM("sampling", ref.rt.Sampling),
		engine.IntM("candidate_cpu_budget_s", int64(v.cfg.Limits.CandidateCPUSeconds(ref.CPU()))))
	return ev, nil
}
