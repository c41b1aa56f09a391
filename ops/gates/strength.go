package gates

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/rtl"
)

// strengthGate checks that the evolved verifier discriminates: the parent
// reference (adapted to the evolved interface, see evolve.AdaptParent) must
// fail it, except on routes that keep the parent's behaviour (solution-first,
// instruction-first), and the verifier must kill every trivial candidate and
// enough mutants of the evolved reference (RTL: the harness-strength audit,
// rtl.Verifier.Strength; kernels: the other interface-preserving kernel
// operators). Candidates run in one batch through the verifier's pool.
type strengthGate struct {
	cfg StrengthConfig
	env Env

	mu     sync.Mutex
	ifaces map[string]engine.Interface // parent id -> extracted interface
}

func (g *strengthGate) Name() string { return GateStrength }

// Candidate ids of the strength runs.
const (
	CandParent     = "parent"
	candMutantPref = "mutant:"
)

func keepsBehaviour(it *engine.Item) bool {
	return it.Route == engine.RouteSolutionFirst || it.Route == engine.RouteInstructionFirst
}

func (g *strengthGate) parentIface(ctx context.Context, p *engine.Item) (engine.Interface, error) {
	g.mu.Lock()
	if g.ifaces == nil {
		g.ifaces = map[string]engine.Interface{}
	}
	if i, ok := g.ifaces[p.ItemID]; ok {
		g.mu.Unlock()
		return i, nil
	}
	g.mu.Unlock()
	i, err := rtl.ExtractInterface(ctx, p.Reference, rtl.RefModuleName)
	if err != nil {
		return i, err
	}
	g.mu.Lock()
	g.ifaces[p.ItemID] = i
	g.mu.Unlock()
	return i, nil
}

func (g *strengthGate) Check(ctx context.Context, cands []*Candidate) error {
	var rtlCands, kernelCands []*Candidate
	for _, c := range cands {
		switch c.Item.Domain {
		case engine.DomainKernel:
			kernelCands = append(kernelCands, c)
		case engine.DomainRTL:
			rtlCands = append(rtlCands, c)
		default:
			c.reject(GateStrength, ReasonUnjudged, "no verifier for domain "+c.Item.Domain)
		}
	}
	// Trivial candidates and mutants of the evolved reference, every domain
	// through its judge's audit (strength_audit.go); then the parent.
	if err := g.audit(ctx, append(append([]*Candidate(nil), rtlCands...), kernelCands...)); err != nil {
		return err
	}
	if err := g.checkKernels(ctx, kernelCands); err != nil {
		return err
	}
	if len(rtlCands) == 0 {
		return nil
	}
	var items []engine.Item
	var runs []engine.Candidate
	owner := map[int]*Candidate{}
	for _, c := range rtlCands {
		it := c.Item
		if c.Rejection != nil || c.Deferred != "" || keepsBehaviour(&it) {
			continue
		}
		if c.Parent == nil {
			c.reject(GateStrength, ReasonParentMissing, "parent "+it.ParentID+" is not among the inputs, so its failure cannot be checked")
			continue
		}
		piface, err := g.parentIface(ctx, c.Parent)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.reject(GateStrength, ReasonUnjudged, "parent interface extraction failed: "+err.Error())
			continue
		}
		code, err := evolve.AdaptParent(c.Parent.Reference, piface, it.Interface)
		if err != nil {
			c.reject(GateStrength, ReasonUnjudged, "adapting the parent: "+err.Error())
			continue
		}
		owner[len(runs)] = c
		runs = append(runs, engine.Candidate{ItemID: it.ItemID, CandidateID: CandParent, Code: code})
		items = append(items, it)
	}
	if len(runs) == 0 {
		return nil
	}
	evs, err := g.env.Judges.JudgeAll(ctx, engine.ItemsByID(items), runs)
	if err != nil {
		return err
	}
	g.settle(evs, owner)
	return nil
}

// checkKernels runs the parent reference through the kernel verifier,
// which judges against the item's (evolved) reference (the mutants ran in
// the audit). Without a kernel verifier, or without the backend a task
// needs, the items stay unjudged and are not admitted.
func (g *strengthGate) checkKernels(ctx context.Context, cands []*Candidate) error {
	if len(cands) == 0 {
		return nil
	}
	if g.env.Judges.For(engine.DomainKernel) == nil {
		for _, c := range cands {
			c.reject(GateStrength, ReasonUnjudged, "no kernel verifier configured")
		}
		return nil
	}
	items := map[string]engine.Item{}
	var runs []engine.Candidate
	owner := map[int]*Candidate{}
	for _, c := range cands {
		it := c.Item
		if c.Rejection != nil || c.Deferred != "" || keepsBehaviour(&it) {
			continue
		}
		if c.Parent == nil {
			c.reject(GateStrength, ReasonParentMissing, "parent "+it.ParentID+" is not among the inputs, so its failure cannot be checked")
			continue
		}
		items[it.ItemID] = it
		owner[len(runs)] = c
		runs = append(runs, engine.Candidate{ItemID: it.ItemID, CandidateID: CandParent, Code: c.Parent.Reference})
	}
	if len(runs) == 0 {
		return nil
	}
	start := time.Now()
	evs, err := g.env.Judges.JudgeAll(ctx, items, runs)
	if err != nil {
		return err
	}
	shareWallTime(evs, time.Since(start))
	g.settle(evs, owner)
	return nil
}

// measWallShare is a run's even share of its batch's wall time.
const measWallShare = "wall_time_share_ms"

// shareWallTime gives kernel evidence (which carries no per-run wall time)
// an even share of its batch's wall time, so the yield report's cost per
// admitted item covers kernels too.
func shareWallTime(evs []engine.Evidence, d time.Duration) {
	if len(evs) == 0 {
		return
	}
	ms := float64(d.Microseconds()) / 1000 / float64(len(evs))
	for i := range evs {
		if _, ok := evs[i].Measurement("wall_time_ms"); !ok {
			evs[i].Measurements = append(evs[i].Measurements, engine.FloatM(measWallShare, ms))
		}
	}
}

// settle reads the strength runs of each candidate.
func (g *strengthGate) settle(evs []engine.Evidence, owner map[int]*Candidate) {
	type tally struct {
		parent    *engine.Evidence
		refBroken bool
		unjudged  string
	}
	tallies := map[*Candidate]*tally{}
	for k, ev := range evs {
		c := owner[k]
		t := tallies[c]
		if t == nil {
			t = &tally{}
			tallies[c] = t
		}
		c.addEvidence(ev)
		switch {
		case ev.FailureStage == engine.StageReferenceSelfCheck:
			t.refBroken = true
		case ev.Status == engine.StatusUnjudged:
			t.unjudged = ev.FailureStage + ": " + ev.Cause
		case ev.CandidateID == CandParent:
			e := ev
			t.parent = &e
		}
	}
	for c, t := range tallies {
		switch {
		case t.refBroken:
			c.Deferred = GateStrength // the audit gate judges a reference that fails its own verifier
		case t.unjudged != "":
			c.reject(GateStrength, ReasonUnjudged, t.unjudged)
		case t.parent != nil && (t.parent.FailureStage == engine.StageStatic || t.parent.FailureStage == engine.StageCompile || t.parent.FailureStage == engine.StageElaborate):
			// The parent never ran against the evolved verifier, so its
			// "failure" says nothing about the change.
			c.reject(GateStrength, ReasonParentUnrunnable, fmt.Sprintf("the (adapted) parent does not build against the evolved verifier (%s: %s)", t.parent.FailureStage, t.parent.Cause))
		case t.parent != nil && t.parent.Status == engine.StatusPass:
			c.Distance = 0
			c.reject(GateStrength, ReasonNotDistinguished, fmt.Sprintf("the parent reference passes the evolved verifier (%s): the change is not observable", samplesText(t.parent)))
		default:
			if t.parent != nil {
				c.Distance = distance(t.parent)
				mm, counted := t.parent.Measurement("mismatches")
				if counted && t.parent.FailureStage == engine.StageMismatch && mm.Int < g.cfg.MinParentMismatches {
					c.reject(GateStrength, ReasonNotDistinguished, fmt.Sprintf("the parent mismatches on %d samples, fewer than %d", mm.Int, g.cfg.MinParentMismatches))
					continue
				}
			}
		}
	}
}

// ifaceAsRef is the interface as seen from the reference module (the
// mutant operators read clock/reset names from it; Top is not used).
func ifaceAsRef(i engine.Interface) engine.Interface {
	i.Top = rtl.RefModuleName
	return i
}

func samplesText(ev *engine.Evidence) string {
	mm, _ := ev.Measurement("mismatches")
	s, ok := ev.Measurement("samples")
	if !ok {
		if tr, ok := ev.Measurement("trials"); ok {
			return fmt.Sprintf("all %d trials within tolerance", tr.Int)
		}
		return "pass"
	}
	return fmt.Sprintf("%d mismatches in %d samples", mm.Int, s.Int)
}

var reKernelBad = regexp.MustCompile(`(\d+) of (\d+) elements outside tolerance`)

// distance is the fraction of compared samples that differ; a parent that
// fails before any comparison (it does not compile against the evolved
// harness) counts as 1.
func distance(ev *engine.Evidence) float64 {
	s, ok := ev.Measurement("samples")
	if !ok || s.Int <= 0 {
		// Kernel verdicts carry the first failing output's element count
		// in the cause ("N of M elements outside tolerance").
		if m := reKernelBad.FindStringSubmatch(ev.Cause); m != nil {
			bad, _ := strconv.ParseFloat(m[1], 64)
			all, _ := strconv.ParseFloat(m[2], 64)
			if all > 0 {
				return bad / all
			}
		}
		return 1
	}
	mm, _ := ev.Measurement("mismatches")
	return float64(mm.Int) / float64(s.Int)
}
