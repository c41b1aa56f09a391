package rtl

import (
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// counterRef is a 4-bit counter with a synchronous active-high reset.
const counterRef = `
module RefModule (input clk, input reset, input en, output reg [3:0] q);
  always @(posedge clk)
    if (reset) q <= 4'd0;
    else if (en) q <= q + 4'd1;
endmodule
`

var counterIface = engine.Interface{Top: "TopModule", Clock: "clk", Reset: "reset", ResetPolarity: "high", ResetKind: "sync",
	Ports: []engine.Port{{Name: "clk", Direction: "input", Width: 1}, {Name: "reset", Direction: "input", Width: 1},
		{Name: "en", Direction: "input", Width: 1}, {Name: "q", Direction: "output", Width: 4}}}

// counterItem is a differential item whose harness is generated.
func counterItem(t testing.TB, cycles int) engine.Item {
	t.Helper()
	o := DefaultTBOptions()
	o.Cycles = cycles
	tb, err := GenerateDifferentialTB(counterIface, o)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Item{ItemID: "counter", Domain: engine.DomainRTL, Interface: counterIface, Reference: counterRef,
		Verifier: engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"}}
}

const goodCounter = `
module TopModule (input clk, input reset, input en, output reg [3:0] q);
  always @(posedge clk) begin
    if (reset) q <= 0;
    else if (en) q <= q + 1;
  end
endmodule
`

// wrapCounter returns a correct counter with extra lines in its body.
func wrapCounter(extra string) string {
	return `
module TopModule (input clk, input reset, input en, output reg [3:0] q);
  always @(posedge clk) begin
    if (reset) q <= 0;
    else if (en) q <= q + 1;
  end
` + extra + `
endmodule
`
}

// selfCheckItem is an RTLLM-style item: the testbench checks an adder
// itself, waits for the DUT's done flag, and prints a pass marker.
func selfCheckItem() engine.Item {
	harness := `
` + "`timescale 1ns/1ps" + `
module tb;
  reg [7:0] a, b; wire [8:0] s; wire done;
  integer errors = 0, i;
  TopModule dut (.a(a), .b(b), .s(s), .done(done));
  initial begin
    for (i = 0; i < 50; i = i + 1) begin
      a = i * 7; b = 255 - i * 3; #5;
      if (s !== a + b) errors = errors + 1;
    end
    wait (done === 1'b1);
    if (errors == 0) $display("===========Your Design Passed===========");
    else $display("===========Error=========== %0d", errors);
    $finish;
  end
  initial begin #100000; $display("watchdog"); $finish; end
endmodule
`
	ref := `
module TopModule (input [7:0] a, input [7:0] b, output [8:0] s, output done);
  assign s = a + b;
  assign done = 1'b1;
endmodule
`
	return engine.Item{ItemID: "adder", Domain: engine.DomainRTL, Interface: engine.Interface{Top: "TopModule"}, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: harness, Top: "tb",
			PassMarker: "Your Design Passed"}}
}

// helperItem's reference uses a helper module; candidates may define a
// module of the same name.
func helperItem(t testing.TB) engine.Item {
	t.Helper()
	iface := engine.Interface{Top: "TopModule", Ports: []engine.Port{{Name: "a", Direction: "input", Width: 4},
		{Name: "y", Direction: "output", Width: 4}}}
	tb, err := GenerateDifferentialTB(iface, DefaultTBOptions())
	if err != nil {
		t.Fatal(err)
	}
	ref := "module inv(input [3:0] x, output [3:0] z); assign z = ~x; endmodule\n" +
		"module RefModule(input [3:0] a, output [3:0] y); inv u(.x(a), .z(y)); endmodule\n"
	return engine.Item{ItemID: "helper", Domain: engine.DomainRTL, Interface: iface, Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"}}
}
