package gates

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// RegisterMutantSources registers the evolution operators as mutant sources
// of every domain's harness-strength audit (engine.RegisterMutantSource):
// for RTL the interface-preserving behavioural operators, for kernels the
// other interface-preserving kernel operators. The verifier packages cannot
// import them. RegisterStages and New call it; it is idempotent.
func RegisterMutantSources() {
	registerOnce.Do(func() {
		engine.RegisterMutantSource(engine.DomainRTL, "evolve_operators", evolveMutants)
		engine.RegisterMutantSource(engine.DomainKernel, "evolve_operators", kernelMutants)
	})
}

var registerOnce sync.Once

// mutationOperators are the interface-preserving, behaviour-changing
// evolution operators, in a fixed order.
var mutationOperators = []string{"arith_swap", "compare_swap", "counter_modulus", "fsm_transition", "fsm_output",
	"shift_direction", "reset_polarity", "reset_sync_async"}

func evolveMutants(item engine.Item, ref, dut string, max int) []engine.StrengthCandidate {
	d, err := vlog.Parse(ref, dut)
	if err != nil {
		return nil
	}
	iface := item.Interface
	var out []engine.StrengthCandidate
	for _, name := range mutationOperators {
		if len(out) >= max {
			break
		}
		op, ok := evolve.OperatorByName(name)
		if !ok {
			continue
		}
		m, err := op.Apply(d, iface)
		if err != nil {
			continue
		}
		out = append(out, engine.StrengthCandidate{Name: name, Code: m.Source})
	}
	return out
}

// kernelMutants are the other interface-preserving kernel operators
// applied to an evolved kernel reference (not the operator that made it).
func kernelMutants(item engine.Item, ref, _ string, max int) []engine.StrengthCandidate {
	var out []engine.StrengthCandidate
	for _, op := range evolve.KernelOperators() {
		if len(out) >= max || op.Name == item.Operator || !op.PreservesInterface {
			continue
		}
		m, err := op.Apply(ref, item.Interface, item.Verifier.Harness)
		if err != nil {
			continue
		}
		out = append(out, engine.StrengthCandidate{Name: op.Name, Code: m.Source})
	}
	return out
}

// audit runs the harness-strength audit of every candidate, whatever its
// domain, through its judge (engine.Judges.Audit; cached there), records
// it on the item, and rejects a weak verifier: any trivial survivor, a
// mutant kill rate under the domain's threshold, or a task whose strength
// cannot be measured. A reference that fails its own verifier is deferred
// to the audit gate.
func (g *strengthGate) audit(ctx context.Context, cands []*Candidate) error {
	reps := make([]engine.StrengthReport, len(cands))
	if err := engine.FanOut(ctx, g.env.Judges.Workers(), len(cands), func(ctx context.Context, i int) error {
		r, err := g.env.Judges.Audit(ctx, cands[i].Item)
		reps[i] = r
		return err
	}); err != nil {
		return err
	}
	for i, c := range cands {
		c.Item.VerifierStrength = reps[i].ItemStrength()
		switch reason, detail := strengthVerdict(reps[i], g.cfg.minKillRate(c.Item.Domain)); reason {
		case "":
		case deferToAudit:
			c.Deferred = GateStrength
		default:
			c.reject(GateStrength, reason, detail)
		}
	}
	return nil
}

// deferToAudit: the reference fails its own verifier, which the audit gate
// judges.
const deferToAudit = "defer"

// strengthVerdict reads an audit report against a domain's mutant kill-rate
// threshold: "" admits. One rule for every domain.
func strengthVerdict(rep engine.StrengthReport, minKillRate float64) (reason, detail string) {
	rate, judged := rep.MutantKillRate()
	switch {
	case rep.Stage == engine.StageReferenceSelfCheck:
		return deferToAudit, ""
	case !rep.Measured && engine.IsInfraStage(rep.Stage) && rep.Stage != engine.StageWeakVerifier:
		return ReasonUnjudged, rep.Summary()
	case !rep.Measured:
		return ReasonWeakVerifier, rep.Summary()
	case rep.Weak():
		return ReasonWeakVerifier, "the verifier passes trivial candidates (" + strings.Join(rep.Trivial.Survivors, ", ") + "); " + rep.Summary()
	case !judged && !rep.NothingToMutate:
		return ReasonWeakVerifier, "no mutant of the reference could be judged (" + strings.Join(rep.Notes, "; ") + ")"
	case judged && rate < minKillRate:
		return ReasonWeakVerifier, fmt.Sprintf("the verifier kills %d of %d mutants (want >= %.0f%%); survivors: %s",
			rep.Mutants.Killed, rep.Mutants.Tried, 100*minKillRate, strings.Join(rep.Mutants.Survivors, ", "))
	}
	return "", ""
}

// strengthOf is the (cached) audit of an item for the audit gate's
// reference evidence; the zero report when the audit cannot be read.
func strengthOf(ctx context.Context, js *engine.Judges, it engine.Item) engine.StrengthReport {
	r, err := js.Audit(ctx, it)
	if err != nil {
		return engine.StrengthReport{}
	}
	return r
}
