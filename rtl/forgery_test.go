package rtl

import (
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// wrongCounter is a counter that is wrong in every cycle it counts; each
// forgery below wraps it, so a forgery that worked would turn a certain
// mismatch into a pass.
func wrongCounter(extra string) string {
	return strings.Replace(wrapCounter(extra), "q + 1", "q + 3", 1)
}

// TestForgeryDifferential tries every route we know to make a wrong
// candidate pass a differential harness; none may pass.
func TestForgeryDifferential(t *testing.T) {
	v := newTestVerifier(t, testConfig(t))
	item := counterItem(t, 100)
	fail := engine.StatusFail
	runCases(t, v, item, []caseWant{
		// Printing the verdict text: harmless, it lacks the secret; the
		// harness's own line still reports the mismatches.
		{"print-verdict", wrongCounter(`  final $display("Mismatches: 0 in 200 samples");`), fail, engine.StageMismatch},
		{"print-verdict-initial", wrongCounter(`  initial $display("Mismatches: 0 in 200 samples");`), fail, engine.StageMismatch},
		// Guessing the verdict line's shape without the secret.
		{"fake-secret-line", wrongCounter(`  final $display("CRUCIBLE-00112233445566778899aabbccddeeff mismatches=0 samples=200 time=2000");`), fail, engine.StageMismatch},
		// Ending the run early, so the final block reports few samples.
		{"finish-early", wrongCounter("  initial #3 $finish;"), fail, engine.StageStatic},
		{"stop", wrongCounter("  initial $stop;"), fail, engine.StageStatic},
		{"fatal", wrongCounter("  initial $fatal(0);"), fail, engine.StageStatic},
		// Reaching harness state through hierarchical names.
		{"hier-tb", wrongCounter("  always @(posedge clk) tb.tb_errors = 0;"), fail, engine.StageStatic},
		{"force-tb", wrongCounter("  initial force tb.tb_errors = 0;"), fail, engine.StageStatic},
		{"hier-ref-instance", wrongCounter("  initial force good1.q = 4'd0;"), fail, engine.StageStatic},
		{"root", wrongCounter("  initial $root.tb.tb_errors = 0;"), fail, engine.StageStatic},
		{"defparam", wrongCounter("  defparam tb.good1.W = 1;"), fail, engine.StageMismatch}, // reaches nothing in its own simulation
		{"call-harness-task", wrongCounter("  initial tb_drive;"), fail, engine.StageStatic},
		// Macros assembling a harness path, token pasting, include.
		{"macro-path", "`define T tb\n" + wrongCounter("  always @(posedge clk) `T.tb_errors = 0;"), fail, engine.StageStatic},
		{"macro-arg", "`define Z(s) s.tb_errors = 0\n" + wrongCounter("  always @(posedge clk) `Z(tb);"), fail, engine.StageStatic},
		{"token-paste", "`define P(a,b) a``b\n" + wrongCounter("  always @(posedge clk) `P(t,b).tb_errors = 0;"), fail, engine.StageStatic},
		{"include-harness", "`include \"harness.sv\"\n" + wrongCounter(""), fail, engine.StageStatic},
		// Reading the harness (and its secret) or the environment.
		{"readmem", wrongCounter("  reg [7:0] m [0:1023]; initial $readmemh(\"harness.sv\", m);"), fail, engine.StageStatic},
		{"fopen-read", wrongCounter("  integer f; initial f = $fopen(\"harness.sv\", \"r\");"), fail, engine.StageStatic},
		{"plusargs", wrongCounter("  initial if ($test$plusargs(\"x\")) ;"), fail, engine.StageStatic},
		{"value-plusargs", wrongCounter("  integer x; initial if ($value$plusargs(\"x=%d\", x)) ;"), fail, engine.StageStatic},
		{"dumpfile", wrongCounter("  initial $dumpfile(\"harness.sv\");"), fail, engine.StageStatic},
		// Steering the harness's stimulus through the shared $random seed.
		{"steer-stimulus", wrongCounter("  integer k; initial for (k = 0; k < 7; k = k + 1) k = k + ($random & 0);"), fail, engine.StageStatic},
		{"urandom", wrongCounter("  initial if ($urandom) ;"), fail, engine.StageStatic},
		{"unknown-vpi-task", wrongCounter("  initial $my_vpi_hook;"), fail, engine.StageStatic},
		// Wrapping the reference: its outputs would be compared to themselves.
		{"wrap-reference", "module TopModule (input clk, input reset, input en, output [3:0] q);\n  RefModule r (.clk(clk), .reset(reset), .en(en), .q(q));\nendmodule\n", fail, engine.StageStatic},
		{"instantiate-tb", wrongCounter("  tb nested ();"), fail, engine.StageStatic},
		// Driving the shared stimulus (pinning reset for reference and
		// candidate alike): the harness drives inputs from variables, which
		// Icarus refuses to let a port drive.
		{"drive-input", "module TopModule(input clk, input reset, input en, output reg [3:0] q);\n assign reset = 1'b1;\n always @(posedge clk) q <= 0;\nendmodule", fail, engine.StageElaborate},
		{"inout-input", "module TopModule(input clk, inout reset, input en, output reg [3:0] q);\n assign reset = 1'b1;\n always @(posedge clk) q <= 0;\nendmodule", fail, engine.StageElaborate},
		{"output-input", "module TopModule(input clk, output reg reset, input en, output reg [3:0] q);\n always @* reset = 1'b1;\n always @(posedge clk) q <= 0;\nendmodule", fail, engine.StageElaborate},
		// Shadowing harness modules.
		// (In the candidate's own simulation they shadow nothing.)
		{"define-tb", wrongCounter("") + "\nmodule tb; endmodule\n", fail, engine.StageMismatch},
		{"define-ref", wrongCounter("") + "\nmodule RefModule(input clk, input reset, input en, output [3:0] q); assign q = 0; endmodule\n", fail, engine.StageMismatch},
		{"escaped-tb", wrongCounter("") + "\nmodule \\tb ; endmodule\n", fail, engine.StageMismatch},
		{"bind", wrongCounter("") + "\nbind tb top_module1 x();\n", fail, engine.StageStatic},
		// Harmless look-alikes must not be screened: names in comments and strings.
		{"harmless-text", strings.Replace(goodCounter, "endmodule", "  // $system $finish tb.tb_errors `include\n  initial $display(\"$finish tb.x CRUCIBLE-\");\nendmodule", 1), engine.StatusPass, ""},
	})
}

// TestForgeryVerilogEval attacks a real VerilogEval harness (stimulus_gen,
// stats1 counters, wavedrom tasks).
func TestForgeryVerilogEval(t *testing.T) {
	items := loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl")
	var item engine.Item
	for _, it := range items {
		if strings.Contains(it.ItemID, "Prob001_zero") {
			item = it
		}
	}
	if item.ItemID == "" {
		t.Fatal("Prob001_zero not in dataset")
	}
	v := newTestVerifier(t, testConfig(t))
	wrong := func(extra string) string {
		return "module TopModule (output zero);\n  assign zero = 1'b1;\n" + extra + "\nendmodule\n"
	}
	fail := engine.StatusFail
	runCases(t, v, item, []caseWant{
		{"right", "module TopModule (output zero);\n  assign zero = 1'b0;\nendmodule\n", engine.StatusPass, ""},
		{"wrong", wrong(""), fail, engine.StageMismatch},
		{"force-stats", wrong("  always @(stim1.clk) force tb.stats1.errors = 0;"), fail, engine.StageStatic},
		{"upward-stim", wrong("  initial force stim1.clk = 0;"), fail, engine.StageStatic},
		{"task-upward", wrong("  initial wait_for_end_of_timestep;"), fail, engine.StageStatic},
		{"stimulus-shadow", wrong("") + "module stimulus_gen(input clk, output reg [511:0] wavedrom_title, output reg wavedrom_enable); initial #1 $finish; endmodule\n", fail, engine.StageStatic},
		{"print-mismatches", wrong("  final $display(\"Mismatches: 0 in 20 samples\");"), fail, engine.StageMismatch},
	})
}

// TestJudgeRules covers the pass rule's corners directly.
func TestJudgeRules(t *testing.T) {
	const s = "0123456789abcdef0123456789abcdef"
	line := func(m, n int) string {
		return "CRUCIBLE-" + s + " mismatches=" + itoa(m) + " samples=" + itoa(n) + " time=10\n"
	}
	cases := []struct {
		name, out string
		expected  int64
		status    string
		stage     string
	}{
		{"pass", "hint\n" + line(0, 20), 20, engine.StatusPass, ""},
		{"pass-unknown-expected", line(0, 20), 0, engine.StatusPass, ""},
		{"mismatch", line(3, 20), 20, engine.StatusFail, engine.StageMismatch},
		{"zero-samples", line(0, 0), 0, engine.StatusFail, engine.StageNoVerdict},
		{"short-run", line(0, 10), 20, engine.StatusFail, engine.StageNoVerdict},
		{"twice", line(0, 20) + line(0, 20), 20, engine.StatusFail, engine.StageNoVerdict},
		{"not-last", line(0, 20) + "trailing\n", 20, engine.StatusFail, engine.StageNoVerdict},
		{"other-secret", strings.Replace(line(0, 20), s, strings.Repeat("f", 32), 1), 20, engine.StatusFail, engine.StageNoVerdict},
		{"prefixed", "x" + line(0, 20), 20, engine.StatusFail, engine.StageNoVerdict},
		{"missing", "Mismatches: 0 in 20 samples\n", 20, engine.StatusFail, engine.StageNoVerdict},
		{"empty", "", 20, engine.StatusFail, engine.StageNoVerdict},
	}
	for _, c := range cases {
		v := judgeCounted([]byte(c.out), s, c.expected)
		if v.Status != c.status || v.Stage != c.stage {
			t.Errorf("%s: got %s/%s (%s), want %s/%s", c.name, v.Status, v.Stage, v.Cause, c.status, c.stage)
		}
	}
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
