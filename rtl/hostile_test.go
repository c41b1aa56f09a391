package rtl

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// The hostile-candidate suite for the trace design: every attack class of
// issue 15's RTL rows, each with the verdict it must get (never pass), and
// correct controls that must pass. The attacks wrap a candidate that is
// wrong (a decade counter counting 1..9, or a constant), so a forgery that
// worked would turn a certain mismatch into a pass.

func veItem(t *testing.T, id string) engine.Item {
	t.Helper()
	for _, it := range loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl") {
		if strings.HasSuffix(it.ItemID, id) {
			return it
		}
	}
	t.Fatalf("%s not in the dataset", id)
	return engine.Item{}
}

// count1to9 is wrong against Prob035_count1to10 (it wraps at 9); extra goes
// into its body.
func count1to9(extra string) string {
	return "module TopModule (input clk, input reset, output reg [3:0] q);\n" + extra + "\n" +
		"  always @(posedge clk)\n    if (reset || q == 9) q <= 1;\n    else q <= q + 1;\nendmodule\n"
}

// TestHostileVerilogEval: the differential attacks on a real VerilogEval
// harness (Prob035_count1to10) and the controls.
func TestHostileVerilogEval(t *testing.T) {
	item := veItem(t, "Prob035_count1to10")
	v := newTestVerifier(t, testConfig(t))
	ref, err := RenameModule(item.Reference, RefModuleName, DefaultDUTName)
	if err != nil {
		t.Fatal(err)
	}
	fail, static, mismatch := engine.StatusFail, engine.StageStatic, engine.StageMismatch
	const hdr = "module TopModule (input clk, input reset, output [3:0] q);\n"
	runCases(t, v, item, []caseWant{
		// Escaped identifiers holding " // /* : the lexer reads them as one
		// name each; what follows is still code, and the candidate-only
		// elaboration finds no RefModule and no tb to reach.
		{"escaped-quote-instantiates-ref", hdr + "  wire \\x\" ;\n  RefModule r (.clk(clk), .reset(reset), .q(q));\nendmodule\n", fail, static},
		{"escaped-slashes-reads-tb", hdr + "  wire \\a// ;\n  assign q = tb.q_ref;\nendmodule\n", fail, static},
		{"escaped-comment-forces-errors", count1to9("  wire \\b/* ;\n  initial force tb.stats1.errors = 0;"), fail, static},
		{"reads-ref-instance", hdr + "  assign q = tb.good1.q;\nendmodule\n", fail, static},
		{"root-path", hdr + "  assign q = $root.tb.q_ref;\nendmodule\n", fail, static},
		// Adjacent macros pasting one forbidden token.
		{"macro-paste-fopen", "`define S $f\n`define FO open\n" + count1to9("  integer f;\n  initial f = `S`FO(\"harness.sv\", \"r\");"), fail, static},
		{"macro-paste-refname", "`define R Ref\n`define M Module\n" + hdr + "  `R`M r (.clk(clk), .reset(reset), .q(q));\nendmodule\n", fail, static},
		{"macro-paste-force", "`define F for\n`define CE ce\n" + count1to9("  initial `F`CE reset = 1'b1;"), fail, static},
		// Forcing its own input ports (the net the harness shares with the
		// reference) and plain driving of them.
		{"initial-force-input", count1to9("  initial force reset = 1'b1;"), fail, static},
		{"release-input", count1to9("  initial release reset;"), fail, static},
		// (Driving an input port: its own simulation refuses the second driver.)
		{"drive-own-input", "module TopModule (input clk, input reset, output reg [3:0] q);\n  assign reset = 1'b1;\n  always @(posedge clk) q <= 1;\nendmodule\n", fail, engine.StageElaborate},
		// Reading the harness (and a secret) from the job directory.
		{"readmem-harness", count1to9("  reg [7:0] m [0:1023];\n  initial $readmemh(\"harness.sv\", m);"), fail, static},
		{"include-harness", "`include \"harness.sv\"\n" + count1to9(""), fail, static},
		{"include-absolute", "`include \"/etc/hostname\"\n" + count1to9(""), fail, static},
		{"line-directive", "`line 1 \"harness.sv\" 0\n" + count1to9(""), fail, static},
		// Printing a verdict: stdout is not read.
		{"prints-verdict", count1to9("  final $display(\"Mismatches: 0 in 434 samples\");\n  final $display(\"CRUCIBLE-00112233445566778899aabbccddeeff mismatches=0 samples=434 time=4345\");"), fail, mismatch},
		{"finish-early", count1to9("  initial #3 $finish;"), fail, static},
		// Verilator-only escapes.
		{"verilator-c", count1to9("  initial $c(\"system(\\\"id\\\");\");"), fail, static},
		{"systemc-header", "`systemc_header\n#include <cstdlib>\n`systemc_header_end\n" + count1to9(""), fail, static},
		{"dpi-import", "import \"DPI-C\" function int system(input string cmd);\n" + count1to9(""), fail, static},
		// Trivial candidates.
		{"empty-body", hdr + "endmodule\n", fail, mismatch},
		{"all-x", hdr + "  assign q = 4'bxxxx;\nendmodule\n", fail, mismatch},
		{"all-z", hdr + "  assign q = 4'bzzzz;\nendmodule\n", fail, mismatch},
		{"const-1", hdr + "  assign q = 4'd1;\nendmodule\n", fail, mismatch},
		{"wrong", count1to9(""), fail, mismatch},
		// Controls.
		{"reference", ref, engine.StatusPass, ""},
		{"reference-with-defines", "`define ONE 4'd1\n`define TEN 4'd10\n`timescale 1ps/1ps\n" +
			strings.Replace(strings.Replace(ref, "q <= 1;", "q <= `ONE;", 1), "q == 10", "q == `TEN", 1), engine.StatusPass, ""},
		{"function-and-generate", "module TopModule (input clk, input reset, output reg [3:0] q);\n" +
			"  function automatic [3:0] nxt(input [3:0] x, input r);\n    nxt = (r || x == 4'd10) ? 4'd1 : x + 4'd1;\n  endfunction\n" +
			"  wire [3:0] n;\n  genvar i;\n  generate for (i = 0; i < 4; i = i + 1) begin : g\n    assign n[i] = nxt(q, reset) >> i;\n  end endgenerate\n" +
			"  always @(posedge clk) q <= n;\nendmodule\n", engine.StatusPass, ""},
		{"task-and-escaped-names", "module TopModule (input clk, input reset, output reg [3:0] q);\n  reg [3:0] \\$next$q ;\n" +
			"  task step(input [3:0] x, input r, output [3:0] y);\n    y = (r || x == 10) ? 1 : x + 1;\n  endtask\n" +
			"  always @(posedge clk) begin step(q, reset, \\$next$q ); q <= \\$next$q ; end\nendmodule\n", engine.StatusPass, ""},
		{"comments-and-strings-lookalikes", strings.Replace(ref, "endmodule",
			"  // $system $finish tb.q_ref force `include\n  initial if (0) $display(\"$fopen tb.x RefModule force\");\nendmodule", 1), engine.StatusPass, ""},
	})
}

// TestHostileWeakSelfChecking: a weak self-checking testbench (compares
// with !=, so x counts as correct; never checks output c) prints its pass
// marker for trivial candidates; under the trace design they all fail,
// while the reference and a slower correct design pass.
func TestHostileWeakSelfChecking(t *testing.T) {
	harness := "`timescale 1ns/1ps\n" + `module tb;
  reg [7:0] a, b; wire [8:0] s; wire c;
  integer errors = 0, i;
  TopModule dut (.a(a), .b(b), .s(s), .c(c));
  initial begin
    for (i = 0; i < 40; i = i + 1) begin
      a = i * 7; b = 200 - i * 3; #5;
      if (s != a + b) errors = errors + 1;
    end
    if (errors == 0) $display("ALL TESTS PASSED");
    else $display("FAILED %0d", errors);
    $finish;
  end
endmodule
`
	ref := "module TopModule (input [7:0] a, input [7:0] b, output [8:0] s, output c);\n  assign s = a + b;\n  assign c = a[1] ^ b[1];\nendmodule\n"
	item := engine.Item{ItemID: "weak-adder", Domain: engine.DomainRTL, Interface: engine.Interface{Top: "TopModule"}, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: harness, Top: "tb", PassMarker: "ALL TESTS PASSED"}}
	const hdr = "module TopModule (input [7:0] a, input [7:0] b, output [8:0] s, output c);\n"
	fail, mismatch := engine.StatusFail, engine.StageMismatch
	v := newTestVerifier(t, testConfig(t))
	runCases(t, v, item, []caseWant{
		{"empty-body", hdr + "endmodule\n", fail, mismatch},
		{"all-x", hdr + "  assign s = 'x;\n  assign c = 1'bx;\nendmodule\n", fail, mismatch},
		{"all-z", hdr + "  assign s = 'z;\n  assign c = 1'bz;\nendmodule\n", fail, mismatch},
		{"const-0", hdr + "  assign s = 0;\n  assign c = 0;\nendmodule\n", fail, mismatch},
		{"const-1", hdr + "  assign s = '1;\n  assign c = 1;\nendmodule\n", fail, mismatch},
		{"c-stuck-0", hdr + "  assign s = a + b;\n  assign c = 1'b0;\nendmodule\n", fail, mismatch},
		{"c-stuck-1", hdr + "  assign s = a + b;\n  assign c = 1'b1;\nendmodule\n", fail, mismatch},
		{"prints-marker", hdr + "  assign s = 0;\n  assign c = 0;\n  initial #1 $display(\"ALL TESTS PASSED\");\nendmodule\n", fail, mismatch},
		{"reference", ref, engine.StatusPass, ""},
		{"slower-correct", hdr + "  reg [8:0] acc; integer k;\n  always @* begin\n    acc = a;\n    for (k = 0; k < 300; k = k + 1) if (k < b) acc = acc + 1;\n  end\n" +
			"  assign s = acc;\n  assign c = ^{a[1], b[1]};\nendmodule\n", engine.StatusPass, ""},
	})
}

// TestHostileNetlistControl: a Yosys netlist of a VerilogEval reference
// (escaped \$ names kept with -norename, internal cells written as
// assigns/always) passes.
func TestHostileNetlistControl(t *testing.T) {
	requireTools(t, "yosys")
	item := veItem(t, "Prob035_count1to10")
	ref, err := RenameModule(item.Reference, RefModuleName, DefaultDUTName)
	if err != nil {
		t.Fatal(err)
	}
	net, _, err := runYosys(context.Background(), ref, "read_verilog -sv design.sv; synth -top TopModule; write_verilog -noattr -norename net.v", "net.v", DefaultConfig().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(net), `\$`) {
		t.Fatalf("netlist has no escaped $ names; the control does not test them:\n%s", net)
	}
	v := newTestVerifier(t, testConfig(t))
	runCases(t, v, item, []caseWant{{"yosys-netlist", string(net), engine.StatusPass, ""}})
}

// TestStaticAcceptsReferencesWithDefines: every VerilogEval reference, with
// a harmless `define (and a use of it) added, passes the static check (the
// old text screen failed 34 of them).
func TestStaticAcceptsReferencesWithDefines(t *testing.T) {
	items := loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl")
	v := newTestVerifier(t, testConfig(t))
	for _, c := range selfCandidates(t, items) {
		code := "`define CRUCIBLE_ONE 1'b1\n`timescale 1ps/1ps\n" + c.Code + "\n// `CRUCIBLE_ONE\n"
		_, f, o, err := v.staticCheck(context.Background(), code)
		if err != nil {
			t.Fatal(err)
		}
		if o != nil {
			t.Fatalf("%s: %s: %s", c.ItemID, o.Stage, o.Cause)
		}
		if f != nil {
			t.Errorf("%s: static finding on a correct reference: %s", c.ItemID, f.Error())
		}
	}
}

// TestWeakReferenceFlagged: a seed whose reference drives a constant 0 is
// not verified by comparing it with itself: its self-check is
// weak_verifier, and a candidate's pass on it is unjudged.
func TestWeakReferenceFlagged(t *testing.T) {
	iface := engine.Interface{Top: "TopModule", Ports: []engine.Port{{Name: "a", Direction: "input", Width: 4},
		{Name: "y", Direction: "output", Width: 4}}}
	tb, err := GenerateDifferentialTB(iface, DefaultTBOptions())
	if err != nil {
		t.Fatal(err)
	}
	item := engine.Item{ItemID: "const0", Domain: engine.DomainRTL, Interface: iface,
		Reference: "module RefModule(input [3:0] a, output [3:0] y); assign y = 4'd0; endmodule\n",
		Verifier:  engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"}}
	v := newTestVerifier(t, testConfig(t))
	refs, err := v.VerifyReferences(context.Background(), []engine.Item{item})
	if err != nil {
		t.Fatal(err)
	}
	if refs[0].Status != engine.StatusUnjudged || refs[0].FailureStage != engine.StageWeakVerifier {
		t.Errorf("constant-0 reference: %s/%s (%s), want unjudged/weak_verifier", refs[0].Status, refs[0].FailureStage, refs[0].Cause)
	}
	runCases(t, v, item, []caseWant{
		{"const-0", "module TopModule(input [3:0] a, output [3:0] y); assign y = 0; endmodule\n", engine.StatusUnjudged, engine.StageWeakVerifier},
		{"wrong", "module TopModule(input [3:0] a, output [3:0] y); assign y = a; endmodule\n", engine.StatusFail, engine.StageMismatch},
	})
	// A reference with a live output is not weak.
	good := helperItem(t)
	refs, err = v.VerifyReferences(context.Background(), []engine.Item{good})
	if err != nil {
		t.Fatal(err)
	}
	if refs[0].Status != engine.StatusPass {
		t.Errorf("inverter reference: %s/%s (%s), want pass", refs[0].Status, refs[0].FailureStage, refs[0].Cause)
	}
	if m, _ := refs[0].Measurement("toggling_outputs"); m.Int != 1 {
		t.Errorf("inverter reference: toggling_outputs %d, want 1", m.Int)
	}
}

// TestSelfCheckingNeedsHarnessPass: under a self-checking contract a trace
// equal to the reference's is not enough; the trusted harness, run with the
// candidate, must pass too. The harness checks 1 ns after each input change;
// a candidate whose output settles 2 ns late matches the reference at every
// port sample (each taken just before the next change) but fails the harness.
func TestSelfCheckingNeedsHarnessPass(t *testing.T) {
	harness := "`timescale 1ns/1ps\n" + `module tb;
  reg [3:0] a; wire [3:0] y;
  integer errors = 0, i;
  TopModule dut (.a(a), .y(y));
  initial begin
    for (i = 0; i < 20; i = i + 1) begin
      a = i; #1;
      if (y !== ~a) errors = errors + 1;
      #4;
    end
    if (errors == 0) $display("PASS");
    $finish;
  end
endmodule
`
	ref := "module TopModule (input [3:0] a, output [3:0] y);\n  assign y = ~a;\nendmodule\n"
	item := engine.Item{ItemID: "inv", Domain: engine.DomainRTL, Interface: engine.Interface{Top: "TopModule"}, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: harness, Top: "tb", PassMarker: "PASS"}}
	v := newTestVerifier(t, testConfig(t))
	evs := runCases(t, v, item, []caseWant{
		{"reference", ref, engine.StatusPass, ""},
		{"late", "module TopModule (input [3:0] a, output [3:0] y);\n  assign #2 y = ~a;\nendmodule\n", engine.StatusFail, engine.StageNoVerdict},
	})
	if !strings.Contains(evs[1].Cause, "trace matches") {
		t.Errorf("late: cause %q does not say the trace matched and the harness failed", evs[1].Cause)
	}
}
