package selection

import (
	"context"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// fakeVerifier stands in for the rtl/kernel verifiers behind the Verifier
// interface only: it judges a candidate by a marker in its code.
type fakeVerifier struct {
	calls [][]engine.Candidate
}

func (f *fakeVerifier) Verify(ctx context.Context, items []engine.Item, cands []engine.Candidate) ([]engine.Evidence, error) {
	f.calls = append(f.calls, cands)
	out := make([]engine.Evidence, len(cands))
	for i, c := range cands {
		if items[i].ItemID != c.ItemID {
			panic("items and candidates out of step")
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
		out[i] = ev
	}
	return out, nil
}

func code(s string) string { return "Reasoning...\n```verilog\n" + s + "\n```\n" }
