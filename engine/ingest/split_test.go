package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

func ingestPipeline(t *testing.T, dir, work, preset string, inputs ...string) (*engine.PipelineConfig, *engine.Runner) {
	t.Helper()
	reg := engine.NewRegistry()
	RegisterStages(reg)
	in, _ := json.Marshal(inputs)
	path := filepath.Join(dir, work+".yaml")
	text := fmt.Sprintf("name: split\nwork_dir: %s\nstages:\n  - {name: ingest, type: ingest, inputs: %s, config: {preset: %s}}\n", work, in, preset)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.LoadPipeline(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, &engine.Runner{Registry: reg}
}

// partItems runs ingest as n parts and returns each part's item ids.
func partItems(t *testing.T, cfg *engine.PipelineConfig, r *engine.Runner, n int) [][]string {
	t.Helper()
	var out [][]string
	for i := range n {
		sh := engine.Shard{Index: i, Count: n}
		if _, err := r.Run(context.Background(), cfg, engine.RunOptions{Shard: sh, Log: slog.New(slog.DiscardHandler)}); err != nil {
			t.Fatal(err)
		}
		m, err := engine.ReadManifest(filepath.Join(cfg.ResolvedWorkDir(), "ingest", engine.ManifestName(sh)))
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, s := range m.Shards {
			if s.Kind == "items" {
				paths = append(paths, filepath.Join(cfg.ResolvedWorkDir(), "ingest", s.Path))
			}
		}
		items, err := engine.ReadAll[engine.Item](paths...)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ItemID)
		}
		out = append(out, ids)
	}
	return out
}

// One 20k-row JSONL split in 4: parts of 25% ± 1% (issue 17: 200000, 0, 0,
// 0), whose concatenation is the unsplit ingest's items in order; the
// manifest records each part's byte range, and a rerun with the same N skips.
func TestShardedIngestSplitsOneFileByRows(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const rows = 20000
	for i := range rows {
		it := engine.Item{ItemID: fmt.Sprintf("it%06d", i), Domain: engine.DomainRTL, Instruction: strings.Repeat("w", 20+i%50),
			Reference: "module TopModule(); endmodule", Verifier: engine.Verifier{Kind: "differential", Harness: "tb"}}
		line, _ := json.Marshal(it)
		b.Write(line)
		b.WriteByte('\n')
	}
	data := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, r := ingestPipeline(t, dir, "whole", PresetItems, data)
	want := partItems(t, whole, r, 1)[0]
	if len(want) != rows {
		t.Fatalf("unsplit ingest: %d items of %d", len(want), rows)
	}
	split, r := ingestPipeline(t, dir, "split", PresetItems, data)
	parts := partItems(t, split, r, 4)
	if got := slices.Concat(parts...); !slices.Equal(got, want) {
		t.Fatalf("the parts in order are not the unsplit ingest (%d vs %d items)", len(got), len(want))
	}
	for k, p := range parts {
		if d := len(p) - rows/4; d > rows/100 || -d > rows/100 {
			t.Errorf("part %d: %d items, want %d ± 1%%", k, len(p), rows/4)
		}
		m, err := engine.ReadManifest(filepath.Join(split.ResolvedWorkDir(), "ingest", engine.ManifestName(engine.Shard{Index: k, Count: 4})))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Inputs) != 1 || !strings.HasPrefix(m.Inputs[0].Range, "bytes=") {
			t.Fatalf("part %d manifest inputs %+v: want the file with its byte range", k, m.Inputs)
		}
	}
	sum, err := r.Run(context.Background(), split, engine.RunOptions{Shard: engine.Shard{Index: 2, Count: 4}, Log: slog.New(slog.DiscardHandler)})
	if err != nil || sum.Stages[0].Status != "skipped" {
		t.Fatalf("rerun of part 2/4: %v %+v", err, sum)
	}
}

// The bundled task folders split by folder (issue 17: 1, 1, 31, 2 items).
func TestShardedIngestSplitsTaskFoldersByFolder(t *testing.T) {
	seeds := filepath.Join(testenv.RepoRoot(t), "examples", "seeds")
	dir := t.TempDir()
	cfg, r := ingestPipeline(t, dir, "w", PresetTaskDir, seeds)
	parts := partItems(t, cfg, r, 4)
	whole, r1 := ingestPipeline(t, dir, "w1", PresetTaskDir, seeds)
	want := partItems(t, whole, r1, 1)[0]
	if got := slices.Concat(parts...); !slices.Equal(got, want) {
		t.Fatalf("parts %v are not the unsplit ingest %v", parts, want)
	}
	var counts []int
	for _, p := range parts {
		counts = append(counts, len(p))
	}
	if slices.Max(counts)-slices.Min(counts) > 1 {
		t.Fatalf("task folders per part %v (of %d)", counts, len(want))
	}
	t.Logf("items per part: %v", counts)
}
