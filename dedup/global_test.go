package dedup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// Plain "dedup" is a global stage: under `--shard i/N` it is never run per
// part (issue 17: with --shard 0/2 and 1/2 both runs exited 0 and the union
// kept every cross-part duplicate). A sharded run hands it every part of its
// upstream once all are committed, and stops with ErrIncomplete, saying so,
// while some are not; naming it with --stage and a shard is refused.
func TestGlobalDedupUnderShardIsNeverPartial(t *testing.T) {
	dir := t.TempDir()
	// Four files of contiguous ranges, one per part: the parts in order are
	// the whole corpus in order, so survivors (the first of a cluster) and
	// cluster ids must be identical too. Duplicates of early documents land
	// in later files: across parts.
	syn := NewSynth(SynthConfig{N: 240, DocWords: 100, Vocab: 3000, DupFrac: 0.3, EditsMin: 1, EditsMax: 3, ExactFrac: 0.2, Seed: 5})
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f := range 4 {
		var data []byte
		for i := f * 60; i < (f+1)*60; i++ {
			line, _ := json.Marshal(engine.Item{ItemID: syn.ID(i), LineageID: fmt.Sprintf("lin-%d", i), Domain: engine.DomainRTL, Reference: syn.Text(i)})
			data = append(append(data, line...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "in", fmt.Sprintf("items-%d.jsonl", f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := shardTestRegistry()
	load := func(work string) *engine.PipelineConfig {
		path := filepath.Join(dir, work+".yaml")
		yaml := fmt.Sprintf("name: g\nwork_dir: %s\nstages:\n  - {name: src, type: test_items, inputs: [in]}\n"+
			"  - {name: dd, type: dedup, from: [src], config: {fields: [reference]}}\n", work)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := engine.LoadPipeline(path, reg)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	r := &engine.Runner{Registry: reg}
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	whole := load("whole")
	if _, err := r.Run(ctx, whole, engine.RunOptions{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	wantKept := itemIDs(stageRows[engine.Item](t, filepath.Join(dir, "whole"), "dd", "items"))
	wantRej := rejectionKeys(stageRows[engine.Rejection](t, filepath.Join(dir, "whole"), "dd", "rejections"))
	if len(wantRej) == 0 {
		t.Fatal("the corpus has no duplicates: the test proves nothing")
	}

	split := load("split")
	for i := range 4 {
		_, err := r.Run(ctx, split, engine.RunOptions{Shard: engine.Shard{Index: i, Count: 4}, Log: quiet})
		if i < 3 {
			if !errors.Is(err, engine.ErrIncomplete) || !strings.Contains(err.Error(), "stage dd is global") {
				t.Fatalf("part %d/4: err = %v, want ErrIncomplete saying dd is global and waits for the other parts", i, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "split", "dd", "manifest.json")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("part %d/4 committed dd before every part of src existed", i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("last part: %v", err)
		}
	}
	gotKept := itemIDs(stageRows[engine.Item](t, filepath.Join(dir, "split"), "dd", "items"))
	gotRej := rejectionKeys(stageRows[engine.Rejection](t, filepath.Join(dir, "split"), "dd", "rejections"))
	if !slices.Equal(gotKept, wantKept) || !slices.Equal(gotRej, wantRej) {
		t.Fatalf("split build kept %d / rejected %d, the whole build %d / %d: kept %s; rejections %s", len(gotKept), len(gotRej), len(wantKept), len(wantRej), firstDiff(gotKept, wantKept), firstDiff(gotRej, wantRej))
	}
	// Once committed, every part's rerun finds it current (one output,
	// manifest.json, whichever part ran it).
	sum, err := r.Run(ctx, split, engine.RunOptions{Shard: engine.Shard{Index: 0, Count: 4}, Log: quiet})
	if err != nil || sum.Stages[1].Status != "skipped" {
		t.Fatalf("rerun of part 0: %v %+v", err, sum)
	}
	_, err = r.Run(ctx, split, engine.RunOptions{Shard: engine.Shard{Index: 1, Count: 4}, Only: []string{"dd"}, Log: quiet})
	if !errors.Is(err, engine.ErrConfig) || !strings.Contains(err.Error(), "global") {
		t.Fatalf("--stage dd --shard 1/4: err = %v, want a config error (a global stage cannot be split)", err)
	}
}
