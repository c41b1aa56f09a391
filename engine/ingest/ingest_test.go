package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

type collected struct {
	items []engine.Item
	rejs  []engine.Rejection
}

func ingestAll(t *testing.T, preset string, paths ...string) (*collected, *Ingester, error) {
	t.Helper()
	c := &collected{}
	g, err := New(preset, Sink{
		Item:   func(it engine.Item) error { c.items = append(c.items, it); return nil },
		Reject: func(r engine.Rejection) error { c.rejs = append(c.rejs, r); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, g, g.IngestPaths(context.Background(), paths)
}

const goodRow = `{"item_id":"a1","domain":"rtl","family":"counter","instruction":"Build a counter.","reference":"module RefModule(input clk); endmodule","verifier":{"kind":"differential","harness":"module tb; endmodule","top":"tb"},"interface":{"ports":[{"name":"clk","direction":"input","width":1}],"clock":"clk"}}`

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadRowsBecomeRejectionsAndTheRunGoesOn(t *testing.T) {
	big := `{"item_id":"big","domain":"rtl","instruction":"` + strings.Repeat("x", 50<<20) + `","verifier":{"kind":"differential","harness":"h"}}`
	lines := []string{
		goodRow,
		`{"item_id":"bad-utf8","domain":"rtl","instruction":"caf` + "\xff\xfe" + `"}`,
		`{"item_id":"no-instr","domain":"rtl","verifier":{"kind":"differential","harness":"h"}}`,
		`{"domain":"rtl","instruction":"x","verifier":{"kind":"differential","harness":"h"}}`,
		`{"item_id":"bad-domain","domain":"fpga","instruction":"x","verifier":{"kind":"differential","harness":"h"}}`,
		`{"item_id":"broken json",`,
		big,
		strings.Replace(goodRow, `"width":1`, `"width":0`, 1),
		goodRow, // duplicate id
		"",
		strings.Replace(goodRow, `"a1"`, `"a2"`, 1),
	}
	p := write(t, "in.jsonl", []byte(strings.Join(lines, "\n")))
	c, g, err := ingestAll(t, PresetItems, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.items) != 2 || c.items[0].ItemID != "a1" || c.items[1].ItemID != "a2" {
		t.Fatalf("items: %+v", c.items)
	}
	want := []struct{ line, reason, mention string }{
		{":2:", "invalid_utf8", "invalid UTF-8"},
		{":3:", "missing_field", "instruction"},
		{":4:", "missing_field", "item_id"},
		{":5:", "invalid_value", "domain"},
		{":6:", "invalid_json", ""},
		{":7:", "too_large", "instruction"},
		{":8:", "invalid_value", "interface.ports[0].width"},
		{":9:", "duplicate_id", "a1"},
	}
	if len(c.rejs) != len(want) {
		t.Fatalf("got %d rejections, want %d: %+v", len(c.rejs), len(want), c.rejs)
	}
	for i, w := range want {
		r := c.rejs[i]
		if r.Reason != w.reason || !strings.Contains(r.Detail, p+w.line) || !strings.Contains(r.Detail+r.ItemID, w.mention) {
			t.Errorf("rejection %d = %+v, want reason %s at %s mentioning %q", i, r, w.reason, w.line, w.mention)
		}
	}
	if g.Stats.Rows != 10 || g.Stats.Rejected != 8 {
		t.Errorf("stats %+v", g.Stats)
	}
}

func TestEmptyAndTruncatedFiles(t *testing.T) {
	// An empty JSONL file holds no rows: not an error.
	c, _, err := ingestAll(t, PresetItems, write(t, "empty.jsonl", nil))
	if err != nil || len(c.items)+len(c.rejs) != 0 {
		t.Fatalf("empty jsonl: %v %+v", err, c)
	}
	// An empty or truncated Parquet file is unreadable: an error naming it.
	emptyPQ := write(t, "empty.parquet", nil)
	if _, _, err := ingestAll(t, PresetItems, emptyPQ); !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), emptyPQ) {
		t.Fatalf("empty parquet: %v", err)
	}
	dir := t.TempDir()
	items := make([]engine.Item, 2000)
	for i := range items {
		items[i] = engine.Item{ItemID: strings.Repeat("x", i%50) + string(rune(0x30+i%7)), Domain: "rtl", Instruction: strings.Repeat("word ", i), Verifier: engine.Verifier{Kind: "differential", Harness: "h"}}
		if i%10 == 0 {
			items[i].ItemID = ""
		}
	}
	infos, err := engine.WriteAll(context.Background(), dir, "items", "items", engine.WriterOptions{RowGroupBytes: 64 << 10, ShardBytes: 1 << 30}, items)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, infos[0].Path)
	data, _ := os.ReadFile(full)
	for _, cut := range []int{len(data) / 3, len(data) - 9, len(data) - 2} {
		tp := write(t, "trunc.parquet", data[:cut])
		_, _, err := ingestAll(t, PresetItems, tp)
		if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), tp) {
			t.Fatalf("truncated at %d: want ErrInput naming the file, got %v", cut, err)
		}
	}
	// The intact file ingests; the rows with empty ids become rejections.
	c, _, err = ingestAll(t, PresetItems, full)
	if err != nil || len(c.items) == 0 || len(c.rejs) == 0 {
		t.Fatalf("intact parquet: %v items=%d rejs=%d", err, len(c.items), len(c.rejs))
	}
}

func TestVerilogEvalPreset(t *testing.T) {
	for _, f := range []string{"verilog-eval/spec-to-rtl.jsonl", "verilog-eval/code-complete-iccad2023.jsonl"} {
		p := testenv.Dataset(t, f)
		c, _, err := ingestAll(t, PresetVerilogEval, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.items) != 156 || len(c.rejs) != 0 {
			t.Fatalf("%s: %d items, %d rejections (%+v)", f, len(c.items), len(c.rejs), c.rejs)
		}
		it := c.items[0]
		if !strings.HasPrefix(it.ItemID, "verilog-eval/") || it.Verifier.Kind != engine.VerifierDifferential ||
			!strings.Contains(it.Verifier.Harness, "Mismatches") || !strings.Contains(it.Reference, "RefModule") ||
			it.Provenance.ReferenceSHA256 != engine.HashString(it.Reference) || it.LineageID != it.ItemID {
			t.Fatalf("mapping: %+v", it)
		}
	}
}

func TestTaskDirPreset(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "t1")
	os.MkdirAll(task, 0o755)
	os.WriteFile(filepath.Join(task, "task.json"), []byte(`{"family":"counter","license":"Apache-2.0","source":"crucible/examples","interface":{"top":"TopModule"}}`), 0o644)
	os.WriteFile(filepath.Join(task, "instruction.md"), []byte("Build it.\n"), 0o644)
	os.WriteFile(filepath.Join(task, "reference.sv"), []byte("module RefModule; endmodule\n"), 0o644)
	os.WriteFile(filepath.Join(task, "testbench.sv"), []byte("module tb; endmodule\n"), 0o644)
	c, _, err := ingestAll(t, PresetTaskDir, dir)
	if err != nil || len(c.items) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	it := c.items[0]
	if it.ItemID != "t1" || it.Reference == "" || it.Verifier.Harness == "" || it.Verifier.Kind != "differential" || it.Provenance.License != "Apache-2.0" {
		t.Fatalf("%+v", it)
	}
}

func FuzzIngestJSONL(f *testing.F) {
	f.Add([]byte(goodRow))
	f.Add([]byte("{\"item_id\":1}\n\xff\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.jsonl")
		os.WriteFile(p, data, 0o644)
		g, _ := New(PresetItems, Sink{Item: func(engine.Item) error { return nil }, Reject: func(engine.Rejection) error { return nil }})
		if err := g.IngestPaths(context.Background(), []string{p}); err != nil {
			t.Fatal(err)
		}
		if g.Stats.Items+g.Stats.Rejected != g.Stats.Rows {
			t.Fatalf("rows lost: %+v", g.Stats)
		}
	})
}
