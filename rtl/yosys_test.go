package rtl

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func TestExtractInterface(t *testing.T) {
	requireTools(t, "yosys", "prlimit")
	cases := []struct {
		name, src string
		want      engine.Interface
	}{
		{"async-high", `module m(input clk, input areset, input [3:0] d, output reg [3:0] q);
  always @(posedge clk or posedge areset) if (areset) q <= 0; else q <= d;
endmodule`, engine.Interface{Clock: "clk", Reset: "areset", ResetPolarity: "high", ResetKind: "async"}},
		{"async-low", `module m(input clk, input rst_n, input [7:0] d, output reg [7:0] q);
  always @(posedge clk or negedge rst_n) if (!rst_n) q <= 0; else q <= d;
endmodule`, engine.Interface{Clock: "clk", Reset: "rst_n", ResetPolarity: "low", ResetKind: "async"}},
		{"sync-high", `module m(input clk, input reset, input load, input [3:0] d, output reg [3:0] q);
  always @(posedge clk) if (reset) q <= 4'd3; else if (load) q <= d;
endmodule`, engine.Interface{Clock: "clk", Reset: "reset", ResetPolarity: "high", ResetKind: "sync"}},
		{"sync-low", `module m(input clk, input resetn, input [3:0] d, output reg [3:0] q);
  always @(posedge clk) if (!resetn) q <= 0; else q <= d;
endmodule`, engine.Interface{Clock: "clk", Reset: "resetn", ResetPolarity: "low", ResetKind: "sync"}},
		{"combinational", `module m(input [2:0] a, input signed [4:0] b, output [5:0] y);
  assign y = a + b;
endmodule`, engine.Interface{}},
		{"always-comb-fsm", `module m(input clk, input reset, input x, output z);
  typedef enum logic [1:0] {A, B, C} st_t;
  st_t s, n;
  always_comb begin
    case (s)
      A: n = x ? B : A;
      B: n = x ? C : A;
      default: n = A;
    endcase
  end
  always @(posedge clk) if (reset) s <= A; else s <= n;
  assign z = (s == C);
endmodule`, engine.Interface{Clock: "clk", Reset: "reset", ResetPolarity: "high", ResetKind: "sync"}},
	}
	for _, c := range cases {
		got, err := ExtractInterface(context.Background(), c.src, "m")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Clock != c.want.Clock || got.Reset != c.want.Reset || got.ResetPolarity != c.want.ResetPolarity || got.ResetKind != c.want.ResetKind {
			t.Errorf("%s: clock/reset %q %q %q %q, want %q %q %q %q", c.name, got.Clock, got.Reset, got.ResetPolarity, got.ResetKind,
				c.want.Clock, c.want.Reset, c.want.ResetPolarity, c.want.ResetKind)
		}
		if c.name == "combinational" {
			want := []engine.Port{{Name: "a", Direction: "input", Width: 3}, {Name: "b", Direction: "input", Width: 5, Signed: true},
				{Name: "y", Direction: "output", Width: 6}}
			if len(got.Ports) != 3 {
				t.Fatalf("ports %+v", got.Ports)
			}
			for i := range want {
				if got.Ports[i] != want[i] {
					t.Errorf("port %d: %+v, want %+v", i, got.Ports[i], want[i])
				}
			}
		}
	}
	_, err := ExtractInterface(context.Background(), "module m(input a, output y);\n assign y = a +;\nendmodule", "m")
	if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "ERROR") {
		t.Errorf("syntax error: got %v, want ErrParse quoting Yosys", err)
	}
	_, err = ExtractInterface(context.Background(), "module m(input a, output y); assign y = a; endmodule", "nope")
	if !errors.Is(err, ErrParse) {
		t.Errorf("missing top: got %v, want ErrParse", err)
	}
}

// TestGeneratedHarnessJudgesVerilogEval derives interfaces from VerilogEval
// references with Yosys, generates differential harnesses from them, and
// checks that the reference passes its generated harness while a mutated
// reference fails it: the generator's output is a working differential
// contract, which is what evolution needs.
func TestGeneratedHarnessJudgesVerilogEval(t *testing.T) {
	requireTools(t, "yosys")
	items := loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl")
	rng := rand.New(rand.NewSource(7))
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	var gen []engine.Item
	var cands []engine.Candidate
	clocked := 0
	for _, it := range items {
		if len(gen) == 16 {
			break
		}
		iface, err := ExtractInterface(context.Background(), it.Reference, RefModuleName)
		if err != nil {
			continue // the two references Yosys 0.23 cannot parse
		}
		iface.Top = DefaultDUTName
		o := DefaultTBOptions()
		o.Cycles, o.Seed = 100, 11
		tb, err := GenerateDifferentialTB(iface, o)
		if err != nil {
			continue // inout ports
		}
		if iface.Clock != "" {
			clocked++
		}
		g := it
		g.Verifier = engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"}
		g.Interface = iface
		gen = append(gen, g)
		self, err := RenameModule(it.Reference, RefModuleName, DefaultDUTName)
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, engine.Candidate{ItemID: g.ItemID, CandidateID: "self", Code: self})
		// A candidate whose outputs are all zero differs from nearly every reference.
		var zero strings.Builder
		zero.WriteString("module TopModule(")
		var decls []string
		for _, p := range iface.Ports {
			decls = append(decls, p.Direction+" ["+itoa(int(p.Width)-1)+":0] "+p.Name)
		}
		zero.WriteString(strings.Join(decls, ", ") + ");\n")
		for _, p := range iface.Ports {
			if p.Direction == "output" {
				zero.WriteString("  assign " + p.Name + " = 0;\n")
			}
		}
		zero.WriteString("endmodule\n")
		cands = append(cands, engine.Candidate{ItemID: g.ItemID, CandidateID: "zero", Code: zero.String()})
	}
	if clocked < 4 {
		t.Fatalf("only %d clocked designs in the sample", clocked)
	}
	v := newTestVerifier(t, testConfig(t))
	evs, err := v.Verify(context.Background(), gen, cands)
	if err != nil {
		t.Fatal(err)
	}
	zeroFails := 0
	for _, ev := range evs {
		if ev.CandidateID == "self" && ev.Status != engine.StatusPass {
			t.Errorf("%s: reference under its generated harness: %s/%s %s\n%s", ev.ItemID, ev.Status, ev.FailureStage, ev.Cause, ev.LogExcerpt)
		}
		if ev.CandidateID == "zero" {
			if ev.Status == engine.StatusFail && ev.FailureStage == engine.StageMismatch {
				zeroFails++
			} else if ev.Status != engine.StatusPass {
				t.Errorf("%s: zero candidate: %s/%s %s", ev.ItemID, ev.Status, ev.FailureStage, ev.Cause)
			}
		}
	}
	if zeroFails < len(gen)*3/4 {
		t.Errorf("the all-zero candidate failed only %d of %d generated harnesses", zeroFails, len(gen))
	}
	t.Logf("%d generated harnesses (%d clocked); all-zero candidate caught by %d", len(gen), clocked, zeroFails)
}

func TestGenerateDifferentialTBRejects(t *testing.T) {
	bad := []engine.Interface{
		{Ports: []engine.Port{{Name: "a", Direction: "inout", Width: 1}, {Name: "y", Direction: "output", Width: 1}}},
		{Ports: []engine.Port{{Name: "a", Direction: "input", Width: 1}}},
		{Ports: []engine.Port{{Name: "y", Direction: "output", Width: 0}}},
		{Clock: "clk", Ports: []engine.Port{{Name: "y", Direction: "output", Width: 1}}},
		{ResetPolarity: "sideways", Ports: []engine.Port{{Name: "y", Direction: "output", Width: 1}}},
	}
	for i, iface := range bad {
		if _, err := GenerateDifferentialTB(iface, DefaultTBOptions()); !errors.Is(err, ErrInput) {
			t.Errorf("case %d: got %v, want ErrInput", i, err)
		}
	}
	o := DefaultTBOptions()
	o.Cycles, o.Top = 0, "bad name"
	err := o.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "cycles") || !strings.Contains(err.Error(), "top") {
		t.Errorf("Validate: %v, want both fields named", err)
	}
}

func TestSynthesize(t *testing.T) {
	requireTools(t, "yosys", "prlimit")
	rep, err := Synthesize(context.Background(), strings.Replace(counterRef, "RefModule", "TopModule", 1), "TopModule", DefaultConfig().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cells < 4 || len(rep.Latches) != 0 || len(rep.Loops) != 0 {
		t.Errorf("counter: %+v", rep)
	}
	rep, err = Synthesize(context.Background(), "module TopModule(input en, input d, output reg q);\n always @(*) if (en) q = d;\nendmodule", "TopModule", DefaultConfig().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Latches) != 1 {
		t.Errorf("latch design: %+v, want one latch", rep)
	}
	rep, err = Synthesize(context.Background(), "module TopModule(input a, output y);\n wire w;\n assign w = ~(w & a);\n assign y = w;\nendmodule", "TopModule", DefaultConfig().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Loops) == 0 {
		t.Errorf("loop design: %+v, want a combinational loop", rep)
	}
}
