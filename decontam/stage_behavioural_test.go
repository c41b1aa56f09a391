package decontam_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/decontam/decontamtest"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
)

// writeStagePipeline writes dir/items.jsonl and a pipeline whose decontam
// stage checks them against bench with the given config lines (indented
// under config:).
func writeStagePipeline(t *testing.T, dir, bench string, items []engine.Item, config string) {
	t.Helper()
	var b strings.Builder
	for _, it := range items {
		line, _ := json.Marshal(it)
		b.Write(append(line, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(b.String()), 0o644)
	p := "name: t\nwork_dir: work\nstages:\n  - name: src\n    type: items_jsonl\n    inputs: [items.jsonl]\n" +
		"  - name: decontam\n    type: decontam\n    from: [src]\n    max_reject_fraction: 1\n    config:\n      benchmarks: [{path: " + bench + "}]\n" + config
	os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(p), 0o644)
}

func stageCounts(t *testing.T, work string) map[string]int64 {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, "decontam"))
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]int64{}
	for _, m := range out.Parts {
		for k, v := range m.Counts {
			c[k] += v
		}
	}
	return c
}

// TestStageBehaviouralRejectsRewrite: a truth-table rewrite of
// Prob027_fadd passes lexical matching and is rejected as contaminated by
// behavioural matching, naming the method, the problem and the port
// mapping; a design of the same interface and another function, and an
// item without a design, are kept. The stage's default (lexical) keeps all.
func TestStageBehaviouralRejectsRewrite(t *testing.T) {
	decontamtest.RequireBehaviouralTools(t)
	root := t.TempDir()
	bench := decontamtest.WriteBenchSubset(t, root, "Prob027_fadd", "Prob014_andgate")
	items := []engine.Item{
		{ItemID: "lut", LineageID: "L1", Instruction: "Implement a lookup-table adder cell.", Reference: decontamtest.FaddLUT},
		{ItemID: "near", Instruction: "Implement an adder-like cell.", Reference: decontamtest.FaddLookalike},
		{ItemID: "prose", Instruction: "Explain what a carry chain is."},
	}
	for _, methods := range []string{"", "      methods: [lexical, behavioural]\n      rtl: {workers: 2}\n"} {
		dir := filepath.Join(root, map[bool]string{true: "lexical", false: "both"}[methods == ""])
		os.MkdirAll(dir, 0o755)
		writeStagePipeline(t, dir, bench, items, methods)
		runItemsPipeline(t, dir, decontamStages())
		work := filepath.Join(dir, "work")
		kept := readKind[engine.Item](t, work, "decontam", "items")
		rej := readKind[engine.Rejection](t, work, "decontam", "rejections")
		if methods == "" {
			if len(kept) != 3 || len(rej) != 0 {
				t.Errorf("lexical only: kept %d, rejected %+v; the rewrite is lexically clean", len(kept), rej)
			}
			if c := stageCounts(t, work); c["behavioural.simulations"] != 0 {
				t.Errorf("lexical only ran simulations: %v", c)
			}
			continue
		}
		if len(rej) != 1 || rej[0].ItemID != "lut" || rej[0].Reason != "contaminated" {
			t.Fatalf("rejections %+v", rej)
		}
		var d decontam.RejectionDetail
		if err := json.Unmarshal([]byte(rej[0].Detail), &d); err != nil {
			t.Fatal(err)
		}
		if d.Method != decontam.MethodBehavioural || d.BenchmarkID != "Prob027_fadd" || d.Benchmark != "bench" ||
			!strings.HasSuffix(d.PortMapping, "cout=c_q,sum=s_q") || d.LineageID != "L1" {
			t.Errorf("detail %s", rej[0].Detail)
		}
		if len(kept) != 2 || kept[0].ItemID != "near" || kept[1].ItemID != "prose" {
			t.Errorf("kept %+v", kept)
		}
		// lut and near: one compatible pair each (fadd), andgate pruned;
		// near runs every mapping (3!·2!) and fails them all.
		c := stageCounts(t, work)
		if c["behavioural.pairs_compatible"] != 2 || c["behavioural.pairs_pruned"] != 2 || c["behavioural.simulations"] < 13 ||
			c["behavioural.matches"] != 1 || c["behavioural.unjudged"] != 0 || c["rejected.contaminated"] != 1 {
			t.Errorf("counts %v", c)
		}
		if _, timed := c["behavioural.wall_ms"]; timed {
			t.Errorf("a stage count holds the wall time (its manifest's content hash would vary by run): %v", c)
		}
	}
}

// fakeBehavioural is an interface reader and judge that need no tools:
// every design has ports (a, out), unless it holds "yosys-down" (the
// reader fails for its own reasons); a candidate passes when its code
// holds "~a", is unjudged when it holds "crash".
func fakeBehavioural() []decontam.StageOption {
	ports := []engine.Port{{Name: "a", Direction: "input", Width: 1}, {Name: "out", Direction: "output", Width: 1}}
	extract := func(_ context.Context, src, top string) (engine.Interface, error) {
		if strings.Contains(src, "yosys-down") {
			return engine.Interface{}, errors.New("exec: yosys: signal: killed")
		}
		return engine.Interface{Top: top, Ports: ports}, nil
	}
	judge := engine.JudgeFunc(engine.DomainRTL, func(_ context.Context, it engine.Item, c engine.Candidate) (engine.Evidence, error) {
		ev := engine.Evidence{ItemID: it.ItemID, CandidateID: c.CandidateID, Status: engine.StatusFail}
		switch {
		case strings.Contains(c.Code, "crash"):
			ev.Status, ev.FailureStage, ev.Cause = engine.StatusUnjudged, "sim_crash", "simulator died"
		case strings.Contains(c.Code, "~a"):
			ev.Status = engine.StatusPass
		}
		return ev, nil
	})
	return []decontam.StageOption{decontam.WithExtractor(extract), decontam.WithJudge(judge)}
}

// TestStageBehaviouralUnjudged: an item whose simulations could not be
// judged is never kept as clean silently: rejected as unjudged by default,
// kept under on_unjudged: keep, counted either way.
func TestStageBehaviouralUnjudged(t *testing.T) {
	root := t.TempDir()
	bench := filepath.Join(root, "bench.jsonl")
	os.WriteFile(bench, []byte(`{"id":"Prob001_not","prompt":"Invert the input.","ref":"module RefModule(input a, output out); assign out = ~a; endmodule","test":"module tb; endmodule"}`+"\n"), 0o644)
	items := []engine.Item{
		{ItemID: "inv", Reference: "module n(input a, output out); assign out = ~a; endmodule"},
		{ItemID: "crash", Reference: "module c(input a, output out); /* crash */ assign out = a; endmodule"},
		{ItemID: "buf", Reference: "module b(input a, output out); assign out = a; endmodule"},
		{ItemID: "noiface", Reference: "module y(input a, output out); /* yosys-down */ assign out = a; endmodule"},
	}
	for _, rule := range []string{"", "keep"} {
		dir := filepath.Join(root, "rule-"+rule)
		os.MkdirAll(dir, 0o755)
		cfg := "      methods: [behavioural]\n"
		if rule != "" {
			cfg += "      on_unjudged: " + rule + "\n"
		}
		writeStagePipeline(t, dir, bench, items, cfg)
		runItemsPipeline(t, dir, decontamStages(fakeBehavioural()...))
		work := filepath.Join(dir, "work")
		got := map[string]string{}
		for _, r := range readKind[engine.Rejection](t, work, "decontam", "rejections") {
			got[r.ItemID] = r.Reason
			if r.Reason == "unjudged" && !strings.Contains(r.Detail, map[string]string{"crash": "simulator died", "noiface": "interface: exec: yosys"}[r.ItemID]) {
				t.Errorf("unjudged detail %s", r.Detail)
			}
		}
		want := map[string]string{"inv": "contaminated", "crash": "unjudged", "noiface": "unjudged"}
		if rule == "keep" {
			delete(want, "crash")
			delete(want, "noiface")
		}
		if len(got) != len(want) || got["inv"] != want["inv"] || got["crash"] != want["crash"] || got["noiface"] != want["noiface"] {
			t.Errorf("on_unjudged %q: rejections %v, want %v", rule, got, want)
		}
		if c := stageCounts(t, work); c["behavioural.unjudged_items"] != 2 || c["behavioural.unjudged"] != 1 || c["behavioural.interface_unjudged"] != 1 || c["behavioural.interface_errors"] != 0 {
			t.Errorf("on_unjudged %q: counts %v", rule, c)
		}
	}
}

// TestStageMethodsConfig: methods and on_unjudged are checked at load
// time, naming the field; behavioural where no benchmark has harnesses
// fails the run rather than matching nothing.
func TestStageMethodsConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bench.jsonl"), []byte(`{"id":"p1","prompt":"an adder, please"}`+"\n"), 0o644)
	reg := engine.NewRegistry()
	decontam.RegisterStages(reg)
	for cfg, want := range map[string]string{
		"methods: [lexical, semantic]": `methods[1]: "semantic"`,
		"methods: []":                  "methods: empty",
		"on_unjudged: ignore":          `on_unjudged: "ignore"`,
		"max_mappings: 0":              "max_mappings=0",
		"methods: [behavioural]":       "",
	} {
		p := filepath.Join(dir, "pipeline.yaml")
		os.WriteFile(p, []byte("name: t\nwork_dir: work\nstages:\n  - name: decontam\n    type: decontam\n    config:\n      "+cfg+"\n      benchmarks: [{path: bench.jsonl}]\n"), 0o644)
		_, err := engine.LoadPipeline(p, reg)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	items := []engine.Item{{ItemID: "x", Reference: "module x(input a, output out); assign out = a; endmodule"}}
	writeStagePipeline(t, dir, filepath.Join(dir, "bench.jsonl"), items, "      methods: [behavioural]\n")
	reg = engine.NewRegistry()
	decontamStages(fakeBehavioural()...)(reg)
	stagetest.RegisterItemsSource(reg)
	cfg, err := engine.LoadPipeline(filepath.Join(dir, "pipeline.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{}); err == nil || !strings.Contains(err.Error(), "no benchmark carries executable problems") {
		t.Errorf("behavioural without harnesses: %v", err)
	}
}

// TestStageBehaviouralKernels: a CPU kernel item whose arguments fit a
// benchmark kernel task's (renamed, reordered) and whose function is that
// task's is rejected as contaminated by behavioural matching on the CPU
// backend, with the mapping under which it passed; one of the same
// signature computing something else is kept; the vector-add task, of
// another signature, is never run against either. Behavioural alone: the
// lexical channel flags kernels this short structurally anyway.
func TestStageBehaviouralKernels(t *testing.T) {
	decontamtest.RequireKernelCC(t)
	dir := t.TempDir()
	decontamtest.WriteKernelBench(t, dir, "matmul_f32_64", "vector_add_f32")
	items := []engine.Item{
		decontamtest.KernelItem("mm", "mm_rewrite", decontamtest.MatmulRewrite, "out", "q", "p", "size"),
		decontamtest.KernelItem("add", "addmat", decontamtest.AddSameShape, "x", "y", "z", "n"),
	}
	writeStagePipeline(t, dir, "kbench.jsonl, id_field: item_id", items, "      methods: [behavioural]\n      kernel: {backend: cpu, trials: 2, workers: 2}\n")
	runItemsPipeline(t, dir, decontamStages())
	work := filepath.Join(dir, "work")
	rej := readKind[engine.Rejection](t, work, "decontam", "rejections")
	if len(rej) != 1 || rej[0].ItemID != "mm" || rej[0].Reason != "contaminated" {
		t.Fatalf("rejections %+v", rej)
	}
	var d decontam.RejectionDetail
	json.Unmarshal([]byte(rej[0].Detail), &d)
	if d.Method != decontam.MethodBehavioural || d.BenchmarkID != "matmul_f32_64" || d.PortMapping != "a=p,b=q,c=out,n=size" {
		t.Errorf("detail %s", rej[0].Detail)
	}
	if kept := readKind[engine.Item](t, work, "decontam", "items"); len(kept) != 1 || kept[0].ItemID != "add" {
		t.Errorf("kept %+v", kept)
	}
	// mm: the first mapping (a=q) computes b·a and fails, the second
	// passes; add: both fail. vector_add: pruned for both.
	c := stageCounts(t, work)
	if c["behavioural.simulations"] != 4 || c["behavioural.pairs_compatible"] != 2 || c["behavioural.pairs_pruned"] != 2 || c["behavioural.matches"] != 1 || c["behavioural.unjudged"] != 0 {
		t.Errorf("counts %v", c)
	}
}
