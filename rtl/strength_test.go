package rtl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/engine/stagetest"
	"github.com/crucible-data/crucible/internal/testenv"
)

func strengthConfig(t testing.TB) Config {
	cfg := testConfig(t)
	cfg.StrengthAudit = true
	return cfg
}

// weakSelfCheckItem's testbench checks s with != (an X or Z sum makes the
// condition X, which counts as no error) and never checks ovf; its stimulus
// never makes the sum overflow. The trace design compares every port with
// the reference's, so the lax check no longer lets X, Z or a wrong ovf
// through; what stays weak is the stimulus: ovf is 0 in the whole trace, so
// an adder whose ovf is stuck at 0 is indistinguishable from the reference.
func weakSelfCheckItem() engine.Item {
	harness := `
module tb;
  reg [7:0] a, b; wire [7:0] s; wire ovf;
  integer errors = 0, i;
  TopModule dut (.a(a), .b(b), .s(s), .ovf(ovf));
  initial begin
    for (i = 0; i < 50; i = i + 1) begin
      a = i; b = 2 * i; #5;
      if (s != a + b) errors = errors + 1;
    end
    if (errors == 0) $display("===========Your Design Passed===========");
    else $display("===========Error=========== %0d", errors);
    $finish;
  end
endmodule
`
	ref := `
module TopModule (input [7:0] a, input [7:0] b, output [7:0] s, output ovf);
  assign {ovf, s} = a + b;
endmodule
`
	return engine.Item{ItemID: "weak_adder", Domain: engine.DomainRTL, Interface: engine.Interface{Top: "TopModule"}, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: harness, Top: "tb", PassMarker: "Your Design Passed"}}
}

// TestStrengthDetectsWeakHarness: the weak testbench never makes ovf rise,
// so the audit lists the adder with ovf stuck at 0 as a survivor, while
// floating and unknown outputs (which its lax != check would accept) are
// killed by the trace comparison; a correct candidate's pass becomes
// unjudged (weak_verifier) while a candidate that is caught still fails.
func TestStrengthDetectsWeakHarness(t *testing.T) {
	requireTools(t, "yosys")
	v := newTestVerifier(t, strengthConfig(t))
	item := weakSelfCheckItem()
	rep, err := v.Strength(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Measured || !rep.Weak() {
		t.Fatalf("want a measured weak harness, got %+v", rep)
	}
	if !slices.Contains(rep.Trivial.Survivors, "trivial:stuck0:ovf") {
		t.Errorf("survivors %v lack trivial:stuck0:ovf", rep.Trivial.Survivors)
	}
	for _, killed := range []string{"trivial:all_x", "trivial:all_z", "trivial:empty", "trivial:const_0",
		"trivial:stuck1:ovf", "trivial:invert:ovf", "trivial:stuck1:s", "trivial:invert:s"} {
		if slices.Contains(rep.Trivial.Survivors, killed) {
			t.Errorf("%s survived, but its trace differs from the reference's", killed)
		}
	}
	is := rep.ItemStrength()
	if !is.Weak() || is.TrivialTried != int32(rep.Trivial.Tried) || len(is.Survivors) == 0 {
		t.Errorf("item strength %+v does not carry the report", is)
	}
	cands := []engine.Candidate{
		{ItemID: item.ItemID, CandidateID: "correct", Code: item.Reference},
		{ItemID: item.ItemID, CandidateID: "wrong", Code: "module TopModule (input [7:0] a, input [7:0] b, output [7:0] s, output ovf);\n assign s = a - b; assign ovf = 0;\nendmodule\n"},
	}
	evs, err := v.Verify(context.Background(), []engine.Item{item}, cands)
	if err != nil {
		t.Fatal(err)
	}
	if ev := evs[0]; ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageWeakVerifier || !strings.Contains(ev.Cause, "trivial:stuck0:ovf") {
		t.Errorf("correct candidate on a weak harness: %s/%s %q, want unjudged/weak_verifier naming the survivors", ev.Status, ev.FailureStage, ev.Cause)
	}
	if ev := evs[1]; ev.Status != engine.StatusFail {
		t.Errorf("wrong candidate: %s/%s, want fail (a kill stands on a weak harness)", ev.Status, ev.FailureStage)
	}
	if !engine.IsInfraStage(engine.StageWeakVerifier) {
		t.Error("weak_verifier must be an infrastructure stage")
	}
}

// TestStrengthStrongTasks: on bundled seeds (and VerilogEval differential
// tasks when the dataset is present) every trivial candidate is killed or,
// where it is the right answer (Prob001_zero's constant 0), recognised as
// equivalent; mutants are judged and a kill rate is recorded; a correct
// candidate still passes.
func TestStrengthStrongTasks(t *testing.T) {
	requireTools(t, "yosys")
	items := loadSeeds(t, "counter_mod10_tc", "alu8_flags")
	if p := filepath.Join(testenv.RepoRoot(t), "..", "shared", "datasets", "verilog-eval", "spec-to-rtl.jsonl"); fileExists(p) {
		for _, it := range loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl") {
			if strings.Contains(it.ItemID, "Prob001_zero") || strings.Contains(it.ItemID, "Prob035_count1to10") {
				items = append(items, it)
			}
		}
	}
	v := newTestVerifier(t, strengthConfig(t))
	for _, it := range items {
		rep, err := v.Strength(context.Background(), it)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s; equivalent %v; invalid %v %v; notes %v", it.ItemID, rep.Summary(),
			append(rep.Trivial.Equivalent, rep.Mutants.Equivalent...), rep.Trivial.Invalid, rep.Mutants.Invalid, rep.Notes)
		if !rep.Measured || rep.Weak() {
			t.Errorf("%s: want a measured strong harness, got %s", it.ItemID, rep.Summary())
			continue
		}
		if rep.Trivial.Killed != rep.Trivial.Tried || rep.Trivial.Tried < 5 {
			t.Errorf("%s: %d/%d trivial candidates killed", it.ItemID, rep.Trivial.Killed, rep.Trivial.Tried)
		}
		if _, ok := rep.MutantKillRate(); !ok && !rep.NothingToMutate {
			t.Errorf("%s: no mutant judged (notes %v)", it.ItemID, rep.Notes)
		}
		if strings.Contains(it.ItemID, "zero") && !slices.Contains(rep.Trivial.Equivalent, "trivial:const_0") {
			t.Errorf("%s: const_0 is the right answer and must be equivalent, got equivalent=%v", it.ItemID, rep.Trivial.Equivalent)
		}
		ms := rep.Measurements()
		ev := engine.Evidence{Measurements: ms}
		if m, ok := ev.Measurement("verifier_strength"); !ok || m.Float <= 0 || m.Float > 1 {
			t.Errorf("%s: verifier_strength measurement %v", it.ItemID, m)
		}
	}
	cands := selfCandidates(t, items[:1])
	evs, err := v.Verify(context.Background(), items[:1], cands)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Status != engine.StatusPass {
		t.Errorf("reference on a strong harness: %s/%s %s", evs[0].Status, evs[0].FailureStage, evs[0].Cause)
	}
}

// TestStrengthCached: the audit runs once per task and toolchain; a second
// verifier with the same CacheDir starts no process for it.
func TestStrengthCached(t *testing.T) {
	requireTools(t, "yosys")
	cfg := strengthConfig(t)
	cfg.CacheDir = t.TempDir()
	cfg.StrengthMutants = 2
	var procs atomic.Int32
	v := newTestVerifier(t, cfg)
	v.onProcessStart = func(string, int) { procs.Add(1) }
	item := counterItem(t, 40)
	first, err := v.Strength(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	// The batch replay judges all candidates in one build and one run (plus
	// Yosys for the mutants): far fewer processes than candidates.
	if !first.Measured || procs.Load() == 0 || procs.Load() >= int32(first.Candidates) {
		t.Fatalf("first audit: %s with %d processes for %d candidates", first.Summary(), procs.Load(), first.Candidates)
	}
	procs.Store(0)
	if again, _ := v.Strength(context.Background(), item); procs.Load() != 0 || again.Summary() != first.Summary() {
		t.Errorf("same verifier: %d processes, %q; want 0 and the same report", procs.Load(), again.Summary())
	}
	v2 := newTestVerifier(t, cfg)
	v2.onProcessStart = func(string, int) { procs.Add(1) }
	second, err := v2.Strength(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if procs.Load() != 0 || second.Summary() != first.Summary() {
		t.Errorf("second verifier: %d processes, %q; want 0 and %q", procs.Load(), second.Summary(), first.Summary())
	}
	// Judging a candidate then costs only its static check (the
	// preprocessor) and its replay's build and run (the reference check is
	// cached on disk too).
	if _, err := v2.VerifyOne(context.Background(), item, engine.Candidate{ItemID: item.ItemID, CandidateID: "c", Code: goodCounter}); err != nil {
		t.Fatal(err)
	}
	if procs.Load() != 3 {
		t.Errorf("a candidate after a cached audit started %d processes, want 3", procs.Load())
	}
}

func TestTrivialCandidatesCoverEveryOutput(t *testing.T) {
	ref, err := RenameModule(counterRef, RefModuleName, DefaultDUTName)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := TrivialCandidates(ref, DefaultDUTName, counterIface)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
		if !strings.Contains(c.Code, "module TopModule (") {
			t.Errorf("%s does not define TopModule:\n%s", c.Name, c.Code)
		}
	}
	want := []string{"trivial:empty", "trivial:all_z", "trivial:all_x", "trivial:const_0", "trivial:const_1",
		"trivial:stuck0:q", "trivial:stuck1:q", "trivial:invert:q"}
	if !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if _, err := TrivialCandidates(ref, DefaultDUTName, engine.Interface{Ports: []engine.Port{{Name: "a", Direction: "input", Width: 1}}}); err == nil {
		t.Error("an interface without outputs must be an error")
	}
}

func loadSeeds(t testing.TB, names ...string) []engine.Item {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join(testenv.RepoRoot(t), "examples/seeds/rtl", n, "task.json"))
	}
	var items []engine.Item
	g, err := ingest.New(ingest.PresetTaskDir, ingest.Sink{
		Item:   func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { t.Errorf("rejected %s: %s", r.ItemID, r.Detail); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.IngestPaths(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	if len(items) != len(names) {
		t.Fatalf("loaded %d seeds, want %d", len(items), len(names))
	}
	return items
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestVerifyRTLStageRejectsWeakHarness: the verify_rtl stage records the
// audit on the reference's evidence and on the item, and rejects the item
// whose harness a trivial candidate passes (weak_verifier).
func TestVerifyRTLStageRejectsWeakHarness(t *testing.T) {
	requireTools(t, "iverilog", "vvp", "prlimit", "yosys")
	dir := t.TempDir()
	var lines []string
	for _, it := range []engine.Item{weakSelfCheckItem(), counterItem(t, 60)} {
		it.Instruction, it.Family, it.Route = "Implement the module.", "test", engine.RouteSeed
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := "name: strength\nwork_dir: work\nstages:\n  - name: ingest\n    type: ingest\n    inputs: [items.jsonl]\n    config: {preset: items}\n" +
		"  - name: verify\n    type: verify_rtl\n    from: [ingest]\n    config: {workers: 2, strength_mutants: 3}\n"
	stagetest.Run(t, dir, pipeline, RegisterStages)
	o := stagetest.Read(t, dir, "verify")
	items, rejs, evs := o.Items, o.Rejections, o.Evidence
	if len(items) != 1 || items[0].ItemID != "counter" || !items[0].VerifierStrength.Measured || items[0].VerifierStrength.Weak() {
		t.Fatalf("items %+v, want the strong counter with its strength", items)
	}
	if len(rejs) != 1 || rejs[0].ItemID != "weak_adder" || rejs[0].Reason != engine.StageWeakVerifier || !strings.Contains(rejs[0].Detail, "trivial:stuck0:ovf") {
		t.Fatalf("rejections %+v, want weak_adder rejected weak_verifier naming its survivors", rejs)
	}
	for _, ev := range evs {
		m, ok := ev.Measurement("verifier_strength")
		if !ok || m.Float <= 0 || m.Float > 1 {
			t.Errorf("%s reference evidence: verifier_strength %v %v", ev.ItemID, m, ok)
		}
		if _, ok := ev.Measurement("strength_survivors"); ok != (ev.ItemID == "weak_adder") {
			t.Errorf("%s: strength_survivors present=%v", ev.ItemID, ok)
		}
	}
}

// TestBatchReplayAgreesWithSingleReplays: the audit's batch replay kills
// exactly the candidates that their own replays, judged one by one through
// the candidates' path, fail at mismatch, on the bundled seeds and (when
// the dataset is present) VerilogEval tasks with a trivial answer, a
// counter and a multi-output FSM.
func TestBatchReplayAgreesWithSingleReplays(t *testing.T) {
	requireTools(t, "yosys")
	items := loadSeeds(t, "counter_mod10_tc", "alu8_flags")
	if p := filepath.Join(testenv.RepoRoot(t), "..", "shared", "datasets", "verilog-eval", "spec-to-rtl.jsonl"); fileExists(p) {
		for _, it := range loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl") {
			for _, id := range []string{"Prob001_zero", "Prob035_count1to10", "Prob127_lemmings1"} {
				if strings.HasSuffix(it.ItemID, id) {
					items = append(items, it)
				}
			}
		}
	}
	v := newTestVerifier(t, strengthConfig(t))
	ctx := context.Background()
	for _, item := range items {
		c, err := ContractFor(item)
		if err != nil {
			t.Fatal(err)
		}
		refCand, err := c.ReferenceCandidate()
		if err != nil {
			t.Fatal(err)
		}
		iface, err := v.strengthInterface(ctx, item, refCand, c.DUT())
		if err != nil {
			t.Fatal(err)
		}
		cands, err := TrivialCandidates(refCand, c.DUT(), iface)
		if err != nil {
			t.Fatal(err)
		}
		mutants, _, _ := v.strengthMutants(ctx, item, refCand, c.DUT(), iface)
		cands = append(cands, mutants...)
		killed, ok, err := v.batchKills(ctx, &item, c, cands)
		if err != nil || !ok {
			t.Fatalf("%s: batch replay unusable (ok=%v, err=%v)", item.ItemID, ok, err)
		}
		single, err := v.judgeStrength(ctx, item, cands)
		if err != nil {
			t.Fatal(err)
		}
		kills := 0
		for i, ev := range single {
			want := ev.Status == engine.StatusFail && ev.FailureStage == engine.StageMismatch
			if killed[i] != want {
				t.Errorf("%s %s: batch killed=%v, alone %s/%s (%s)", item.ItemID, cands[i].Name, killed[i], ev.Status, ev.FailureStage, ev.Cause)
			}
			if killed[i] {
				kills++
			}
		}
		t.Logf("%s: %d candidates, %d killed by the batch", item.ItemID, len(cands), kills)
		if kills == 0 && !strings.Contains(item.ItemID, "zero") {
			t.Errorf("%s: the batch killed nothing", item.ItemID)
		}
	}
}

func TestRenameModules(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"module A(input x, output y); B b(.i(x), .o(y)); endmodule\nmodule B(input i, output o); assign o = i; endmodule\n",
			"module A_s(input x, output y); B_s b(.i(x), .o(y)); endmodule\nmodule B_s(input i, output o); assign o = i; endmodule\n"},
		{"// module C\nmodule A(output y); assign y = 1'b0; /* A */ initial $display(\"A\"); endmodule\n",
			"// module C\nmodule A_s(output y); assign y = 1'b0; /* A */ initial $display(\"A\"); endmodule\n"},
		{"`define W 4\nmodule A(output [`W-1:0] y); assign y = 0; endmodule\n",
			"`define W 4\nmodule A_s(output [`W-1:0] y); assign y = 0; endmodule\n"},
	} {
		got, err := renameModules(tc.src, "_s")
		if err != nil || got != tc.want {
			t.Errorf("renameModules(%q) = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "assign x = 1;", "module \\a+b (output y); endmodule"} {
		if _, err := renameModules(bad, "_s"); err == nil {
			t.Errorf("renameModules(%q): want an error", bad)
		}
	}
}

func FuzzRenameModules(f *testing.F) {
	f.Add("module A(input x, output y); B b(.i(x), .o(y)); endmodule\nmodule B(input i, output o); assign o = i; endmodule\n")
	f.Add("`define M module\nmodule A; endmodule")
	f.Fuzz(func(t *testing.T, src string) {
		out, err := renameModules(src, "_crucible_a0")
		if err != nil {
			return
		}
		toks, err := lexVerilog(out, lexOptions{skipDefines: true})
		if err != nil {
			t.Fatalf("renamed text does not lex: %v", err)
		}
		for i := 0; i+1 < len(toks); i++ {
			if toks[i].isKeyword("module") && toks[i+1].Kind == tokIdent && !strings.HasSuffix(toks[i+1].Text, "_crucible_a0") {
				t.Fatalf("module %q not renamed in %q", toks[i+1].Text, out)
			}
		}
	})
}
