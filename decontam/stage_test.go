package decontam_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
)

func readKind[T any](t *testing.T, work, stage, kind string) []T {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, stage))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range out.Parts {
		for _, s := range m.Shards {
			if s.Kind == kind {
				paths = append(paths, filepath.Join(out.Dir, s.Path))
			}
		}
	}
	rows, err := engine.ReadAll[T](paths...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDedupThenDecontamPipeline runs both stages through the engine runner:
// exact and near duplicates leave with cluster/survivor ids, a copy of a
// VerilogEval reference leaves as contaminated with the benchmark id.
func TestDedupThenDecontamPipeline(t *testing.T) {
	bench, err := filepath.Abs(filepath.Join("..", "..", "shared", "datasets", "verilog-eval", "spec-to-rtl.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bench); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("datasets missing: %v", err)
		}
		t.Skipf("datasets missing: %v", err)
	}
	var ref string
	dedup.ScanRecords(context.Background(), bench, "id", []string{"ref"}, func(r dedup.Record) error {
		if r.ID == "Prob127_lemmings1" {
			ref = r.Text()
		}
		return nil
	})
	counter := "module counter(input clk, input rst, output reg [7:0] q);\n  always @(posedge clk)\n    if (rst) q <= 8'd0;\n    else q <= q + 8'd1;\nendmodule\n"
	long := strings.Repeat("Design a synchronous counter with an active-high reset that counts clock edges and wraps around. ", 6)
	items := []engine.Item{
		{ItemID: "child", ParentID: "root", LineageID: "L1", Instruction: long, Reference: "// copy\n" + counter},
		{ItemID: "root", LineageID: "L1", Instruction: long, Reference: counter, ReferenceStatus: engine.RefVerified},
		{ItemID: "near", LineageID: "L2", Instruction: strings.Replace(long, "wraps around", "wraps", 1), Reference: counter},
		{ItemID: "other", LineageID: "L3", Instruction: "Implement a 2-to-1 multiplexer.", Reference: "module mux(input a, b, s, output y); assign y = s ? b : a; endmodule"},
		{ItemID: "leak", LineageID: "L4", Instruction: "Implement the lemmings state machine.", Reference: ref},
	}
	dir := t.TempDir()
	var b strings.Builder
	for _, it := range items {
		line, _ := json.Marshal(it)
		b.Write(append(line, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(b.String()), 0o644)
	pipeline := `name: t
work_dir: work
stages:
  - name: src
    type: items_jsonl
    inputs: [items.jsonl]
  - name: dedup
    type: dedup
    from: [src]
    config: {threshold: 0.8}
  - name: decontam
    type: decontam
    from: [dedup]
    config:
      benchmarks: [{path: ` + bench + `, name: verilog-eval}]
`
	os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline), 0o644)
	runItemsPipeline(t, dir, dedup.RegisterStages, decontamStages())
	work := filepath.Join(dir, "work")
	rej := readKind[engine.Rejection](t, work, "dedup", "rejections")
	got := map[string]engine.Rejection{}
	for _, r := range rej {
		got[r.ItemID] = r
	}
	if len(rej) != 2 || got["child"].Reason != dedup.ReasonExactDuplicate || got["near"].Reason != dedup.ReasonNearDuplicate {
		t.Fatalf("dedup rejections %+v", rej)
	}
	var d dedup.RejectionDetail
	if err := json.Unmarshal([]byte(got["child"].Detail), &d); err != nil || d.SurvivorID != "root" || d.ClusterID == "" || d.LineageID != "L1" {
		t.Errorf("child detail %q (%v)", got["child"].Detail, err)
	}
	kept := readKind[engine.Item](t, work, "decontam", "items")
	if len(kept) != 2 || kept[0].ItemID != "root" || kept[1].ItemID != "other" {
		t.Errorf("decontam kept %+v", kept)
	}
	crej := readKind[engine.Rejection](t, work, "decontam", "rejections")
	if len(crej) != 1 || crej[0].ItemID != "leak" || crej[0].Reason != "contaminated" || !strings.Contains(crej[0].Detail, "Prob127_lemmings1") {
		t.Errorf("decontam rejections %+v", crej)
	}
	if ms := readKind[decontam.Match](t, work, "decontam", "decontam_matches"); len(ms) == 0 || len(ms[0].Spans) == 0 {
		t.Errorf("matches %+v", ms)
	}
}

// TestStageMaxDocFreqConfig: the stage takes max_doc_freq from its config
// block and refuses a share outside (0,1] by name.
func TestStageMaxDocFreqConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bench.jsonl"), []byte(`{"id":"p1","ref":"module m; endmodule"}`+"\n"), 0o644)
	reg := engine.NewRegistry()
	decontam.RegisterStages(reg)
	for v, wantErr := range map[string]bool{"0.2": false, "1": false, "0": true, "1.5": true} {
		p := filepath.Join(dir, "pipeline.yaml")
		os.WriteFile(p, []byte("name: t\nwork_dir: work\nstages:\n  - name: decontam\n    type: decontam\n    config:\n      max_doc_freq: "+v+"\n      benchmarks: [{path: bench.jsonl}]\n"), 0o644)
		_, err := engine.LoadPipeline(p, reg)
		if wantErr != (err != nil) || wantErr && !strings.Contains(err.Error(), "max_doc_freq="+v) {
			t.Errorf("max_doc_freq %s: %v", v, err)
		}
	}
}

// TestStageRejectionNamesSharedItems: an item copying a text that two
// benchmark items hold is rejected naming one of them, with the other in
// shared_with.
func TestStageRejectionNamesSharedItems(t *testing.T) {
	dir := t.TempDir()
	ref := "module TopModule(input clk, input [7:0] d, output reg [7:0] q);\n  always @(posedge clk) q <= {d[3:0], d[7:4]} ^ 8'h5a;\nendmodule\n"
	bench := `{"id":"dupA","ref":` + strconvQuote(ref) + "}\n" + `{"id":"dupB","ref":` + strconvQuote(ref) + "}\n" +
		`{"id":"other","ref":"module TopModule(input a, output y); assign y = ~a; endmodule"}` + "\n"
	os.WriteFile(filepath.Join(dir, "bench.jsonl"), []byte(bench), 0o644)
	line, _ := json.Marshal(engine.Item{ItemID: "leak", Instruction: "Swap the nibbles and scramble.", Reference: ref})
	clean, _ := json.Marshal(engine.Item{ItemID: "clean", Instruction: "Write a 4-bit up counter.", Reference: "module c(input clk, output reg [3:0] n); always @(posedge clk) n <= n + 1; endmodule"})
	os.WriteFile(filepath.Join(dir, "items.jsonl"), append(append(line, '\n'), append(clean, '\n')...), 0o644)
	os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte("name: t\nwork_dir: work\nstages:\n  - name: src\n    type: items_jsonl\n    inputs: [items.jsonl]\n"+
		"  - name: decontam\n    type: decontam\n    from: [src]\n    max_reject_fraction: 1\n    config:\n      benchmarks: [{path: bench.jsonl}]\n"), 0o644)
	runItemsPipeline(t, dir, decontamStages())
	rej := readKind[engine.Rejection](t, filepath.Join(dir, "work"), "decontam", "rejections")
	if len(rej) != 1 {
		t.Fatalf("rejections %+v", rej)
	}
	var d decontam.RejectionDetail
	if err := json.Unmarshal([]byte(rej[0].Detail), &d); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"dupA": "dupB", "dupB": "dupA"}[d.BenchmarkID]
	if other == "" || len(d.SharedWith) != 1 || d.SharedWith[0] != other {
		t.Errorf("detail %s: want one of dupA/dupB with the other in shared_with", rej[0].Detail)
	}
}

// decontamStages registers the decontam stage type with opts.
func decontamStages(opts ...decontam.StageOption) func(*engine.Registry) {
	return func(reg *engine.Registry) { decontam.RegisterStages(reg, opts...) }
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// runItemsPipeline runs dir/pipeline.yaml with a test source stage type
// "items_jsonl" (its input files' items, written as its items) and the
// stage types register adds; any error fails t.
func runItemsPipeline(t *testing.T, dir string, register ...func(*engine.Registry)) {
	t.Helper()
	reg := engine.NewRegistry()
	stagetest.RegisterItemsSource(reg)
	for _, r := range register {
		r(reg)
	}
	cfg, err := engine.LoadPipeline(filepath.Join(dir, "pipeline.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
}
