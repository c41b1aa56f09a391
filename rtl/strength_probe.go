package rtl

import (
	"context"
	"hash/fnv"

	"github.com/crucible-data/crucible/engine"
)

// probeCycles is the length of the equivalence probe's stimulus.
const probeCycles = 1000

// probeEquivalence runs each audit candidate that passed the task's harness
// against the reference under a generated differential harness (every
// output compared with !== at both clock edges). eq[k] is true when the
// probe saw no difference for passed[k]: the candidate behaves like the
// reference, so its pass says nothing about the harness. When no probe can
// be built (an inout port, a port name the generator cannot use) every
// candidate counts as different: the audit fails closed. A non-empty stage
// means the probe itself could not be judged.
func (v *Verifier) probeEquivalence(ctx context.Context, item engine.Item, c Contract, iface engine.Interface,
	all []StrengthCandidate, passed []int) (eq []bool, stage, cause string, definitive bool, err error) {
	eq = make([]bool, len(passed))
	probe, perr := probeItem(item, c, iface)
	if perr != nil {
		v.log.Info("rtl: no equivalence probe; counting every passing audit candidate as a survivor", "item", item.ItemID, "err", perr)
		return eq, "", "", true, nil
	}
	// The probe's batch replay settles the candidates it tells apart from
	// the reference (not equivalent: survivors); the rest are probed alone.
	cands := make([]StrengthCandidate, len(passed))
	for k, i := range passed {
		cands[k] = all[i]
	}
	var evs []engine.Evidence
	if pc, cerr := ContractFor(probe); cerr == nil {
		evs, err = v.judgeStrengthBatched(ctx, probe, pc, cands)
	} else {
		evs, err = v.judgeStrength(ctx, probe, cands)
	}
	if err != nil {
		return nil, "", "", false, err
	}
	for k, ev := range evs {
		switch {
		case ev.Status == engine.StatusPass:
			eq[k] = true
		case ev.FailureStage == engine.StageReferenceSelfCheck || ev.FailureStage == engine.StageWeakVerifier:
			// The probe harness does not accept the reference itself (e.g. it
			// reads X where the task's harness does not look), or its random
			// stimulus leaves the reference's outputs without information (a
			// timer it never loads): no probe.
			return make([]bool, len(passed)), "", "", true, nil
		case ev.Status == engine.StatusUnjudged:
			return nil, ev.FailureStage, "equivalence probe of " + all[passed[k]].Name + ": " + ev.Cause, !engine.Transient(ev.FailureStage), nil
		}
	}
	return eq, "", "", true, nil
}

// probeItem is a differential item over the task's interface whose
// harness is generated and whose reference is the task's reference as
// RefModule.
func probeItem(item engine.Item, c Contract, iface engine.Interface) (engine.Item, error) {
	ref := item.Reference
	if c.Kind() == engine.VerifierSelfChecking {
		var err error
		if ref, err = RenameModule(item.Reference, c.DUT(), RefModuleName); err != nil {
			return engine.Item{}, err
		}
	}
	o := DefaultTBOptions()
	o.Cycles, o.DUT = probeCycles, c.DUT()
	h := fnv.New32a()
	h.Write([]byte(item.ItemID))
	o.Seed = int32(h.Sum32() & 0x7fffffff)
	tb, err := GenerateDifferentialTB(iface, o)
	if err != nil {
		return engine.Item{}, err
	}
	return engine.Item{ItemID: item.ItemID + "#strength-probe", Domain: engine.DomainRTL, Interface: iface, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: o.Top}}, nil
}
