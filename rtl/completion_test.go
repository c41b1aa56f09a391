package rtl

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestCompletionContract judges module bodies joined to the trusted header
// of VerilogEval code-complete prompts.
func TestCompletionContract(t *testing.T) {
	items := loadVerilogEval(t, "verilog-eval/code-complete-iccad2023.jsonl")
	var picked []engine.Item
	for _, it := range items {
		for _, id := range []string{"Prob001_zero", "Prob005_notgate", "Prob030_popcount255", "Prob035_count1to10"} {
			if strings.HasSuffix(it.ItemID, id) {
				it.Verifier.Kind = engine.VerifierCompletion
				picked = append(picked, it)
			}
		}
	}
	if len(picked) != 4 {
		t.Fatalf("picked %d items", len(picked))
	}
	v := newTestVerifier(t, testConfig(t))
	var cands []engine.Candidate
	for _, it := range picked {
		c, err := ContractFor(it)
		if err != nil {
			t.Fatal(err)
		}
		body, err := c.ReferenceCandidate()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(body, "module TopModule") {
			t.Fatalf("%s: reference body still has its header", it.ItemID)
		}
		cands = append(cands,
			engine.Candidate{ItemID: it.ItemID, CandidateID: "body", Code: body},
			engine.Candidate{ItemID: it.ItemID, CandidateID: "body-plus-module", Code: body + "\nmodule helper(input a, output y); assign y = a; endmodule\n"},
			engine.Candidate{ItemID: it.ItemID, CandidateID: "header-again", Code: c.(*Completion).Prefix + body},
			engine.Candidate{ItemID: it.ItemID, CandidateID: "no-endmodule", Code: strings.Replace(body, "endmodule", "", 1)},
		)
	}
	evs, err := v.Verify(context.Background(), picked, cands)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"body":             {engine.StatusPass, ""},
		"body-plus-module": {engine.StatusFail, engine.StageStatic},
		"header-again":     {engine.StatusFail, engine.StageStatic},
		"no-endmodule":     {engine.StatusFail, engine.StageStatic},
	}
	for _, ev := range evs {
		w := want[ev.CandidateID]
		if ev.Status != w[0] || ev.FailureStage != w[1] {
			t.Errorf("%s %s: %s/%s (%s), want %s/%s", ev.ItemID, ev.CandidateID, ev.Status, ev.FailureStage, ev.Cause, w[0], w[1])
		}
	}
}

// TestVerilatorBackend runs the counter item under Verilator: the replay
// driver polls the candidate's outputs (Verilator 5.006 does not wake an
// always block on a submodule's register), the reference's own replay
// reproduces its trace, a wrong candidate fails on the trace, and a right
// one is not trusted for pass (2-state) unless TrustTwoState is set.
func TestVerilatorBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("Verilator builds take seconds each")
	}
	requireTools(t, "verilator")
	cfg := testConfig(t)
	cfg.Simulator = SimVerilator
	// The verdicts do not depend on how the C++ is optimised; -O0 builds the
	// model and Verilator's runtime about a fifth faster (five builds here).
	cfg.VerilatorFlags = []string{"-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"}
	cfg.CacheDir = t.TempDir() // the second verifier reuses the reference self-check
	v := newTestVerifier(t, cfg)
	item := counterItem(t, 100)
	runCases(t, v, item, []caseWant{
		{"good", goodCounter, engine.StatusUnjudged, engine.StageToolchainUnsupported},
		{"wrong", strings.Replace(goodCounter, "q + 1", "q + 2", 1), engine.StatusFail, engine.StageMismatch},
	})
	cfg.TrustTwoState = true
	v2 := newTestVerifier(t, cfg)
	evs := runCases(t, v2, item, []caseWant{{"good", goodCounter, engine.StatusPass, ""}})
	if !strings.Contains(evs[0].Provenance.Verifier, "verilator") || evs[0].Provenance.Toolchain[0].Name != "verilator" {
		t.Errorf("provenance %+v does not name verilator", evs[0].Provenance)
	}
}
