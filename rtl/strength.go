package rtl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// Harness-strength audit.
//
// A pass means something only if the harness could have failed. Before a
// task's candidates are judged, the verifier judges, through the very path
// candidates take (screen, contract, sandboxed build and run, retries,
// budgets), candidates that are known to be wrong:
//
//   - trivial candidates built from the task's interface as modules named as
//     the DUT: an empty body, every output Z, X, all zeros, all ones, and the
//     reference wrapped with one output stuck at 0, stuck at 1 or inverted
//     (for every output) — "trivial:<name>";
//   - mutants of the reference: netlist mutants made MCY-style by Yosys
//     (`mutate -list`: one cell port bit inverted, stuck at 0/1, or
//     conditionally inverted) — "mutant:netlist_<k>" — and those of every
//     registered MutantSource (ops/gates registers the evolution operators).
//
// A candidate that fails at mismatch, no_verdict, simulate, timeout or
// resource is killed. One that never built (static, compile, elaborate)
// tests nothing and is "invalid" (left out of tried). One that passes is
// probed: the reference and the candidate side by side under a generated
// differential harness (GenerateDifferentialTB, 4-state !== on every output,
// seeded random stimulus); if the probe sees no difference the candidate is
// "equivalent" to the reference (a constant-0 candidate for a task whose
// answer is constant 0, an equivalent mutant) and left out of tried,
// otherwise it is a survivor. A task with any trivial survivor is weak
// (Weak): its candidates' passes become unjudged at stage weak_verifier,
// and the admit stage rejects it. The mutant kill rate is an admission
// threshold (gates config strength.min_kill_ratio).
//
// The report is cached per (task, toolchain, audit version) in memory and,
// with Config.CacheDir, on disk, like the reference self-check: a second
// run starts no process for it. A report with an unresolved infrastructure
// failure is not cached.

// strengthVersion changes whenever the candidate set or the rules change,
// so a cached report from an older audit is not reused.
const strengthVersion = "strength-v2" // v2: the batch replay (strength_batch.go)

// Candidate-name prefixes.
const (
	StrengthTrivialPrefix = engine.StrengthTrivialPrefix
	StrengthMutantPrefix  = engine.StrengthMutantPrefix
)

// The audit's types are the engine's, one shape for every domain.
type (
	StrengthCandidate = engine.StrengthCandidate
	StrengthTally     = engine.StrengthTally
	StrengthReport    = engine.StrengthReport
)

// Audit implements engine.StrengthAuditor: the harness-strength audit.
func (v *Verifier) Audit(ctx context.Context, item engine.Item) (engine.StrengthReport, error) {
	return v.Strength(ctx, item)
}

// registeredSources are the RTL audit's registered mutant sources
// (engine.RegisterMutantSource for DomainRTL).
func registeredSources() ([]string, []engine.MutantSource) {
	return engine.MutantSources(engine.DomainRTL)
}

// strengthState is the verifier's audit cache and its process bound.
type strengthState struct {
	once sync.Once
	reps flight[StrengthReport]
	sem  chan struct{} // bounds the audit's concurrent jobs across nested fan-outs
}

func (v *Verifier) strengthInit() {
	v.strength.once.Do(func() {
		v.strength.sem = make(chan struct{}, v.cfg.Workers)
	})
}

// Strength audits item's harness (cached per task and toolchain). The
// error is non-nil only when ctx is cancelled; a task whose audit cannot
// run gets a report with Measured false and the stage that says why.
func (v *Verifier) Strength(ctx context.Context, item engine.Item) (StrengthReport, error) {
	v.strengthInit()
	if st, cause := v.sim.Check(); st != "" {
		return StrengthReport{Stage: st, Cause: cause}, nil
	}
	audited := auditedItem(item)
	c, err := ContractFor(audited)
	if err != nil {
		return StrengthReport{Stage: engine.StagePayloadCorrupt, Cause: err.Error()}, nil
	}
	names, _ := registeredSources()
	key := v.strengthKey(audited, c, names)
	return v.strength.reps.do(ctx, key, func(r StrengthReport) bool { return r.Definitive },
		func() (StrengthReport, error) { return v.computeStrength(ctx, audited, c, key) })
}

// auditedItem is the item whose harness is audited: a completion item's
// harness is its differential harness (the same judge), so it is audited
// as a differential item with full-module candidates.
func auditedItem(item engine.Item) engine.Item {
	if item.Verifier.Kind == engine.VerifierCompletion {
		item.Verifier.Kind = engine.VerifierDifferential
	}
	return item
}

func (v *Verifier) strengthKey(item engine.Item, c Contract, sources []string) string {
	// The trusted texts, contract and toolchain, as in refKey but without
	// the instruction: the audit judges the harness, so an item that only
	// re-words its parent's instruction shares the parent's audit.
	h := sha256.New()
	for _, s := range []string{strengthVersion, c.Kind(), contractKey(&item), item.Verifier.Harness, item.Reference} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	for _, t := range v.sim.Tools() {
		fmt.Fprintf(h, "%s=%s;", t.Name, t.Version)
	}
	fmt.Fprintf(h, "%q;%q;%d;%v;%d", v.sim.Flags(), sources, v.cfg.StrengthMutants, v.cfg.TrustTwoState, len(item.Interface.Ports))
	for _, p := range item.Interface.Ports {
		fmt.Fprintf(h, "%s/%s/%d/%v;", p.Name, p.Direction, p.Width, p.Signed)
	}
	fmt.Fprintf(h, "%s/%s/%s/%s", item.Interface.Clock, item.Interface.Reset, item.Interface.ResetPolarity, item.Interface.ResetKind)
	return hex.EncodeToString(h.Sum(nil))
}

func (v *Verifier) computeStrength(ctx context.Context, item engine.Item, c Contract, key string) (StrengthReport, error) {
	cachePath := ""
	if v.cfg.CacheDir != "" {
		cachePath = filepath.Join(v.cfg.CacheDir, "rtl-"+strengthVersion+"-"+key+".json")
		if b, err := os.ReadFile(cachePath); err == nil {
			var r StrengthReport
			if json.Unmarshal(b, &r) == nil {
				r.Definitive = true
				return r, nil
			}
		}
	}
	rep, err := v.audit(ctx, item, c)
	if err != nil {
		return rep, err
	}
	if cachePath != "" && rep.Definitive {
		if b, err := json.Marshal(rep); err == nil {
			_ = engine.WriteFileAtomic(cachePath, b)
		}
	}
	return rep, nil
}

// audit generates the candidates, judges them and probes the ones that pass.
func (v *Verifier) audit(ctx context.Context, item engine.Item, c Contract) (StrengthReport, error) {
	ref, err := v.referenceCheck(ctx, item, c)
	if err != nil {
		return StrengthReport{}, err
	}
	if !ref.OK {
		// Nothing to measure against; the candidates are unjudged by the
		// reference check already.
		return StrengthReport{Stage: ref.Stage, Cause: ref.Cause, Definitive: ref.definitive}, nil
	}
	refCand, err := c.ReferenceCandidate()
	if err != nil {
		return StrengthReport{Stage: engine.StagePayloadCorrupt, Cause: "reference: " + err.Error(), Definitive: true}, nil
	}
	iface, err := v.strengthInterface(ctx, item, refCand, c.DUT())
	if err != nil {
		if ctx.Err() != nil {
			return StrengthReport{}, ctx.Err()
		}
		return StrengthReport{Stage: engine.StageWeakVerifier, Cause: "cannot build trivial candidates: " + err.Error(), Definitive: true}, nil
	}
	trivial, err := TrivialCandidates(refCand, c.DUT(), iface)
	if err != nil {
		return StrengthReport{Stage: engine.StageWeakVerifier, Cause: "cannot build trivial candidates: " + err.Error(), Definitive: true}, nil
	}
	rep := StrengthReport{Definitive: true}
	mutants, notes, nothing := v.strengthMutants(ctx, item, refCand, c.DUT(), iface)
	if ctx.Err() != nil {
		return StrengthReport{}, ctx.Err()
	}
	rep.Notes, rep.NothingToMutate = notes, nothing
	all := append(append([]StrengthCandidate(nil), trivial...), mutants...)
	rep.Candidates = len(all)
	evs, err := v.judgeStrengthBatched(ctx, item, c, all)
	if err != nil {
		return StrengthReport{}, err
	}
	var passed []int
	for i, ev := range evs {
		t := &rep.Mutants
		if strings.HasPrefix(all[i].Name, StrengthTrivialPrefix) {
			t = &rep.Trivial
		}
		switch {
		case ev.Status == engine.StatusPass:
			passed = append(passed, i)
		case ev.Status == engine.StatusUnjudged:
			rep.Stage, rep.Cause = ev.FailureStage, all[i].Name+": "+ev.Cause
			rep.Definitive = rep.Definitive && !engine.Transient(ev.FailureStage)
		case ev.FailureStage == engine.StageStatic || ev.FailureStage == engine.StageCompile || ev.FailureStage == engine.StageElaborate:
			t.Invalid = append(t.Invalid, all[i].Name)
		default:
			t.Tried++
			t.Killed++
		}
	}
	if rep.Stage != "" {
		return rep, nil // an audit candidate went unjudged: strength unknown
	}
	if len(passed) > 0 {
		eq, st, cause, definitive, err := v.probeEquivalence(ctx, item, c, iface, all, passed)
		if err != nil {
			return StrengthReport{}, err
		}
		if st != "" {
			return StrengthReport{Stage: st, Cause: cause, Definitive: definitive}, nil
		}
		for k, i := range passed {
			t := &rep.Mutants
			if strings.HasPrefix(all[i].Name, StrengthTrivialPrefix) {
				t = &rep.Trivial
			}
			if eq[k] {
				t.Equivalent = append(t.Equivalent, all[i].Name)
			} else {
				t.Tried++
				t.Survivors = append(t.Survivors, all[i].Name)
			}
		}
	}
	if rep.Trivial.Tried == 0 {
		return StrengthReport{Stage: engine.StageWeakVerifier, Cause: "no trivial candidate could be judged (all invalid or equivalent to the reference)", Definitive: true}, nil
	}
	rep.Measured = true
	return rep, nil
}

// strengthInterface is the item's declared interface, or the one Yosys
// reads from the reference when the item declares no ports (VerilogEval).
func (v *Verifier) strengthInterface(ctx context.Context, item engine.Item, refCand, dut string) (engine.Interface, error) {
	if len(item.Interface.Ports) > 0 {
		iface := item.Interface
		iface.Top = dut
		return iface, nil
	}
	return ExtractInterface(ctx, refCand, dut)
}

// judgeStrength judges the audit candidates through the candidates' path,
// bounded by the verifier's worker count across every concurrent audit.
func (v *Verifier) judgeStrength(ctx context.Context, item engine.Item, cands []StrengthCandidate) ([]engine.Evidence, error) {
	v.strengthInit()
	out := make([]engine.Evidence, len(cands))
	g, gctx := errgroup.WithContext(ctx)
	for i := range cands {
		g.Go(func() error {
			select {
			case v.strength.sem <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			defer func() { <-v.strength.sem }()
			ev, err := v.verifyOne(gctx, &item, engine.Candidate{ItemID: item.ItemID, CandidateID: cands[i].Name, Code: cands[i].Code})
			out[i] = ev
			return err
		})
	}
	return out, g.Wait()
}

// applyStrength turns passes on a weak (or unmeasured) harness into
// unjudged verdicts. Fails stand: a harness that kills a candidate has
// shown that candidate wrong whatever its strength.
func applyStrength(ev *engine.Evidence, rep StrengthReport) {
	if ev.Status != engine.StatusPass {
		return
	}
	switch {
	case !rep.Measured:
		st := rep.Stage
		if !engine.IsInfraStage(st) {
			st = engine.StageWeakVerifier
		}
		ev.Status, ev.FailureStage, ev.Cause = engine.StatusUnjudged, st, truncate(rep.Summary(), 500)
	case rep.Weak():
		ev.Status, ev.FailureStage = engine.StatusUnjudged, engine.StageWeakVerifier
		ev.Cause = truncate("the harness passes trivial candidates ("+strings.Join(rep.Trivial.Survivors, ", ")+"): "+rep.Summary(), 500)
	}
}

// strengthRejection is the verify_rtl stage's rejection reason for an
// audited item: weak_verifier for a weak or unmeasurable harness, unjudged
// when an infrastructure failure kept the audit from running; "" to keep.
func strengthRejection(r StrengthReport) string {
	switch {
	case r.Weak():
		return engine.StageWeakVerifier
	case r.Measured:
		return ""
	case engine.IsInfraStage(r.Stage) && r.Stage != engine.StageWeakVerifier:
		return "unjudged"
	default:
		return engine.StageWeakVerifier
	}
}
