package decontam_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/rtl"
)

// TestCorpusIndexKeepsInterfaces: a corpus index built with its interface
// index is matched behaviourally by a benchmark that arrives later, with
// the corpus interfaces read once, at index time; a design whose interface
// could not be read is persisted as such and counted, never matched. An
// index of version 2 (or built lexical-only) opens, lexical-only, saying so.
func TestCorpusIndexKeepsInterfaces(t *testing.T) {
	ctx := context.Background()
	ports := []engine.Port{{Name: "a", Direction: "input", Width: 1}, {Name: "out", Direction: "output", Width: 1}}
	var extracted atomic.Int64
	extract := func(_ context.Context, src, top string) (engine.Interface, error) {
		extracted.Add(1)
		if strings.Contains(src, "broken") {
			return engine.Interface{}, fmt.Errorf("%w: syntax error", rtl.ErrParse)
		}
		return engine.Interface{Top: top, Ports: ports}, nil
	}
	corpus := decontam.RecordSlice{
		{ID: "prose", Fields: []dedup.Field{{Name: "instruction", Text: "Explain inverters."}}},
		{ID: "inv", Fields: []dedup.Field{{Name: "reference", Text: "module n(input a, output out); assign out = ~a; endmodule"}}},
		{ID: "bad", Fields: []dedup.Field{{Name: "reference", Text: "module b(input a, output out); broken endmodule"}}},
	}
	dir := filepath.Join(t.TempDir(), "cidx")
	bcfg := decontam.BehaviouralConfig{Extract: extract, Workers: 2}
	meta, err := decontam.BuildIndexWith(ctx, decontam.DefaultConfig(), dir, "corpus", decontam.SideCorpus, corpus, decontam.IndexOptions{Designs: &bcfg})
	if err != nil {
		t.Fatal(err)
	}
	if !meta.Behavioural || meta.Designs != 2 || meta.DesignErrors != 1 || meta.DesignRows != 3 || meta.Version != 4 {
		t.Fatalf("meta %+v", meta)
	}
	if _, err := decontam.BuildIndexWith(ctx, decontam.DefaultConfig(), filepath.Join(t.TempDir(), "b"), "b", decontam.SideBenchmark, corpus, decontam.IndexOptions{Designs: &bcfg}); !errors.Is(err, engine.ErrConfig) {
		t.Errorf("benchmark index with designs: %v, want a config error", err)
	}
	items := []decontam.BenchItem{{ID: "not", Item: engine.Item{ItemID: "not", Interface: engine.Interface{Top: "TopModule", Ports: ports}}}}
	bx, err := decontam.NewBehaviouralIndex(ctx, "later", items, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	judge := engine.JudgeFunc(engine.DomainRTL, func(_ context.Context, _ engine.Item, c engine.Candidate) (engine.Evidence, error) {
		if strings.Contains(c.Code, "~a") {
			return engine.Evidence{Status: engine.StatusPass}, nil
		}
		return engine.Evidence{Status: engine.StatusFail}, nil
	})
	ix, err := decontam.OpenDesignIndex(dir)
	if err != nil || ix.Unavailable() != "" {
		t.Fatalf("open: %v %q", err, ix.Unavailable())
	}
	before := extracted.Load()
	var got []string
	s, err := decontam.CheckBehaviouralIndex(ctx, bx, judge, ix, bcfg, func(row int64, m decontam.Match) error {
		got = append(got, m.CorpusID+"@"+string(rune('0'+row))+"/"+m.BenchmarkID+"/"+m.Method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if extracted.Load() != before {
		t.Errorf("the check read %d corpus interfaces again", extracted.Load()-before)
	}
	if len(got) != 1 || got[0] != "inv@1/not/behavioural" || s.Records != 3 || s.Designs != 2 || s.InterfaceErrors != 1 || s.Simulations != 1 {
		t.Errorf("matches %v, summary %+v", got, s)
	}
	// Two benchmarks checked straight from the rows: the corpus
	// interfaces are read once for both.
	bx2, _ := decontam.NewBehaviouralIndex(ctx, "other", items, bcfg)
	before = extracted.Load()
	sums, err := decontam.CheckBehaviouralAll(ctx, []*decontam.BehaviouralIndex{bx, bx2}, judge, corpus, bcfg, func(b int, row int64, m decontam.Match) error {
		if row != 1 || m.CorpusID != "inv" {
			t.Errorf("benchmark %d: match at row %d: %+v", b, row, m)
		}
		return nil
	})
	if err != nil || len(sums) != 2 || sums[0].Matches != 1 || sums[1].Matches != 1 || sums[1].Records != 3 || sums[1].InterfaceErrors != 1 {
		t.Fatalf("two benchmarks: %v %+v", err, sums)
	}
	if n := extracted.Load() - before; n != 2 {
		t.Errorf("two benchmarks read %d corpus interfaces, want 2 (once per design)", n)
	}
	// The full index (lexical) still opens alongside.
	if full, err := decontam.Open(dir); err != nil {
		t.Fatal(err)
	} else {
		full.Close()
	}

	// A version 2 index: lexical matching as before, behavioural not
	// available, and saying why rather than finding nothing.
	old := filepath.Join(t.TempDir(), "v2")
	if _, err := decontam.BuildIndex(ctx, decontam.DefaultConfig(), old, "corpus", decontam.SideCorpus, corpus); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	raw, _ := os.ReadFile(filepath.Join(old, "meta.json"))
	json.Unmarshal(raw, &m)
	if m["behavioural"] != nil {
		t.Errorf("lexical-only index claims an interface index: %s", raw)
	}
	m["version"] = 2
	raw, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(old, "meta.json"), raw, 0o644)
	if full, err := decontam.Open(old); err != nil {
		t.Fatalf("version 2 index: %v", err)
	} else {
		full.Close()
	}
	oix, err := decontam.OpenDesignIndex(old)
	if err != nil || !strings.Contains(oix.Unavailable(), "version 2") {
		t.Fatalf("version 2: %v %q", err, oix.Unavailable())
	}
	if _, err := decontam.CheckBehaviouralIndex(ctx, bx, judge, oix, bcfg, func(int64, decontam.Match) error { return nil }); !errors.Is(err, engine.ErrInput) {
		t.Errorf("behavioural check of a version 2 index: %v, want an input error", err)
	}
}
