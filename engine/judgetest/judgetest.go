// Package judgetest is the conformance suite of engine.Judge: one set of
// assertions that every verifier (rtl.Verifier, kernels.Verifier) passes,
// the way one backend test suite holds every storage backend to one
// contract. A verifier package runs it from its own tests with a fixture
// of its domain.
package judgetest

import (
	"context"
	"errors"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// Fixture is one domain's material for the suite.
type Fixture struct {
	// Item is a well-formed task whose reference passes its own verifier.
	Item engine.Item
	// Right is a correct candidate that is not the reference's text.
	Right string
	// Wrong are candidates that do not implement the task; every one must fail.
	Wrong []string
	// BrokenReference replaces Item's reference for the self-check that
	// must come out unjudged at reference_self_check.
	BrokenReference string
}

// Run holds j to the engine.Judge contract. j is closed at the end.
func Run(t *testing.T, j engine.Judge, fx Fixture) {
	t.Helper()
	ctx := context.Background()
	if j.Domain() != fx.Item.Domain {
		t.Fatalf("Domain() = %q, fixture item is %q", j.Domain(), fx.Item.Domain)
	}
	if err := j.Check(ctx); err != nil {
		t.Fatalf("Check: this machine should judge %s (make setup installs the toolchains): %v", j.Domain(), err)
	}
	judges, err := engine.NewJudges(2, j)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := judges.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	t.Run("self-check passes the reference", func(t *testing.T) {
		ev, err := judges.SelfCheck(ctx, fx.Item)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Status != engine.StatusPass || ev.CandidateID != engine.ReferenceCandidateID || ev.ItemID != fx.Item.ItemID {
			t.Fatalf("self-check: %s/%s for %s/%s (%s); want pass for %s/reference", ev.Status, ev.FailureStage,
				ev.ItemID, ev.CandidateID, ev.Cause, fx.Item.ItemID)
		}
		if engine.ReferenceStatusOf(ev) != engine.RefVerified || ev.Provenance.Verifier == "" || ev.Attempts < 1 {
			t.Errorf("self-check evidence lacks provenance or attempts: %+v", ev.Provenance)
		}
	})

	t.Run("a broken reference is the item's fault", func(t *testing.T) {
		it := fx.Item
		it.ItemID += "-broken"
		it.Reference = fx.BrokenReference
		ev, err := judges.SelfCheck(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageReferenceSelfCheck {
			t.Fatalf("broken reference: %s/%s (%s); want unjudged/reference_self_check", ev.Status, ev.FailureStage, ev.Cause)
		}
		if engine.ReferenceStatusOf(ev) != engine.RefFailed {
			t.Errorf("reference_status %q, want failed", engine.ReferenceStatusOf(ev))
		}
	})

	t.Run("one fan-out, results indexed like the candidates", func(t *testing.T) {
		cands := []engine.Candidate{{ItemID: fx.Item.ItemID, CandidateID: "right", Code: fx.Right}}
		for i, w := range fx.Wrong {
			cands = append(cands, engine.Candidate{ItemID: fx.Item.ItemID, CandidateID: "wrong-" + string(rune('a'+i)), Code: w})
		}
		cands = append(cands,
			engine.Candidate{ItemID: fx.Item.ItemID, CandidateID: "empty", Code: ""},
			engine.Candidate{ItemID: "no-such-item", CandidateID: "orphan", Code: fx.Right})
		evs, err := judges.JudgeAll(ctx, engine.ItemsByID([]engine.Item{fx.Item}), cands)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(cands) {
			t.Fatalf("%d evidence rows for %d candidates", len(evs), len(cands))
		}
		for i, ev := range evs {
			if ev.ItemID != cands[i].ItemID || ev.CandidateID != cands[i].CandidateID {
				t.Errorf("row %d is %s/%s, want %s/%s", i, ev.ItemID, ev.CandidateID, cands[i].ItemID, cands[i].CandidateID)
			}
			if err := engine.CheckVerdict(ev); err != nil {
				t.Error(err)
			}
		}
		if evs[0].Status != engine.StatusPass {
			t.Errorf("correct candidate: %s/%s (%s), want pass", evs[0].Status, evs[0].FailureStage, evs[0].Cause)
		}
		for _, ev := range evs[1 : len(evs)-1] {
			if ev.Status != engine.StatusFail || engine.IsInfraStage(ev.FailureStage) {
				t.Errorf("%s: %s/%s (%s), want fail at a candidate stage", ev.CandidateID, ev.Status, ev.FailureStage, ev.Cause)
			}
		}
		if last := evs[len(evs)-1]; last.Status != engine.StatusUnjudged || last.FailureStage != engine.StagePayloadCorrupt {
			t.Errorf("candidate without an item: %s/%s, want unjudged/payload_corrupt", last.Status, last.FailureStage)
		}
	})

	t.Run("a domain without a judge is unjudged, not failed", func(t *testing.T) {
		it := fx.Item
		it.Domain = "analog"
		ev, err := judges.Judge(ctx, it, engine.Candidate{ItemID: it.ItemID, CandidateID: "x", Code: fx.Right})
		if err != nil {
			t.Fatal(err)
		}
		if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageToolchainUnsupported {
			t.Errorf("%s/%s, want unjudged/toolchain_unsupported", ev.Status, ev.FailureStage)
		}
	})

	t.Run("a cancelled call passes nothing", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		evs, err := judges.JudgeAll(cctx, engine.ItemsByID([]engine.Item{fx.Item}),
			[]engine.Candidate{{ItemID: fx.Item.ItemID, CandidateID: "late", Code: fx.Right}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("JudgeAll on a cancelled context: err %v, want context.Canceled", err)
		}
		for _, ev := range evs {
			if ev.Status == engine.StatusPass {
				t.Errorf("a pass from a cancelled call: %+v", ev)
			}
		}
	})
}
