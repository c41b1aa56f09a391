package selection

import (
	"context"
	"strings"
	"sync"

	"github.com/crucible-data/crucible/engine"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// fakeVerifier stands in for the rtl/kernel judges behind engine.Judges:
// it judges a candidate by a marker in its code.
type fakeVerifier struct {
	mu      sync.Mutex
	calls   []engine.Candidate
	batches []int // sizes told to Options.Verified
}

func (f *fakeVerifier) Domain() string              { return engine.DomainRTL }
func (f *fakeVerifier) Check(context.Context) error { return nil }
func (f *fakeVerifier) Close() error                { return nil }
func (f *fakeVerifier) SelfCheck(ctx context.Context, it engine.Item) (engine.Evidence, error) {
	return f.Judge(ctx, it, engine.Candidate{ItemID: it.ItemID, CandidateID: engine.ReferenceCandidateID, Code: "GOOD"})
}

func (f *fakeVerifier) Judge(ctx context.Context, item engine.Item, c engine.Candidate) (engine.Evidence, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if item.ItemID != c.ItemID {
		panic("item and candidate out of step")
	}
	ev := engine.Evidence{ItemID: c.ItemID, CandidateID: c.CandidateID, Attempts: 1}
	switch {
	case strings.Contains(c.Code, "GOOD"):
		ev.Status = engine.StatusPass
	case strings.Contains(c.Code, "SYNTAX"):
		ev.Status, ev.FailureStage, ev.Cause = engine.StatusFail, engine.StageCompile, "syntax error at line 3\nmore log"
	case strings.Contains(c.Code, "FLAKY"):
		ev.Status, ev.FailureStage, ev.Cause, ev.Attempts = engine.StatusUnjudged, engine.StageWorkerCrash, "simulator crashed", 3
	default:
		ev.Status, ev.FailureStage, ev.Cause = engine.StatusFail, engine.StageMismatch, "out=3 expected 5 at cycle 7"
	}
	return ev, nil
}

// judgesOf is the set of the fake alone.
func judgesOf(f *fakeVerifier) *engine.Judges {
	js, err := engine.NewJudges(2, f)
	if err != nil {
		panic(err)
	}
	return js
}

func code(s string) string { return "Reasoning...\n```verilog\n" + s + "\n```\n" }
