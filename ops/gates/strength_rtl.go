package gates

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
	"github.com/crucible-data/crucible/rtl"
)

// RegisterRTLMutants adds the evolution operators to the mutants of the
// RTL harness-strength audit (rtl.Verifier.Strength), which rtl cannot
// import itself. RegisterStages and New call it; it is idempotent.
func RegisterRTLMutants() {
	registerOnce.Do(func() { rtl.RegisterMutantSource("evolve_operators", evolveMutants) })
}

var registerOnce sync.Once

// mutationOperators are the interface-preserving, behaviour-changing
// evolution operators, in a fixed order.
var mutationOperators = []string{"arith_swap", "compare_swap", "counter_modulus", "fsm_transition", "fsm_output",
	"shift_direction", "reset_polarity", "reset_sync_async"}

func evolveMutants(ref, dut string, iface engine.Interface, max int) []rtl.StrengthCandidate {
	d, err := vlog.Parse(ref, dut)
	if err != nil {
		return nil
	}
	var out []rtl.StrengthCandidate
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
		out = append(out, rtl.StrengthCandidate{Name: name, Code: m.Source})
	}
	return out
}

// auditRTL runs the strength audit for every RTL candidate (cached in the
// verifier), records it on the item, and rejects a weak verifier: any
// trivial survivor, a mutant kill rate under MinMutantKillRate, or a task
// whose strength cannot be measured. A reference that fails its own
// verifier is deferred to the audit gate, as before.
func (g *strengthGate) auditRTL(ctx context.Context, cands []*Candidate) error {
	reps := make([]rtl.StrengthReport, len(cands))
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(g.env.Judges.Workers())
	for i, c := range cands {
		eg.Go(func() error {
			r, err := g.env.rtlAuditor().Strength(gctx, c.Item)
			reps[i] = r
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for i, c := range cands {
		c.Item.VerifierStrength = reps[i].ItemStrength()
		switch reason, detail := strengthVerdict(reps[i], g.cfg); reason {
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

// strengthVerdict reads an audit report against the thresholds: "" admits.
func strengthVerdict(rep rtl.StrengthReport, cfg StrengthConfig) (reason, detail string) {
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
	case judged && rate < cfg.MinMutantKillRate:
		return ReasonWeakVerifier, fmt.Sprintf("the verifier kills %d of %d mutants (want >= %.0f%%); survivors: %s",
			rep.Mutants.Killed, rep.Mutants.Tried, 100*cfg.MinMutantKillRate, strings.Join(rep.Mutants.Survivors, ", "))
	}
	return "", ""
}

// strengthOf is the (cached) audit of an RTL item for the audit gate's
// reference evidence; the zero report when the audit cannot be read.
func strengthOf(ctx context.Context, v harnessAuditor, it engine.Item) rtl.StrengthReport {
	r, err := v.Strength(ctx, it)
	if err != nil {
		return rtl.StrengthReport{}
	}
	return r
}
