package engine

import (
	"context"
	"strings"
)

// ReferenceRuler is a judge's rule, in a verify stage, on an item whose
// reference it self-checked: the item as kept (reference_status set, any
// measured strength recorded) or a rejection, and the self-check's evidence
// as it is written. A judge without one is ruled by DefaultReferenceRuling.
type ReferenceRuler interface {
	RuleReference(ctx context.Context, item Item, selfCheck Evidence) (Item, Evidence, *Rejection, error)
}

// DefaultReferenceRuling keeps an item whose reference passed (verified)
// and rejects the rest: reference_failed when its own verifier rejects the
// reference, weak_verifier when the harness accepts trivial candidates,
// unjudged otherwise — unless keepUnjudged, which keeps an unjudged item
// marked unjudged (a GPU task on a host without a GPU).
func DefaultReferenceRuling(it Item, ev Evidence, keepUnjudged bool) (Item, *Rejection) {
	it.ReferenceStatus = ReferenceStatusOf(ev)
	reject := func(gate, reason string) (Item, *Rejection) {
		return it, &Rejection{ItemID: it.ItemID, Gate: gate, Reason: reason, Detail: ev.FailureStage + ": " + ev.Cause}
	}
	switch {
	case ev.Status == StatusPass:
		return it, nil
	case it.ReferenceStatus == RefFailed:
		return reject("reference_self_check", "reference_failed")
	case ev.FailureStage == StageWeakVerifier:
		return reject("verifier_strength", "weak_verifier")
	case keepUnjudged:
		return it, nil
	default:
		return reject("reference_self_check", "unjudged")
	}
}

// RunVerifyStage is the one verify stage (types verify, verify_rtl,
// verify_kernel): every item whose domain has a judge in the set is
// self-checked and ruled on (its judge's ReferenceRuler, else
// DefaultReferenceRuling); items of other domains pass through unchanged;
// upstream "candidates" rows are judged by their item's domain. It writes
// "items" (in input order), "evidence" (self-checks, then candidates) and
// "rejections". It holds the stage's items, candidates and evidence in
// memory: a part of a sharded stage, whose candidates need their items.
func RunVerifyStage(ctx context.Context, sc *StageContext, judges *Judges) error {
	items, err := ReadInputs[Item](sc, "items")
	if err != nil {
		return err
	}
	cands, err := ReadInputs[Candidate](sc, "candidates")
	if err != nil {
		return err
	}
	var checked []int // indexes into items of the self-checked ones
	for i, it := range items {
		if judges.For(it.Domain) != nil {
			checked = append(checked, i)
		}
	}
	p := sc.Progress(int64(len(checked) + len(cands)))
	defer p.Done()
	refs := make([]Evidence, len(checked))
	kept := make([]Item, len(checked))
	rejs := make([]*Rejection, len(checked))
	err = judges.fanOut(ctx, len(checked), func(ctx context.Context, k int) error {
		it := items[checked[k]]
		ev, err := judges.SelfCheck(ctx, it)
		if err != nil {
			return err
		}
		if r, ok := judges.For(it.Domain).(ReferenceRuler); ok {
			kept[k], refs[k], rejs[k], err = r.RuleReference(ctx, it, ev)
		} else {
			refs[k] = ev
			kept[k], rejs[k] = DefaultReferenceRuling(it, ev, false)
		}
		p.Add(1)
		return err
	})
	if err != nil {
		return err
	}
	var evs []Evidence
	if len(cands) > 0 {
		if evs, err = judges.JudgeAll(ctx, ItemsByID(items), cands); err != nil {
			return err
		}
		p.Add(int64(len(cands)))
	}
	itemsW, err := StageWriter[Item](sc, "items")
	if err != nil {
		return err
	}
	evW, err := StageWriter[Evidence](sc, "evidence")
	if err != nil {
		return err
	}
	rejW, err := StageWriter[Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	slot := make(map[int]int, len(checked)) // item index → k
	for k, i := range checked {
		slot[i] = k
	}
	for i, it := range items {
		if k, ok := slot[i]; ok {
			sc.Count("reference."+refs[k].Status, 1)
			if r := rejs[k]; r != nil {
				r.ItemID, r.Stage = it.ItemID, sc.Name
				if len(r.Detail) > 1000 {
					r.Detail = strings.ToValidUTF8(r.Detail[:997], "") + "..."
				}
				sc.Count("rejected."+r.Reason, 1)
				if err := rejW.Write(*r); err != nil {
					return err
				}
				continue
			}
			it = kept[k]
		}
		if err := itemsW.Write(it); err != nil {
			return err
		}
	}
	if err := evW.Write(refs...); err != nil {
		return err
	}
	if err := evW.Write(evs...); err != nil {
		return err
	}
	for _, ev := range evs {
		sc.Count("candidates."+ev.Status, 1)
	}
	sc.Log.Info(sc.Name+" done", "items", len(items), "self_checked", len(checked), "candidates", len(cands),
		"judges", judges.Domains())
	return nil
}
