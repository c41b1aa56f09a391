package rtl

import (
	"testing"

	"github.com/crucible-data/crucible/engine/judgetest"
)

// The RTL verifier, with its harness-strength audit on, holds to the one
// judge contract.
func TestRTLVerifierIsAJudge(t *testing.T) {
	cfg := testConfig(t)
	cfg.StrengthAudit = true
	judgetest.Run(t, newTestVerifier(t, cfg), judgetest.Fixture{
		Item:  counterItem(t, 40),
		Right: goodCounter,
		Wrong: []string{
			// counts by two
			`module TopModule (input clk, input reset, input en, output reg [3:0] q);
  always @(posedge clk) if (reset) q <= 0; else if (en) q <= q + 2;
endmodule
`,
			// output stuck at 0
			`module TopModule (input clk, input reset, input en, output [3:0] q); assign q = 4'd0; endmodule
`,
			// instantiates the reference instead of implementing it
			`module TopModule (input clk, input reset, input en, output [3:0] q);
  RefModule r (.clk(clk), .reset(reset), .en(en), .q(q));
endmodule
`},
		BrokenReference: "module RefModule (input clk, input reset, input en, output reg [3:0] q);\n  always @(posedge clk) q <= ;\nendmodule\n",
	})
}
