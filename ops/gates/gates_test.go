package gates

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/rtl"
)

func loadItems(t testing.TB, preset string, paths ...string) []engine.Item {
	t.Helper()
	var items []engine.Item
	g, err := ingest.New(preset, ingest.Sink{
		Item: func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error {
			t.Errorf("ingest rejected %s: %s %s", r.ItemID, r.Reason, r.Detail)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.IngestPaths(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	return items
}

func requireTools(t testing.TB) {
	t.Helper()
	for _, ts := range rtl.Toolchains() {
		if (ts.Name == "iverilog" || ts.Name == "yosys") && ts.Err != "" {
			t.Skipf("%s not available: %s", ts.Name, ts.Err)
		}
	}
}

func testVerifier(t testing.TB) *rtl.Verifier {
	t.Helper()
	cfg := rtl.DefaultConfig()
	cfg.TempDir = t.TempDir()
	cfg.StrengthMutants = 3 // the harness-strength audit of every evolved item, test-sized
	v, err := rtl.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// judgesOf is the set of the given judges.
func judgesOf(t testing.TB, js ...engine.Judge) *engine.Judges {
	t.Helper()
	s, err := engine.NewJudges(0, js...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// evolveAndAdmit runs both halves with test-sized settings.
func evolveAndAdmit(t *testing.T, seeds []engine.Item, ops []string, mod func(*Config)) (*evolve.Result, *Result) {
	t.Helper()
	requireTools(t)
	v := testVerifier(t)
	ecfg := evolve.DefaultConfig()
	ecfg.Operators = ops
	ecfg.SolutionFirst = ops == nil
	if ops == nil {
		ecfg.Operators = evolve.DefaultOperatorNames()
	}
	e, err := evolve.New(ecfg, nil, judgesOf(t, v), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	er, err := e.Evolve(ctx, seeds)
	if err != nil {
		t.Fatal(err)
	}
	gcfg := DefaultConfig()
	if mod != nil {
		mod(&gcfg)
	}
	// Issue 16.9: the progress the gates report adds up to the candidates,
	// so the admit bar's total never jumps.
	var settled int64
	a, err := New(gcfg, Env{Judges: judgesOf(t, v), GateDone: func(_ string, n int64) { settled += n }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Admit(ctx, seeds, er.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	if settled != int64(len(res.Candidates)) {
		t.Errorf("gates reported %d candidates settled, there are %d", settled, len(res.Candidates))
	}
	var buf bytes.Buffer
	FormatFunnel(&buf, res)
	FormatYield(&buf, res.Yield)
	t.Logf("evolve counts: %v\n%s", er.Counts, buf.String())
	return er, res
}

// checkInvariant asserts, from the recorded evidence, that every admitted
// mutation's reference passed its own verifier and its parent failed it.
func checkInvariant(t *testing.T, res *Result) map[string]int {
	t.Helper()
	perOp := map[string]int{}
	evs := map[string][]engine.Evidence{}
	for _, ev := range res.Evidence {
		evs[ev.ItemID] = append(evs[ev.ItemID], ev)
	}
	for _, it := range res.Admitted {
		if it.ReferenceStatus != engine.RefVerified || it.ParentID == "" || it.LineageID == "" || it.Route == "" || it.Operator == "" {
			t.Errorf("%s admitted without verified status or lineage: %+v", it.ItemID, it)
		}
		var refPass, parentFail bool
		for _, ev := range evs[it.ItemID] {
			refPass = refPass || (ev.CandidateID == rtl.ReferenceCandidateID && ev.Status == engine.StatusPass)
			parentFail = parentFail || (ev.CandidateID == CandParent && ev.Status == engine.StatusFail)
		}
		if !refPass {
			t.Errorf("%s admitted without a passing reference self-check", it.ItemID)
		}
		if it.Route == engine.RouteContractMutation && !parentFail {
			t.Errorf("%s admitted without its parent failing the evolved verifier", it.ItemID)
		}
		perOp[it.Operator]++
	}
	return perOp
}

// everyOperatorSeeds are six of the 30 bundled seeds on which every operator
// admits at least two items (a greedy cover of what all 30 admit). The
// demo build evolves and admits all 30 (TestReportOfDemoBuild checks that
// every operator admits there); here the admission invariants are checked
// item by item at a fifth of the cost.
var everyOperatorSeeds = map[string]bool{"fsm_traffic_light_ped": true, "shift_sipo8_done": true, "barrel_shifter16": true,
	"fsm_moore_1011": true, "arbiter_fixed4": true, "fsm_mealy_1101": true}

func TestAdmitBundledSeedsEveryOperator(t *testing.T) {
	var seeds []engine.Item
	for _, s := range loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl")) {
		if everyOperatorSeeds[s.ItemID] {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) != len(everyOperatorSeeds) {
		t.Fatalf("found %d of the %d covering seeds under examples/seeds/rtl", len(seeds), len(everyOperatorSeeds))
	}
	_, res := evolveAndAdmit(t, seeds, nil, nil)
	perOp := checkInvariant(t, res)
	for _, op := range append(evolve.DefaultOperatorNames(), evolve.OpRespecify) {
		if perOp[op] == 0 {
			t.Errorf("operator %s: no admitted item over the bundled seeds", op)
		}
	}
	// The yield report agrees with the admitted set.
	for _, r := range res.Yield {
		if r.Operator != "*" && r.Admitted != int64(perOp[r.Operator]) {
			t.Errorf("yield row %s admitted %d, admitted items %d", r.Operator, r.Admitted, perOp[r.Operator])
		}
		if r.Operator != "*" && r.Route == engine.RouteContractMutation && r.Admitted > 0 && (r.MeanDistance <= 0 || r.CostPerAdmitted <= 0) {
			t.Errorf("yield row %s: distance %v cost %v", r.Operator, r.MeanDistance, r.CostPerAdmitted)
		}
	}
	c := res.Counters()
	if c["gate1.static.in"] != int64(len(res.Candidates)) || c["admitted"] != int64(len(res.Admitted)) {
		t.Errorf("funnel counters: %v", c)
	}
}

func TestAdmitVerilogEvalSample(t *testing.T) {
	all := loadItems(t, ingest.PresetVerilogEval, testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl"))
	// A fixed sample (every ninth problem) plus two counters/shifters, so
	// that the operators that apply to few references (counter_modulus:
	// 5 of 156, shift_direction: 8) are exercised too. The full set runs
	// with CRUCIBLE_EVOLVE_FULL=1 (TestVerilogEvalFull).
	var seeds []engine.Item
	for i, it := range all {
		if i%9 == 4 || strings.HasSuffix(it.ItemID, "Prob035_count1to10") || strings.HasSuffix(it.ItemID, "Prob063_review2015_shiftcount") {
			seeds = append(seeds, it)
		}
	}
	_, res := evolveAndAdmit(t, seeds, evolve.DefaultOperatorNames(), nil)
	perOp := checkInvariant(t, res)
	if len(res.Admitted) < len(seeds) {
		t.Errorf("only %d admitted from %d VerilogEval seeds", len(res.Admitted), len(seeds))
	}
	for _, op := range evolve.DefaultOperatorNames() {
		if perOp[op] == 0 {
			t.Errorf("operator %s: nothing admitted over the VerilogEval sample", op)
		}
	}
	t.Logf("admitted per operator: %v", perOp)
}

func TestUnobservableMutationsRejectedAtStrength(t *testing.T) {
	seeds := loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl"))
	var pick []engine.Item
	for _, s := range seeds {
		if s.ItemID == "fsm_moore_1011" || s.ItemID == "counter_mod10_tc" || s.ItemID == "alu8_flags" {
			pick = append(pick, s)
		}
	}
	_, res := evolveAndAdmit(t, pick, []string{"rename_signal", "dead_code", "reformat"}, nil)
	if len(res.Candidates) < 5 {
		t.Fatalf("only %d control candidates", len(res.Candidates))
	}
	if len(res.Admitted) != 0 {
		t.Errorf("unobservable mutations admitted: %d", len(res.Admitted))
	}
	for _, r := range res.Rejections {
		if r.Gate != GateStrength || r.Reason != ReasonNotDistinguished {
			t.Errorf("%s rejected at %s/%s (%s), want strength/%s", r.ItemID, r.Gate, r.Reason, r.Detail, ReasonNotDistinguished)
		}
	}
}

func TestLeakAndBrokenReference(t *testing.T) {
	requireTools(t)
	seeds := loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl", "counter_mod10_tc"))
	v := testVerifier(t)
	ecfg := evolve.DefaultConfig()
	ecfg.Operators, ecfg.SolutionFirst = []string{"counter_modulus", "arith_swap", "reset_polarity"}, false
	e, err := evolve.New(ecfg, nil, judgesOf(t, v), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	er, err := e.Evolve(ctx, seeds)
	if err != nil || len(er.Candidates) != 3 {
		t.Fatalf("evolve: %v, %d candidates", err, len(er.Candidates))
	}
	cands := er.Candidates
	// 0: the instruction quotes the reference.
	cands[0].Instruction += "\n\nHint:\n```verilog\n" + cands[0].Reference + "\n```\n"
	// 1: the reference no longer compiles (a statement loses its ';').
	cands[1].Reference = strings.Replace(cands[1].Reference, "4'd0;", "4'd0", 1)
	a, err := New(DefaultConfig(), Env{Judges: judgesOf(t, v)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Admit(ctx, seeds, cands)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Rejections {
		got[r.ItemID] = r.Gate + "/" + r.Reason
		t.Logf("%s: %s/%s: %s", r.ItemID, r.Gate, r.Reason, r.Detail)
	}
	if got[cands[0].ItemID] != GateStatic+"/"+ReasonLeakage {
		t.Errorf("leaking instruction: %q, want static/leakage", got[cands[0].ItemID])
	}
	if got[cands[1].ItemID] != GateAudit+"/"+ReasonReferenceCompile {
		t.Errorf("broken reference: %q, want audit/reference_compile", got[cands[1].ItemID])
	}
	if len(res.Admitted) != 1 || res.Admitted[0].ItemID != cands[2].ItemID {
		t.Errorf("admitted %v, want only %s", res.Admitted, cands[2].ItemID)
	}
	// Without an audit gate the broken reference is still not admitted.
	cfg := DefaultConfig()
	cfg.Order = []string{GateStatic, GateStrength}
	a2, _ := New(cfg, Env{Judges: judgesOf(t, v)})
	res2, err := a2.Admit(ctx, seeds, cands[1:2])
	if err != nil || len(res2.Admitted) != 0 || len(res2.Rejections) != 1 || res2.Rejections[0].Reason != ReasonUnjudged {
		t.Errorf("no-audit order: err %v admitted %d rejections %+v", err, len(res2.Admitted), res2.Rejections)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Order = []string{"static", "bogus", "static"}
	c.Strength.MinKillRatio = 2
	c.Dedup.Threshold = 0
	err := c.Validate()
	for _, want := range []string{"bogus", "listed twice", "min_kill_ratio", "dedup.threshold"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
}

func TestLeakFraction(t *testing.T) {
	ref := "module RefModule(input a, output y);\n  // comment\n  assign y = a & ~a | a;\nendmodule\n"
	if f, _ := LeakFraction("Implement a module whose output y equals input a.", ref, "", 8); f != 0 {
		t.Errorf("prose leak %v", f)
	}
	if f, ex := LeakFraction("Here it is: module RefModule(input a, output y); assign y = a & ~a | a; endmodule", ref, "", 8); f < 0.9 || ex == "" {
		t.Errorf("quoted code leak %v %q", f, ex)
	}
	if f, _ := LeakFraction("Here it is: module RefModule(input a, output y); assign y = a & ~a | a; endmodule", ref, "module RefModule(input a, output y); assign y = a & ~a | a;", 8); f > 0.3 {
		t.Errorf("inherited text counted as a leak: %v", f)
	}
}

// TestDeterministic: two runs over the same seeds admit the same items
// (field for field, cost included) and reject the same ones.
func TestDeterministic(t *testing.T) {
	seeds := loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl"))
	var pick []engine.Item
	for _, s := range seeds {
		switch s.ItemID {
		case "fsm_vending_25c", "counter_gray4", "alu8_flags":
			pick = append(pick, s)
		}
	}
	copyOf := func() []engine.Item { return append([]engine.Item(nil), pick...) }
	_, a := evolveAndAdmit(t, copyOf(), nil, nil)
	_, b := evolveAndAdmit(t, copyOf(), nil, nil)
	if len(a.Admitted) == 0 || !reflect.DeepEqual(a.Admitted, b.Admitted) || !reflect.DeepEqual(a.Rejections, b.Rejections) {
		t.Errorf("runs differ: %d vs %d admitted", len(a.Admitted), len(b.Admitted))
	}
	for _, it := range a.Admitted {
		if it.Cost <= 0 {
			t.Errorf("%s: cost %v", it.ItemID, it.Cost)
		}
	}
}
