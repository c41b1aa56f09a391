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
// "rejections".
//
// Items stream through a batch at a time (ReadBatches): what it holds is
// one batch of items and their self-checks, plus every upstream candidate
// and the items those candidates name, since a candidate's item may come
// anywhere in the input and the candidates are judged after the items.
func RunVerifyStage(ctx context.Context, sc *StageContext, judges *Judges) error {
	cands, err := ReadInputs[Candidate](sc, "candidates")
	if err != nil {
		return err
	}
	named := make(map[string]bool, len(cands))
	for _, c := range cands {
		named[c.ItemID] = true
	}
	w, err := openVerifyWriters(sc)
	if err != nil {
		return err
	}
	p := sc.Progress(sc.InputRows("items") + int64(len(cands)))
	defer p.Done()
	byID := map[string]Item{} // the items candidates name; the first of a repeated id wins
	var nItems, nChecked int
	err = ReadBatches[Item](ctx, sc, "items", BatchOptions{}).Each(func(items []Item) error {
		for _, it := range items {
			if _, seen := byID[it.ItemID]; named[it.ItemID] && !seen {
				byID[it.ItemID] = it
			}
		}
		n, err := verifyItems(ctx, sc, judges, items, w, p)
		nItems, nChecked = nItems+len(items), nChecked+n
		return err
	})
	if err != nil {
		return err
	}
	if len(cands) > 0 {
		evs, err := judges.JudgeAll(ctx, byID, cands)
		if err != nil {
			return err
		}
		p.Add(int64(len(cands)))
		if err := w.ev.Write(evs...); err != nil {
			return err
		}
		for _, ev := range evs {
			sc.Count("candidates."+ev.Status, 1)
		}
	}
	sc.Log.Info(sc.Name+" done", "items", nItems, "self_checked", nChecked, "candidates", len(cands),
		"judges", judges.Domains())
	return nil
}

// verifyWriters are a verify stage's outputs.
type verifyWriters struct {
	items *ShardWriter[Item]
	ev    *ShardWriter[Evidence]
	rej   *ShardWriter[Rejection]
}

func openVerifyWriters(sc *StageContext) (w verifyWriters, err error) {
	if w.items, err = StageWriter[Item](sc, "items"); err != nil {
		return w, err
	}
	if w.ev, err = StageWriter[Evidence](sc, "evidence"); err != nil {
		return w, err
	}
	w.rej, err = StageWriter[Rejection](sc, "rejections")
	return w, err
}

// verifyItems self-checks the items of one batch that have a judge, in
// parallel, and writes the batch's kept items, rejections and self-check
// evidence in input order. It returns how many it self-checked.
func verifyItems(ctx context.Context, sc *StageContext, judges *Judges, items []Item, w verifyWriters, p Progress) (int, error) {
	var checked []int // indexes into items of the self-checked ones
	for i, it := range items {
		if judges.For(it.Domain) != nil {
			checked = append(checked, i)
		}
	}
	refs := make([]Evidence, len(checked))
	kept := make([]Item, len(checked))
	rejs := make([]*Rejection, len(checked))
	err := judges.fanOut(ctx, len(checked), func(ctx context.Context, k int) error {
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
		return 0, err
	}
	p.Add(int64(len(items) - len(checked)))
	k := 0 // the next self-checked item
	for i, it := range items {
		if k < len(checked) && checked[k] == i {
			sc.Count("reference."+refs[k].Status, 1)
			r := rejs[k]
			it = kept[k]
			k++
			if r != nil {
				r.ItemID, r.Stage = items[i].ItemID, sc.Name
				if len(r.Detail) > 1000 {
					r.Detail = strings.ToValidUTF8(r.Detail[:997], "") + "..."
				}
				sc.Count("rejected."+r.Reason, 1)
				if err := w.rej.Write(*r); err != nil {
					return 0, err
				}
				continue
			}
		}
		if err := w.items.Write(it); err != nil {
			return 0, err
		}
	}
	return len(checked), w.ev.Write(refs...)
}
