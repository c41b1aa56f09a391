package decontam

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam/decontamtest"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/rtl"
)

func TestPortMappingsBounded(t *testing.T) {
	p := func(n, d string, w int32) engine.Port { return engine.Port{Name: n, Direction: d, Width: w} }
	bench := engine.Interface{Ports: []engine.Port{p("a", "input", 1), p("b", "input", 1), p("cin", "input", 1), p("cout", "output", 1), p("sum", "output", 1)}}
	renamed := engine.Interface{Ports: []engine.Port{p("y1", "output", 1), p("y0", "output", 1), p("x2", "input", 1), p("x1", "input", 1), p("x0", "input", 1)}}
	if ShapeKey(bench) != ShapeKey(renamed) {
		t.Fatalf("shape keys differ: %s vs %s", ShapeKey(bench), ShapeKey(renamed))
	}
	maps, total := PortMappings(bench, renamed, 24)
	if total != 12 || len(maps) != 12 {
		t.Fatalf("renamed 3 inputs + 2 outputs: %d mappings of %d, want 12 of 12", len(maps), total)
	}
	if got := maps[0].String(bench); got != "a=x2,b=x1,cin=x0,cout=y1,sum=y0" {
		t.Errorf("first mapping %s, want declaration order", got)
	}
	seen := map[string]bool{}
	for _, m := range maps {
		seen[m.String(bench)] = true
	}
	if len(seen) != 12 {
		t.Errorf("%d distinct mappings, want 12", len(seen))
	}
	if capped, total := PortMappings(bench, renamed, 5); len(capped) != 5 || total != 12 {
		t.Errorf("cap 5: %d mappings of %d", len(capped), total)
	}
	// Same names in another order and spelling: one mapping, by name.
	named := engine.Interface{Ports: []engine.Port{p("SUM", "output", 1), p("i_cin", "input", 1), p("cout_o", "output", 1), p("b", "input", 1), p("a", "input", 1)}}
	maps, total = PortMappings(bench, named, 24)
	if total != 1 || len(maps) != 1 || maps[0].String(bench) != "a=a,b=b,cin=i_cin,cout=cout_o,sum=SUM" {
		t.Fatalf("named: %v of %d", maps, total)
	}
	wide := engine.Interface{Ports: []engine.Port{p("a", "input", 2), p("b", "input", 1), p("cin", "input", 1), p("cout", "output", 1), p("sum", "output", 1)}}
	if ShapeKey(bench) == ShapeKey(wide) {
		t.Error("a 2-bit input has the shape key of a 1-bit one")
	}
}

func TestCodeBlocksAndTop(t *testing.T) {
	text := "Implement a module named TopModule with ports a, b.\n```verilog\nmodule helper(input a, output y); assign y = a; endmodule\nmodule top_x(input a, output y);\n  helper h (.a(a), .y(y)); // module fake(\nendmodule\n```\nprose\n```\nnot verilog\n```"
	bs := codeBlocks(text)
	if len(bs) != 1 {
		t.Fatalf("%d blocks, want 1: %q", len(bs), bs)
	}
	if top := topModule(bs[0]); top != "top_x" {
		t.Errorf("top %q, want top_x", top)
	}
	if bs := codeBlocks("a module named X is wanted; no code here, see endmodule"); len(bs) != 0 {
		t.Errorf("prose gave blocks %q", bs)
	}
}

// truthTable simulates ref over every input combination and returns, per
// combination (inputs concatenated in declaration order, first port most
// significant), the outputs concatenated in declaration order, in binary.
func truthTable(t *testing.T, ref string, iface engine.Interface) []string {
	t.Helper()
	var ins, outs []engine.Port
	n := 0
	for _, p := range iface.Ports {
		if p.Direction == "input" {
			ins = append(ins, p)
			n += int(p.Width)
		} else {
			outs = append(outs, p)
		}
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "module tt_tb;\n  reg [%d:0] v;\n", n-1)
	var conns, onames []string
	lo := n
	for _, p := range ins {
		lo -= int(p.Width)
		conns = append(conns, fmt.Sprintf(".%s(v[%d:%d])", p.Name, lo+int(p.Width)-1, lo))
	}
	for _, p := range outs {
		fmt.Fprintf(&tb, "  wire [%d:0] o_%s;\n", p.Width-1, p.Name)
		conns = append(conns, fmt.Sprintf(".%s(o_%s)", p.Name, p.Name))
		onames = append(onames, "o_"+p.Name)
	}
	fmt.Fprintf(&tb, "  RefModule dut (%s);\n  integer i;\n  initial begin\n    for (i = 0; i < %d; i = i + 1) begin v = i; #1 $display(\"%%b\", {%s}); end\n  end\nendmodule\n",
		strings.Join(conns, ", "), 1<<n, strings.Join(onames, ", "))
	dir := t.TempDir()
	src := filepath.Join(dir, "tt.sv")
	if err := os.WriteFile(src, []byte(ref+"\n"+tb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("iverilog", "-g2012", "-o", filepath.Join(dir, "tt.vvp"), src).CombinedOutput(); err != nil {
		t.Fatalf("iverilog: %v\n%s", err, out)
	}
	out, err := exec.Command("vvp", "-n", filepath.Join(dir, "tt.vvp")).Output()
	if err != nil {
		t.Fatalf("vvp: %v", err)
	}
	rows := strings.Fields(string(out))
	if len(rows) != 1<<n {
		t.Fatalf("truth table has %d rows, want %d", len(rows), 1<<n)
	}
	return rows
}

// caseRewrite writes ref as an exhaustive case table: module renamed,
// outputs first, inputs in reverse order, and (rename) every port given an
// opaque name, so only behaviour is left in common with the benchmark.
func caseRewrite(t *testing.T, ref string, iface engine.Interface, rename bool) string {
	rows := truthTable(t, ref, iface)
	name := func(i int, p engine.Port) string {
		if rename {
			return fmt.Sprintf("sig%d", i)
		}
		return p.Name
	}
	var decls, ins, outs []string
	n, m := 0, 0
	for i, p := range iface.Ports {
		rng := ""
		if p.Width > 1 {
			rng = fmt.Sprintf("[%d:0] ", p.Width-1)
		}
		if p.Direction == "input" {
			decls = append([]string{"input " + rng + name(i, p)}, decls...)
			ins = append(ins, name(i, p))
			n += int(p.Width)
		} else {
			decls = append([]string{"output reg " + rng + name(i, p)}, decls...)
			outs = append(outs, name(i, p))
			m += int(p.Width)
		}
	}
	slices.SortStableFunc(decls, func(a, b string) int { // outputs first
		return strings.Compare(a[:1], b[:1]) * -1
	})
	var b strings.Builder
	fmt.Fprintf(&b, "module lut_design (%s);\n  always @(*) begin\n    case ({%s})\n", strings.Join(decls, ", "), strings.Join(ins, ", "))
	for v, row := range rows {
		fmt.Fprintf(&b, "      %d'b%0*b: {%s} = %d'b%s;\n", n, n, v, strings.Join(outs, ", "), m, row)
	}
	fmt.Fprintf(&b, "      default: {%s} = {%d{1'bx}};\n    endcase\n  end\nendmodule\n", strings.Join(outs, ", "), m)
	return b.String()
}

func TestBehaviouralCatchesTruthTableRewrites(t *testing.T) {
	decontamtest.RequireBehaviouralTools(t)
	ctx := context.Background()
	path := testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl")
	all, err := LoadBenchItems(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 156 {
		t.Fatalf("%d executable problems in %s, want 156", len(all), path)
	}
	keep := []string{"Prob009_popcount3", "Prob011_norgate", "Prob014_andgate", "Prob027_fadd", "Prob029_m2014_q4g"}
	var items []BenchItem
	for _, it := range all {
		if slices.Contains(keep, it.ID) {
			items = append(items, it)
		}
	}
	cfg := BehaviouralConfig{Workers: 2}
	bx, err := NewBehaviouralIndex(ctx, "spec-to-rtl", items, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(bx.Items) != len(keep) || len(bx.Skipped) != 0 {
		t.Fatalf("indexed %d problems, skipped %v", len(bx.Items), bx.Skipped)
	}
	ifaceOf := map[string]engine.Interface{}
	refOf := map[string]string{}
	for i, it := range bx.Items {
		ifaceOf[it.ID], refOf[it.ID] = bx.Ifaces[i], it.Item.Reference
	}
	rewrites := map[string]string{ // corpus id → the problem it re-encodes
		"tt-popcount3": "Prob009_popcount3",
		"tt-fadd":      "Prob027_fadd",
		"tt-q4g":       "Prob029_m2014_q4g",
		"tt-and-named": "Prob014_andgate",
	}
	var corpus RecordSlice
	for _, id := range []string{"tt-popcount3", "tt-fadd", "tt-q4g", "tt-and-named"} {
		b := rewrites[id]
		code := caseRewrite(t, refOf[b], ifaceOf[b], id != "tt-and-named")
		corpus = append(corpus, dedup.Record{ID: id, Fields: []dedup.Field{{Name: "reference", Text: code}}})
	}
	// Same ports as andgate and norgate, another function.
	corpus = append(corpus, dedup.Record{ID: "or-gate", Fields: []dedup.Field{{Name: "reference", Text: "module my_or (input a, input b, output out);\n  assign out = a | b;\nendmodule\n"}}})
	// In the text, fenced: an interface no kept problem has.
	corpus = append(corpus, dedup.Record{ID: "adder8", Fields: []dedup.Field{{Name: "text", Text: "Here is an adder:\n```verilog\nmodule add8 (input [7:0] x, input [7:0] y, output [8:0] s);\n  assign s = x + y;\nendmodule\n```\n"}}})
	corpus = append(corpus, dedup.Record{ID: "broken", Fields: []dedup.Field{{Name: "reference", Text: "module nope (input a, output y);\n  assign y = a +;\nendmodule\n"}}})

	vcfg := rtl.DefaultConfig()
	vcfg.Workers = 2
	v, err := rtl.NewVerifier(vcfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []Match
	var rows []int64
	s, err := CheckBehavioural(ctx, bx, v, corpus, cfg, func(r int64, m Match) error {
		got, rows = append(got, m), append(rows, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s.String())
	hit := map[string]Match{}
	for _, m := range got {
		if m.Method != MethodBehavioural || !m.Contaminated || m.Score != 1 || m.Evidence == "" || m.PortMapping == "" {
			t.Errorf("match %+v is not a complete behavioural match", m)
		}
		if prev, dup := hit[m.CorpusID]; dup {
			t.Errorf("%s matched %s and %s", m.CorpusID, prev.BenchmarkID, m.BenchmarkID)
		}
		hit[m.CorpusID] = m
	}
	for id, b := range rewrites {
		if hit[id].BenchmarkID != b {
			t.Errorf("rewrite %s of %s: behavioural match %q, want %s", id, b, hit[id].BenchmarkID, b)
		}
	}
	// A full adder is symmetric in its inputs, so the first input order
	// tried passes; its outputs are not: the rewrite declares sum before
	// cout, so the second mapping (outputs swapped) is the one.
	if m := hit["tt-fadd"]; !strings.HasSuffix(m.PortMapping, ",cout=sig3,sum=sig4") || !strings.Contains(m.Evidence, `"mappings_tried":2`) {
		t.Errorf("fadd rewrite mapped %s (%s)", m.PortMapping, m.Evidence)
	}
	// One simulation per compatible pair, except fadd's two: named ports
	// (and-named, or-gate) and unique shapes (popcount3) map at once.
	if s.Simulations != 8 {
		t.Errorf("%d simulations, want 8", s.Simulations)
	}
	if m := hit["tt-and-named"]; !strings.Contains(m.Evidence, `"mappings_tried":1`) {
		t.Errorf("same-named ports should map by name at the first try: %s", m.Evidence)
	}
	for _, id := range []string{"or-gate", "adder8", "broken"} {
		if m, ok := hit[id]; ok {
			t.Errorf("%s flagged as %s", id, m.BenchmarkID)
		}
	}
	if len(got) != len(rewrites) || s.Matches != int64(len(rewrites)) || s.CorpusItems != len(rewrites) {
		t.Errorf("%d matches (summary %d, items %d), want %d", len(got), s.Matches, s.CorpusItems, len(rewrites))
	}
	if s.Records != 7 || s.Designs != 7 || s.InterfaceErrors != 1 || s.Unjudged != 0 {
		t.Errorf("records %d designs %d interface errors %d unjudged %d (%v)", s.Records, s.Designs, s.InterfaceErrors, s.Unjudged, s.UnjudgedSample)
	}
	if len(s.InterfaceSample) != 1 || !strings.HasPrefix(s.InterfaceSample[0], "broken/reference (row 7): ") {
		t.Errorf("interface errors not named: %q", s.InterfaceSample)
	}
	// 6 designs with an interface × 5 problems; compatible: popcount3 1,
	// fadd 1, q4g 1 (only itself has 3 inputs + 1 output), and-named 2
	// (andgate, norgate), or-gate 2, adder8 0.
	if s.PairsConsidered != 30 || s.PairsCompatible != 7 || s.PairsPruned != 23 {
		t.Errorf("pairs %d, compatible %d, pruned %d; want 30, 7, 23", s.PairsConsidered, s.PairsCompatible, s.PairsPruned)
	}

	// Lexically, none of the rewrites is contamination of its problem.
	ix, cleanup, err := OpenBenchmark(ctx, DefaultConfig(), BenchmarkSpec{Path: path}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if _, err := Check(ctx, ix, corpus[:4], 1, func(m Match) error {
		if m.BenchmarkID == rewrites[m.CorpusID] && m.Contaminated {
			t.Errorf("rewrite %s is lexically contaminated (%s %.2f): the test no longer shows what lexical matching misses", m.CorpusID, m.Method, m.Score)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A design with no compatible problem runs no simulation at all.
func TestBehaviouralPrunesIncompatible(t *testing.T) {
	p := func(n, d string, w int32) engine.Port { return engine.Port{Name: n, Direction: d, Width: w} }
	items := []BenchItem{{ID: "and", Item: engine.Item{ItemID: "and", Interface: engine.Interface{Top: "TopModule", Ports: []engine.Port{p("a", "input", 1), p("b", "input", 1), p("out", "output", 1)}}}}}
	extract := func(_ context.Context, src, top string) (engine.Interface, error) {
		return engine.Interface{Top: top, Ports: []engine.Port{p("x", "input", 8), p("y", "output", 8)}}, nil
	}
	cfg := BehaviouralConfig{Extract: extract}
	bx, err := NewBehaviouralIndex(context.Background(), "b", items, cfg)
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	judge := engine.JudgeFunc(engine.DomainRTL, func(context.Context, engine.Item, engine.Candidate) (engine.Evidence, error) {
		judged++
		return engine.Evidence{Status: engine.StatusPass}, nil
	})
	src := RecordSlice{{ID: "w", Fields: []dedup.Field{{Name: "reference", Text: "module w(input [7:0] x, output [7:0] y); assign y = x; endmodule"}}}}
	s, err := CheckBehavioural(context.Background(), bx, judge, src, cfg, func(int64, Match) error { t.Error("match"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if judged != 0 || s.Simulations != 0 || s.PairsPruned != 1 || s.PairsCompatible != 0 {
		t.Errorf("judged %d, simulations %d, pruned %d, compatible %d", judged, s.Simulations, s.PairsPruned, s.PairsCompatible)
	}
}

// An unjudged simulation is counted and reported, never a match.
func TestBehaviouralUnjudgedIsNotContamination(t *testing.T) {
	p := func(n, d string, w int32) engine.Port { return engine.Port{Name: n, Direction: d, Width: w} }
	ports := []engine.Port{p("a", "input", 1), p("out", "output", 1)}
	items := []BenchItem{{ID: "buf", Item: engine.Item{ItemID: "buf", Interface: engine.Interface{Top: "TopModule", Ports: ports}}}}
	cfg := BehaviouralConfig{Extract: func(_ context.Context, _, top string) (engine.Interface, error) {
		return engine.Interface{Top: top, Ports: ports}, nil
	}}
	bx, _ := NewBehaviouralIndex(context.Background(), "b", items, cfg)
	judge := engine.JudgeFunc(engine.DomainRTL, func(context.Context, engine.Item, engine.Candidate) (engine.Evidence, error) {
		return engine.Evidence{Status: engine.StatusUnjudged, FailureStage: "toolchain_missing", Cause: "iverilog not found"}, nil
	})
	src := RecordSlice{{ID: "w", Fields: []dedup.Field{{Name: "reference", Text: "module w(input a, output out); assign out = a; endmodule"}}}}
	s, err := CheckBehavioural(context.Background(), bx, judge, src, cfg, func(int64, Match) error { t.Error("unjudged became a match"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if s.Unjudged != 1 || len(s.UnjudgedSample) != 1 || !strings.Contains(s.String(), "iverilog not found") {
		t.Errorf("unjudged %d, sample %v", s.Unjudged, s.UnjudgedSample)
	}
}

// fsmshiftOneHot re-encodes Prob095_review2015_fsmshift (shift_ena high for
// the four cycles after reset): one-hot state instead of a binary case,
// ports renamed; cycles sets how many cycles the enable stays high, so 3 is
// a design of the same ports and another function.
func fsmshiftOneHot(cycles int) string {
	return fmt.Sprintf(`module shifter_ctl (output en, input r, input c);
  reg [%d:0] oh;
  always @(posedge c)
    if (r) oh <= 1;
    else if (!oh[%d]) oh <= oh << 1;
  assign en = |oh[%d:0];
endmodule
`, cycles, cycles, cycles-1)
}

func TestBehaviouralCatchesReencodedFSM(t *testing.T) {
	decontamtest.RequireBehaviouralTools(t)
	ctx := context.Background()
	path := testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl")
	all, err := LoadBenchItems(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var items []BenchItem
	for _, it := range all {
		if it.ID == "Prob095_review2015_fsmshift" {
			items = append(items, it)
		}
	}
	cfg := BehaviouralConfig{Workers: 2}
	bx, err := NewBehaviouralIndex(ctx, "spec-to-rtl", items, cfg)
	if err != nil || len(bx.Items) != 1 {
		t.Fatalf("index: %v %v", err, bx.Skipped)
	}
	if bx.Ifaces[0].Clock != "clk" {
		t.Fatalf("fsmshift interface %+v: no clock", bx.Ifaces[0])
	}
	corpus := RecordSlice{
		{ID: "onehot4", Fields: []dedup.Field{{Name: "reference", Text: fsmshiftOneHot(4)}}},
		{ID: "onehot3", Fields: []dedup.Field{{Name: "reference", Text: fsmshiftOneHot(3)}}},
	}
	v, err := rtl.NewVerifier(rtl.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got []Match
	s, err := CheckBehavioural(ctx, bx, v, corpus, cfg, func(_ int64, m Match) error { got = append(got, m); return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s.String())
	if len(got) != 1 || got[0].CorpusID != "onehot4" || got[0].PortMapping != "clk=c,reset=r,shift_ena=en" {
		t.Fatalf("matches %+v, want onehot4 only, mapped clk=c,reset=r,shift_ena=en", got)
	}
	if s.PairsCompatible != 2 || s.Unjudged != 0 {
		t.Errorf("compatible %d unjudged %d (%v)", s.PairsCompatible, s.Unjudged, s.UnjudgedSample)
	}
	ix, cleanup, err := OpenBenchmark(ctx, DefaultConfig(), BenchmarkSpec{Path: path}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if _, err := Check(ctx, ix, corpus[:1], 1, func(m Match) error {
		if m.BenchmarkID == "Prob095_review2015_fsmshift" && m.Contaminated {
			t.Errorf("the one-hot re-encoding is lexically contaminated (%s %.2f)", m.Method, m.Score)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
