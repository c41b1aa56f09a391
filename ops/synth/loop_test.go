package synth

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// The acceptance check: on bundled seeds with the scripted generator, every
// real-backend observation equals a direct verification of the same code,
// and the round counts match the script (fail, fail, pass).
func TestScriptedTrajectoriesMatchDirectVerification(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	gen := &scriptedGenerator{t: t, items: items}
	srv := startServer(t, gen)
	r := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil)
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "journal.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trajectories) != len(items) {
		t.Fatalf("%d trajectories", len(res.Trajectories))
	}
	wantOutcomes := []string{OutcomeCompilationError, OutcomeSimulationMismatch, OutcomePass}
	v := rtlVerifier(t)
	for i, tr := range res.Trajectories {
		if tr.ItemID != items[i].ItemID || tr.FinalVerdict != VerdictPass || tr.Rounds != 3 || !tr.Admitted || tr.Plan != BackendReal {
			t.Errorf("%s: verdict %s rounds %d admitted %v plan %s", tr.ItemID, tr.FinalVerdict, tr.Rounds, tr.Admitted, tr.Plan)
		}
		for k, tu := range tr.Turns {
			if tu.Observation.Outcome != wantOutcomes[k] || tu.Backend != BackendReal {
				t.Errorf("%s round %d: %s on %s, want %s", tr.ItemID, tu.Round, tu.Observation.Outcome, tu.Backend, wantOutcomes[k])
			}
			if strings.TrimSpace(tu.Code) != strings.TrimSpace(scriptedCode(t, items[i], k+1)) || !strings.HasPrefix(tu.Reasoning, "Round ") || strings.Contains(tu.Response, "<think>") {
				t.Errorf("%s round %d: code/reasoning not parsed: reasoning %q", tr.ItemID, tu.Round, tu.Reasoning)
			}
			ev, err := v.VerifyOne(context.Background(), items[i], engine.Candidate{ItemID: items[i].ItemID, CandidateID: "direct", Code: tu.Code})
			if err != nil {
				t.Fatal(err)
			}
			direct := ObservationFromEvidence(engine.DomainRTL, ev, 1500)
			if !reflect.DeepEqual(direct, tu.Observation) {
				t.Errorf("%s round %d: observation differs from a direct verification:\nloop:   %+v\ndirect: %+v", tr.ItemID, tu.Round, tu.Observation, direct)
			}
		}
	}
	// Pack rows: system, user, then assistant/environment per round.
	if len(res.Pack) != len(items) {
		t.Fatalf("%d pack rows", len(res.Pack))
	}
	p := res.Pack[0]
	if len(p.Messages) != 2+2*3 || p.Messages[2].Role != "assistant" || p.Messages[3].Role != "environment" ||
		p.Messages[2].Reasoning == "" || !strings.HasPrefix(p.Messages[3].Content, "Outcome: COMPILATION_ERROR") {
		t.Errorf("pack row: %+v", p.Messages)
	}
	// Every real turn is a world-model training pair.
	if len(res.Pairs) != 3*len(items) || res.Pairs[1].Outcome != OutcomeSimulationMismatch || !strings.Contains(res.Pairs[1].Target, `"SIMULATION_MISMATCH"`) {
		t.Errorf("%d pairs; second %+v", len(res.Pairs), res.Pairs[1].Outcome)
	}
	d := res.Summary.Domains[0]
	if d.Domain != "rtl" || d.Passed != 3 || !reflect.DeepEqual(d.RoundsToPass, []int{0, 0, 3, 0}) || d.RealTurns != 9 || d.ThinkingMax == 0 {
		t.Errorf("summary %+v", d)
	}
	if gen.calls.Load() != 9 {
		t.Errorf("%d generator calls, want 9", gen.calls.Load())
	}
}

// An answer without code is a NO_CODE turn (nothing runs) and the
// generator is told so; the script then continues one round later, and K
// caps the trajectory.
func TestNoCodeTurnAndRoundCap(t *testing.T) {
	items := loadSeeds(t, "mux4_8bit")
	gen := &scriptedGenerator{t: t, items: items, noCode: "mux4_8bit"}
	srv := startServer(t, gen)
	cfg := testConfig(srv.URL)
	cfg.Rounds = 3
	r := newTestRunner(t, cfg, realBackend(t), nil)
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trajectories[0]
	// round 1: no code; round 2: scripted round 2 (logic bug); round 3: the fix.
	if tr.Rounds != 3 || tr.Turns[0].Observation.Outcome != OutcomeNoCode || tr.Turns[0].Backend != BackendNone ||
		tr.Turns[1].Observation.Outcome != OutcomeSimulationMismatch || tr.FinalVerdict != VerdictPass {
		t.Fatalf("%+v", tr)
	}
	cfg.Rounds = 2
	r = newTestRunner(t, cfg, realBackend(t), nil)
	res, err = r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	if tr := res.Trajectories[0]; tr.Rounds != 2 || tr.FinalVerdict != VerdictFail || !tr.Admitted {
		t.Fatalf("capped: %s after %d rounds", tr.FinalVerdict, tr.Rounds)
	}
}
