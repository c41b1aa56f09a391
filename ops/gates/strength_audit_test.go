package gates

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/rtl"
)

// weakItem is an evolved (solution-first) RTL item whose self-checking
// testbench compares with != (X and Z outputs count as correct), never
// checks ovf, and never makes the sum overflow: the trace comparison kills
// X, Z and a wrong ovf, but an adder with ovf stuck at 0 behaves like the
// reference under this stimulus.
func weakItem() engine.Item {
	harness := `
module tb;
  reg [7:0] a, b; wire [7:0] s; wire ovf;
  integer errors = 0, i;
  TopModule dut (.a(a), .b(b), .s(s), .ovf(ovf));
  initial begin
    for (i = 0; i < 40; i = i + 1) begin
      a = i; b = 2 * i; #5;
      if (s != a + b) errors = errors + 1;
    end
    if (errors == 0) $display("PASS-MARK");
    else $display("FAIL %0d", errors);
    $finish;
  end
endmodule
`
	ref := "module TopModule (input [7:0] a, input [7:0] b, output [7:0] s, output ovf);\n  assign {ovf, s} = a + b;\nendmodule\n"
	return engine.Item{ItemID: "weak~respecify", ParentID: "weak", Domain: engine.DomainRTL, Family: "alu", Route: engine.RouteSolutionFirst,
		Instruction: "Add a and b.", Interface: engine.Interface{Top: "TopModule"}, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: harness, Top: "tb", PassMarker: "PASS-MARK"}}
}

// TestStrengthGateRejectsWeakVerifier: admit rejects the weak item with
// reason weak_verifier naming the trivial survivor, and admits a strong
// one (a bundled seed as a solution-first item) with its strength recorded.
func TestStrengthGateRejectsWeakVerifier(t *testing.T) {
	requireTools(t)
	seeds := loadItems(t, "taskdir", filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl", "counter_mod10_tc", "task.json"))
	strong := seeds[0]
	strong.ItemID, strong.ParentID, strong.Route = strong.ItemID+"~respecify", strong.ItemID, engine.RouteSolutionFirst
	cfg := DefaultConfig()
	cfg.Order = []string{GateStrength}
	a, err := New(cfg, Env{Judges: judgesOf(t, testVerifier(t))})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Admit(context.Background(), nil, []engine.Item{weakItem(), strong})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejections) != 1 || res.Rejections[0].ItemID != "weak~respecify" || res.Rejections[0].Reason != ReasonWeakVerifier ||
		!strings.Contains(res.Rejections[0].Detail, "trivial:stuck0:ovf") || strings.Contains(res.Rejections[0].Detail, "trivial:all_x") {
		t.Fatalf("rejections %+v, want the weak item rejected weak_verifier naming its survivors", res.Rejections)
	}
	if len(res.Admitted) != 1 {
		t.Fatalf("admitted %d items, want the strong one", len(res.Admitted))
	}
	s := res.Admitted[0].VerifierStrength
	if rate, ok := s.MutantKillRate(); !s.Measured || s.Weak() || s.TrivialTried == 0 || s.TrivialKilled != s.TrivialTried || !ok || rate < 0.8 {
		t.Errorf("strong item's strength %+v", s)
	}
}

// TestStrengthVerdictThresholds: the kill-rate threshold, trivial
// survivors and unmeasured audits, from the report alone.
func TestStrengthVerdictThresholds(t *testing.T) {
	cfg := DefaultConfig().Strength
	if cfg.MinMutantKillRate != 0.8 {
		t.Fatalf("default min_mutant_kill_rate %v, want 0.8", cfg.MinMutantKillRate)
	}
	strong := rtl.StrengthReport{Measured: true, Trivial: rtl.StrengthTally{Tried: 8, Killed: 8}, Mutants: rtl.StrengthTally{Tried: 10, Killed: 8}}
	for _, tc := range []struct {
		name   string
		rep    func(r rtl.StrengthReport) rtl.StrengthReport
		reason string
	}{
		{"strong at the threshold", func(r rtl.StrengthReport) rtl.StrengthReport { return r }, ""},
		{"below the threshold", func(r rtl.StrengthReport) rtl.StrengthReport {
			r.Mutants.Killed, r.Mutants.Survivors = 7, []string{"mutant:netlist_1", "mutant:netlist_4", "mutant:arith_swap"}
			return r
		}, ReasonWeakVerifier},
		{"trivial survivor", func(r rtl.StrengthReport) rtl.StrengthReport {
			r.Trivial.Killed, r.Trivial.Survivors = 7, []string{"trivial:all_x"}
			return r
		}, ReasonWeakVerifier},
		{"no mutant judged", func(r rtl.StrengthReport) rtl.StrengthReport { r.Mutants = rtl.StrengthTally{}; return r }, ReasonWeakVerifier},
		{"nothing to mutate", func(r rtl.StrengthReport) rtl.StrengthReport {
			r.Mutants, r.NothingToMutate = rtl.StrengthTally{}, true
			return r
		}, ""},
		{"infrastructure", func(rtl.StrengthReport) rtl.StrengthReport {
			return rtl.StrengthReport{Stage: engine.StageWorkerCrash, Cause: "x"}
		}, ReasonUnjudged},
		{"unmeasurable", func(rtl.StrengthReport) rtl.StrengthReport {
			return rtl.StrengthReport{Stage: engine.StageWeakVerifier, Cause: "inout port"}
		}, ReasonWeakVerifier},
		{"broken reference", func(rtl.StrengthReport) rtl.StrengthReport {
			return rtl.StrengthReport{Stage: engine.StageReferenceSelfCheck}
		}, deferToAudit},
	} {
		reason, detail := strengthVerdict(tc.rep(strong), cfg.minKillRate(engine.DomainRTL))
		if reason != tc.reason {
			t.Errorf("%s: reason %q (%s), want %q", tc.name, reason, detail, tc.reason)
		}
	}
	// One rule, each domain's threshold: 8 of 10 mutants killed is below
	// RTL's 0.8 once one more survives, above the kernels' default 0.5.
	weaker := strong
	weaker.Mutants.Killed = 6
	if r, _ := strengthVerdict(weaker, cfg.minKillRate(engine.DomainRTL)); r != ReasonWeakVerifier {
		t.Errorf("rtl at 6/10: reason %q, want %q", r, ReasonWeakVerifier)
	}
	if r, d := strengthVerdict(weaker, cfg.minKillRate(engine.DomainKernel)); r != "" {
		t.Errorf("kernel at 6/10 (min_kill_ratio %v): reason %q (%s), want admitted", cfg.MinKillRatio, r, d)
	}
	c := DefaultConfig()
	c.Strength.MinMutantKillRate = 1.5
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "min_mutant_kill_rate") {
		t.Errorf("validate: %v, want min_mutant_kill_rate named", err)
	}
}

// TestStrengthConfigDecodesStrictly: the admit stage's config accepts
// min_mutant_kill_rate and rejects a misspelt key.
func TestStrengthConfigDecodesStrictly(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		ok   bool
	}{
		{"strength: {min_mutant_kill_rate: 0.9}", true},
		{"strength: {min_mutant_kil_rate: 0.9}", false},
	} {
		c, err := engine.NewStageConfig("admit", tc.yaml)
		if err != nil {
			t.Fatal(err)
		}
		sc := DefaultStageConfig()
		err = c.Decode(&sc)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.yaml, err, tc.ok)
		}
		if tc.ok && sc.Strength.MinMutantKillRate != 0.9 {
			t.Errorf("%q decoded to %v", tc.yaml, sc.Strength.MinMutantKillRate)
		}
	}
}
