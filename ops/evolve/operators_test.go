package evolve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

const counterSrc = `module RefModule (
    input clk,
    input rst,
    input en,
    output reg [3:0] q,
    output carry
);
    // terminal count 9
    assign carry = en && (q == 4'd9);
    always @(posedge clk) begin
        if (rst) q <= 4'd0;
        else if (en) q <= (q == 4'd9) ? 4'd0 : q + 4'd1;
    end
endmodule
`

const asyncSrc = `module RefModule (input clk, input rst_n, input din, output reg [7:0] sr);
    always @(posedge clk or negedge rst_n)
        if (!rst_n) sr <= 8'd0;
        else sr <= {sr[6:0], din};
endmodule
`

const fsmSrc = `module RefModule (input clk, input reset, input x, output y);
    localparam A = 2'd0, B = 2'd1, C = 2'd2;
    reg [1:0] state, next;
    always @(*) begin
        case (state)
            A: next = x ? B : A;
            B: next = x ? C : A;
            C: next = A;
            default: next = A;
        endcase
    end
    always @(posedge clk) if (reset) state <= A; else state <= next;
    assign y = (state == C);
endmodule
`

const combSrc = `module RefModule (input [7:0] a, input [7:0] b, output [7:0] s, output lt, output [7:0] sh);
    assign s = a + b;
    assign lt = a < b;
    assign sh = a << b[2:0];
endmodule
`

var (
	counterIface = engine.Interface{Clock: "clk", Reset: "rst", ResetPolarity: "high", ResetKind: "sync", Ports: []engine.Port{
		{Name: "clk", Direction: "input", Width: 1}, {Name: "rst", Direction: "input", Width: 1}, {Name: "en", Direction: "input", Width: 1},
		{Name: "q", Direction: "output", Width: 4}, {Name: "carry", Direction: "output", Width: 1}}}
	asyncIface = engine.Interface{Clock: "clk", Reset: "rst_n", ResetPolarity: "low", ResetKind: "async", Ports: []engine.Port{
		{Name: "clk", Direction: "input", Width: 1}, {Name: "rst_n", Direction: "input", Width: 1}, {Name: "din", Direction: "input", Width: 1},
		{Name: "sr", Direction: "output", Width: 8}}}
	fsmIface  = engine.Interface{Clock: "clk", Reset: "reset", ResetPolarity: "high", ResetKind: "sync"}
	combIface = engine.Interface{}
)

func TestOperators(t *testing.T) {
	cases := []struct {
		op, src string
		iface   engine.Interface
		want    []string // substrings of the mutated source
		gone    []string // substrings that must disappear
		na      bool
	}{
		{op: "reset_polarity", src: counterSrc, iface: counterIface, want: []string{"if ((!rst)) q <= 4'd0;"}},
		{op: "reset_polarity", src: asyncSrc, iface: asyncIface, want: []string{"posedge rst_n", "if (rst_n) sr"}, gone: []string{"!rst_n"}},
		{op: "reset_polarity", src: combSrc, iface: combIface, na: true},
		{op: "reset_sync_async", src: counterSrc, iface: counterIface, want: []string{"always @(posedge clk or posedge rst) begin"}},
		{op: "reset_sync_async", src: asyncSrc, iface: asyncIface, want: []string{"always @(posedge clk)\n"}},
		{op: "bus_width", src: counterSrc, iface: counterIface, want: []string{"output reg [7:0] q", "q == 8'd9", "q + 8'd1"}},
		{op: "counter_modulus", src: counterSrc, iface: counterIface, want: []string{"(q == 4'd7);", "(q == 4'd7) ? 4'd0"}, gone: []string{"4'd9"}},
		{op: "counter_modulus", src: combSrc, iface: combIface, na: true},
		{op: "arith_swap", src: counterSrc, iface: counterIface, want: []string{"q - 4'd1"}},
		{op: "arith_swap", src: combSrc, iface: combIface, want: []string{"assign s = a - b;"}},
		{op: "compare_swap", src: combSrc, iface: combIface, want: []string{"assign lt = a > b;"}},
		{op: "compare_swap", src: counterSrc, iface: counterIface, want: []string{"en && (q != 4'd9)"}},
		{op: "shift_direction", src: combSrc, iface: combIface, want: []string{"a >> b[2:0]"}},
		{op: "shift_direction", src: asyncSrc, iface: asyncIface, want: []string{"sr <= {din, sr[7:1]};"}},
		{op: "fsm_transition", src: fsmSrc, iface: fsmIface, want: []string{"A: next = x ? A : B;"}},
		{op: "fsm_output", src: fsmSrc, iface: fsmIface, want: []string{"assign y = (state == A);"}},
		{op: "fsm_output", src: counterSrc, iface: counterIface, na: true},
		{op: "enable_gating", src: counterSrc, iface: counterIface, want: []string{"else if (!en) q <="}},
		{op: "enable_gating", src: asyncSrc, iface: asyncIface, want: []string{"input clk,\n    input ce,", "else if (ce) sr <="}},
		{op: "enable_gating", src: combSrc, iface: combIface, na: true},
		{op: "rename_signal", src: fsmSrc, iface: fsmIface, want: []string{"case (state_r)", "state_r <= next"}},
		{op: "dead_code", src: combSrc, iface: combIface, want: []string{"crucible_unused_w"}},
		{op: "reformat", src: counterSrc, iface: counterIface, gone: []string{"// terminal count"}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			op, ok := OperatorByName(c.op)
			if !ok {
				t.Fatalf("no operator %s", c.op)
			}
			d, err := vlog.Parse(c.src, "RefModule")
			if err != nil {
				t.Fatal(err)
			}
			m, err := op.Apply(d, c.iface)
			if c.na {
				if !errors.Is(err, ErrNotApplicable) {
					t.Fatalf("want not applicable, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(m.Source, w) {
					t.Errorf("missing %q in\n%s", w, m.Source)
				}
			}
			for _, g := range c.gone {
				if strings.Contains(m.Source, g) {
					t.Errorf("still has %q in\n%s", g, m.Source)
				}
			}
			if m.Change == "" || m.Source == c.src {
				t.Errorf("no change declared or source unchanged")
			}
			if _, err := vlog.Parse(m.Source, "RefModule"); err != nil {
				t.Errorf("mutated source does not parse: %v", err)
			}
			// Deterministic: the same input gives the same output.
			m2, _ := op.Apply(d, c.iface)
			if m2.Source != m.Source || m2.Change != m.Change {
				t.Errorf("not deterministic")
			}
			if op.PreservesInterface && !SamePorts(m.Interface, c.iface) {
				t.Errorf("operator claims to preserve the interface but declares %+v", m.Interface.Ports)
			}
		})
	}
}

func TestDeclaredInterfaces(t *testing.T) {
	d, _ := vlog.Parse(counterSrc, "RefModule")
	op, _ := OperatorByName("bus_width")
	m, err := op.Apply(d, counterIface)
	if err != nil || m.Interface.Ports[3].Width != 8 || !strings.Contains(m.Change, "`q`") {
		t.Errorf("bus_width: %v %+v %s", err, m.Interface.Ports, m.Change)
	}
	op, _ = OperatorByName("reset_polarity")
	if m, _ := op.Apply(d, counterIface); m.Interface.ResetPolarity != "low" || !strings.Contains(m.Change, "active-low") {
		t.Errorf("reset_polarity: %+v %s", m.Interface, m.Change)
	}
	op, _ = OperatorByName("reset_sync_async")
	if m, _ := op.Apply(d, counterIface); m.Interface.ResetKind != "async" {
		t.Errorf("reset_sync_async: %+v", m.Interface)
	}
	d2, _ := vlog.Parse(asyncSrc, "RefModule")
	op, _ = OperatorByName("enable_gating")
	if m, _ := op.Apply(d2, asyncIface); len(m.Interface.Ports) != 5 || m.Interface.Ports[1].Name != "ce" {
		t.Errorf("enable_gating ports: %+v", m.Interface.Ports)
	}
}

func TestAdaptParentWrapsChangedInterfaces(t *testing.T) {
	d, _ := vlog.Parse(counterSrc, "RefModule")
	op, _ := OperatorByName("bus_width")
	m, _ := op.Apply(d, counterIface)
	code, err := AdaptParent(counterSrc, counterIface, m.Interface)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"module CrucibleParent", "module TopModule", "output [7:0] q", ".q(q_w)", "{8{1'bx}}"} {
		if !strings.Contains(code, w) {
			t.Errorf("adapter lacks %q:\n%s", w, code)
		}
	}
	same, _ := AdaptParent(counterSrc, counterIface, counterIface)
	if !strings.Contains(same, "module TopModule (") || strings.Contains(same, "CrucibleParent") {
		t.Errorf("same-interface adapter should be a rename:\n%s", same)
	}
}

func TestRoutingAndLineage(t *testing.T) {
	seeds := bundledSeeds(t)
	var pick []engine.Item
	for _, s := range seeds {
		if s.ItemID == "counter_mod10_tc" {
			pick = append(pick, s)
		}
	}
	specOnly := pick[0]
	specOnly.ItemID, specOnly.LineageID, specOnly.Reference = "spec_only", "", ""
	broken := pick[0]
	broken.ItemID, broken.Reference = "broken", strings.Replace(broken.Reference, "4'd9)", "4'd9", 1)
	kernel := engine.Item{ItemID: "k1", Domain: engine.DomainKernel, Reference: "x", ReferenceStatus: engine.RefUnverified}
	derived := pick[0]
	derived.ItemID, derived.LineageID = "child", "root0"
	pick = append(pick, specOnly, broken, kernel, derived)
	cfg := DefaultConfig()
	cfg.Operators = []string{"counter_modulus"}
	e, err := New(cfg, nil, judgesOf(t, testVerifier(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Evolve(context.Background(), pick)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]engine.Item{}
	for _, c := range res.Candidates {
		got[c.ItemID] = c
	}
	want := map[string][3]string{ // route, parent, lineage
		"counter_mod10_tc~counter_modulus": {engine.RouteContractMutation, "counter_mod10_tc", "counter_mod10_tc"},
		"counter_mod10_tc~respecify":       {engine.RouteSolutionFirst, "counter_mod10_tc", "counter_mod10_tc"},
		"spec_only~reword":                 {engine.RouteInstructionFirst, "spec_only", "spec_only"},
		"child~counter_modulus":            {engine.RouteContractMutation, "child", "root0"},
		"child~respecify":                  {engine.RouteSolutionFirst, "child", "root0"},
	}
	if len(got) != len(want) {
		t.Errorf("got %d candidates, want %d: %v", len(got), len(want), res.Counts)
	}
	for id, w := range want {
		c, ok := got[id]
		if !ok {
			t.Errorf("missing %s", id)
			continue
		}
		if c.Route != w[0] || c.ParentID != w[1] || c.LineageID != w[2] || c.Operator == "" {
			t.Errorf("%s: route %s parent %s lineage %s operator %s", id, c.Route, c.ParentID, c.LineageID, c.Operator)
		}
	}
	if m := got["counter_mod10_tc~counter_modulus"]; !strings.Contains(m.Instruction, "## Revision") || !strings.Contains(m.Verifier.Harness, "Generated by crucible") || m.Reference == pick[0].Reference {
		t.Errorf("mutation item not derived from the change: %q", m.Instruction)
	}
	if r := got["counter_mod10_tc~respecify"]; r.Reference != pick[0].Reference || r.Verifier.Harness != pick[0].Verifier.Harness || strings.Contains(r.Instruction, "Modulo-10 (decade)") {
		t.Errorf("respecify must keep reference and verifier and rebuild the spec")
	}
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.ItemID] = s.Reason
	}
	if reasons["broken"] != "reference_not_verified" || reasons["k1"] != "reference_not_verified" {
		t.Errorf("skipped: %v", reasons)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Operators = []string{"reset_polarity", "frobnicate", "reset_polarity"}
	c.TBCycles, c.Generator = 1, "oracle"
	err := c.Validate()
	for _, w := range []string{"frobnicate", "listed twice", "tb_cycles", "oracle"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("validate: %v, want %q", err, w)
		}
	}
}

func TestMutants(t *testing.T) {
	ms, err := Mutants(counterSrc, counterIface, 3)
	if err != nil || len(ms) != 3 || ms[2].Name != "output_invert" {
		t.Fatalf("mutants: %v %+v", err, ms)
	}
	for _, m := range ms {
		if !strings.Contains(m.Code, "module TopModule") || m.Code == counterSrc {
			t.Errorf("%s is not a TopModule candidate", m.Name)
		}
	}
	if ms, _ := Mutants(counterSrc, counterIface, 0); len(ms) != 0 {
		t.Errorf("max 0 gave %d mutants", len(ms))
	}
	if ms, _ := Mutants(counterSrc, counterIface, 1); len(ms) != 1 || ms[0].Name != "output_invert" {
		t.Errorf("max 1: %+v", ms)
	}
}

func TestKernelOperatorsRewriteStores(t *testing.T) {
	src := "void f(const float *x, float *y, int64_t n) {\n\tfloat *o = y + 1;\n\tfor (int64_t i = 0; i < n; i++) o[i - 1] = fmaxf(x[i] * 2.0f, 0.0f);\n}\n"
	iface := engine.Interface{Args: []engine.KernelArg{{Name: "x", Role: "input", Shape: []int64{8}, DType: "float32"},
		{Name: "y", Role: "output", Shape: []int64{8}, DType: "float32"}, {Name: "n", Role: "scalar", Shape: []int64{8}, DType: "int64"}}}
	want := map[string]string{
		"fused_scale":      "o[i - 1] = (fmaxf(x[i] * 2.0f, 0.0f)) * 0.5f;",
		"fused_bias":       "o[i - 1] = (fmaxf(x[i] * 2.0f, 0.0f)) + 1.0f;",
		"fused_activation": "o[i - 1] = ((fmaxf(x[i] * 2.0f, 0.0f)) > 0 ? (fmaxf(x[i] * 2.0f, 0.0f)) : 0);",
		"activation_swap":  "o[i - 1] = ((x[i] * 2.0f) > 0 ? (x[i] * 2.0f) : 0.01f * (x[i] * 2.0f));",
		"dtype_f64":        "void f(const double *x, double *y, int64_t n) {\n\tdouble *o = y + 1;",
	}
	for _, op := range KernelOperators() {
		m, err := op.Apply(src, iface, "cpu")
		if err != nil {
			t.Errorf("%s: %v", op.Name, err)
			continue
		}
		if !strings.Contains(m.Source, want[op.Name]) {
			t.Errorf("%s: got\n%s", op.Name, m.Source)
		}
	}
	op, _ := KernelOperatorByName("dtype_f64")
	if m, _ := op.Apply(src, iface, "cpu"); m.Interface.Args[1].DType != "float64" || m.Interface.Tolerance != 0 || iface.Args[1].DType != "float32" {
		t.Errorf("dtype_f64 interface %+v (parent must be untouched)", m.Interface)
	}
	if _, err := op.Apply(src, iface, "triton"); !errors.Is(err, ErrNotApplicable) {
		t.Errorf("triton: %v", err)
	}
	op, _ = KernelOperatorByName("activation_swap")
	if _, err := op.Apply("void f(float *y){ y[0] = 1.0f; }", iface, "cpu"); !errors.Is(err, ErrNotApplicable) {
		t.Errorf("no activation: %v", err)
	}
}
