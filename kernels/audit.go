package kernels

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// The kernel domain's harness-strength audit (engine.StrengthAuditor),
// in the shape every domain reports: the trivial-candidate audit the
// backends run beside the reference (strength.go), read off the
// reference's self-check, and the mutants of every source registered for
// the kernel domain (ops/gates registers the other interface-preserving
// kernel evolution operators), judged as candidates. A mutant that fails
// after it ran is killed, one that does not build is invalid (as in RTL), one that passes survives, one left unjudged tests nothing and
// is noted. Reports free of transient infrastructure failures are kept
// per (task, registered sources) in a memo: the strength and audit gates both ask.

var _ engine.StrengthAuditor = (*Verifier)(nil)

// Audit implements engine.StrengthAuditor.
func (v *Verifier) Audit(ctx context.Context, item engine.Item) (engine.StrengthReport, error) {
	names, sources := engine.MutantSources(engine.DomainKernel)
	key := itemKey(item, fmt.Sprint(names), fmt.Sprint(v.cfg.StrengthMutants))
	if rep, ok := v.audits.get(key); ok {
		return rep, nil
	}
	rep, err := v.audit(ctx, item, names, sources)
	if err == nil && rep.Definitive {
		v.audits.put(key, rep)
	}
	return rep, err
}

func (v *Verifier) audit(ctx context.Context, item engine.Item, names []string, sources []engine.MutantSource) (engine.StrengthReport, error) {
	ref, err := v.SelfCheck(ctx, item)
	if err != nil {
		return engine.StrengthReport{}, err
	}
	tried, okT := ref.Measurement("verifier_strength_tried")
	killed, okK := ref.Measurement("verifier_strength_killed")
	if !okT || !okK || tried.Int == 0 {
		// No trivial audit ran: the reference did not get that far.
		st, cause := ref.FailureStage, ref.Cause
		if st == "" {
			st, cause = engine.StageWeakVerifier, "the backend ran no trivial-candidate audit"
		}
		return engine.StrengthReport{Stage: st, Cause: cause, Definitive: !engine.Transient(st)}, nil
	}
	rep := engine.StrengthReport{Measured: true, Definitive: true,
		Trivial: engine.StrengthTally{Tried: int(tried.Int), Killed: int(killed.Int)}}
	if sv, ok := ref.Measurement("verifier_strength_survivors"); ok && sv.Text != "" {
		for _, s := range strings.Split(sv.Text, ",") {
			rep.Trivial.Survivors = append(rep.Trivial.Survivors, engine.StrengthTrivialPrefix+s)
		}
	}
	rep.Candidates = rep.Trivial.Tried
	if rep.Weak() {
		// Every mutant's pass would be excused as weak_verifier: judging
		// them tells nothing more.
		return rep, nil
	}
	if ref.Status != engine.StatusPass && ref.FailureStage != engine.StageWeakVerifier {
		// The reference itself is not sound (reference_self_check, an
		// infrastructure fault): nothing is known about the comparison.
		return engine.StrengthReport{Stage: ref.FailureStage, Cause: ref.Cause, Definitive: !engine.Transient(ref.FailureStage)}, nil
	}
	max := v.cfg.StrengthMutants
	var mutants []engine.StrengthCandidate
	for k, src := range sources {
		ms := src(item, item.Reference, item.Interface.Top, max)
		if len(ms) == 0 {
			rep.Notes = append(rep.Notes, names[k]+" mutants: none apply")
		}
		for _, m := range ms {
			if len(mutants) < max {
				mutants = append(mutants, m)
			}
		}
	}
	rep.NothingToMutate = len(mutants) == 0
	for _, m := range mutants {
		name := engine.StrengthMutantPrefix + m.Name
		ev, err := v.Judge(ctx, item, engine.Candidate{ItemID: item.ItemID, CandidateID: name, Code: m.Code})
		if err != nil {
			return engine.StrengthReport{}, err
		}
		rep.Candidates++
		switch {
		case ev.Status == engine.StatusFail && (ev.FailureStage == engine.StageStatic || ev.FailureStage == engine.StageCompile):
			// A mutant that never ran tests nothing about the comparison.
			rep.Mutants.Invalid = append(rep.Mutants.Invalid, name)
		case ev.Status == engine.StatusFail:
			rep.Mutants.Tried++
			rep.Mutants.Killed++
		case ev.Status == engine.StatusPass:
			rep.Mutants.Tried++
			rep.Mutants.Survivors = append(rep.Mutants.Survivors, name)
		default:
			rep.Mutants.Invalid = append(rep.Mutants.Invalid, name)
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s unjudged at %s: %s", name, ev.FailureStage, ev.Cause))
			rep.Definitive = rep.Definitive && !engine.Transient(ev.FailureStage)
		}
	}
	return rep, nil
}
