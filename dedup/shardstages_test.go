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
	"time"

	"github.com/crucible-data/crucible/engine"
)

// shardTestRegistry holds the shard stages, the single-process "dedup"
// stage (the oracle) and a source stage that copies JSONL item files.
func shardTestRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	RegisterStages(reg)
	RegisterShardStages(reg)
	reg.Register("test_items", func(engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			items, err := engine.ReadAll[engine.Item](sc.Files...)
			if err != nil {
				return err
			}
			w, err := engine.StageWriter[engine.Item](sc, "items")
			if err != nil {
				return err
			}
			return w.Write(items...)
		}), nil
	}, "test source: JSONL items")
	return reg
}

// writeShardCorpus writes a synthetic corpus with planted exact and near
// duplicates round-robin over 8 JSONL files, so most duplicates land in a
// different shard part than their original. It returns item id → part
// (for 4 source parts).
func writeShardCorpus(t testing.TB, dir string, sc SynthConfig) map[string]int {
	t.Helper()
	syn := NewSynth(sc)
	part := map[string]int{}
	files := make([][]byte, 8)
	for i := range sc.N {
		it := engine.Item{ItemID: syn.ID(i), LineageID: fmt.Sprintf("lin-%d", i), Domain: engine.DomainRTL,
			Reference: syn.Text(i), ReferenceStatus: engine.RefUnverified}
		if i%5 == 0 {
			it.ParentID = "parent" // not a lineage root: lower survivor tier
		}
		if i%11 == 3 {
			it.ReferenceStatus = engine.RefVerified // highest survivor tier, often not the earliest
		}
		line, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		files[i%8] = append(append(files[i%8], line...), '\n')
		part[it.ItemID] = (i % 8) % 4 // the source stage's part i reads files i and i+4
	}
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(dir, "in", fmt.Sprintf("items-%d.jsonl", f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return part
}

func stageRows[T any](t *testing.T, work, stage, kind string) []T {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, stage))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[T](out.Shards(kind)...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// rejectionKeys renders rejections without the stage name (which differs
// between the two pipelines), sorted.
func rejectionKeys(rs []engine.Rejection) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ItemID+" "+r.Gate+" "+r.Reason+" "+r.Detail)
	}
	slices.Sort(out)
	return out
}

func itemIDs(items []engine.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ItemID)
	}
	slices.Sort(out)
	return out
}

// shardPipeline writes and loads the test pipeline over dir/in with the
// dedup config dd shared by sign, merge and the single-process oracle.
func shardPipeline(t testing.TB, dir, dd string) (*engine.PipelineConfig, *engine.Runner) {
	t.Helper()
	yaml := fmt.Sprintf(`name: shard-dedup
work_dir: work
stages:
  - {name: src, type: test_items, inputs: [in]}
  - {name: sign, type: dedup_sign, from: [src], config: %[1]s}
  - {name: merge, type: dedup_merge, from: [sign], config: %[1]s}
  - {name: filter, type: dedup_filter, from: [src, merge], config: {decisions_from: merge}}
  - {name: single, type: dedup, from: [src], config: %[1]s}
  - {name: merge-bad, type: dedup_merge, from: [sign], config: {fields: [reference], num_perm: 64}}
  - {name: filter-nodec, type: dedup_filter, from: [src], config: {decisions_from: never-ran}}
`, dd)
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := shardTestRegistry()
	cfg, err := engine.LoadPipeline(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, &engine.Runner{Registry: reg}
}

// runParts runs one stage as parts shard parts, one after another (forced,
// so a benchmark loop redoes the work).
func runParts(t testing.TB, r *engine.Runner, cfg *engine.PipelineConfig, stage string, parts int) {
	t.Helper()
	for i := range parts {
		_, err := r.Run(context.Background(), cfg, engine.RunOptions{Shard: engine.Shard{Index: i, Count: parts},
			Only: []string{stage}, Force: true, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("%s part %d/%d: %v", stage, i, parts, err)
		}
	}
}

// BenchmarkShardStages times the workload (2 KB documents, 10%
// planted near-duplicates) through sign (4 parts, run one after another),
// merge and filter (4 parts), against the single-process dedup stage on the
// same items. docs/s are per stage, over all parts.
func BenchmarkShardStages(b *testing.B) {
	const n = 20000
	dir := b.TempDir()
	writeShardCorpus(b, dir, DefaultSynthConfig(n))
	cfg, r := shardPipeline(b, dir, fmt.Sprintf("{fields: [reference], workers: 1, temp_dir: %q}", dir))
	runParts(b, r, cfg, "src", 4)
	times := map[string]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, st := range []struct {
			name  string
			parts int
		}{{"sign", 4}, {"merge", 1}, {"filter", 4}, {"single", 1}} {
			t0 := time.Now()
			runParts(b, r, cfg, st.name, st.parts)
			times[st.name] += time.Since(t0)
		}
	}
	for name, d := range times {
		b.ReportMetric(float64(n*b.N)/d.Seconds(), name+"-docs/s")
	}
}

// TestShardStagesMatchSingleProcess runs sign and filter as separate shard
// parts and merge unsharded, and checks the kept items and every rejection
// (reason, cluster id, survivor, lineage) against the single-process dedup
// stage on the same items — including duplicates whose original sits in
// another part, which a per-part dedup cannot see.
func TestShardStagesMatchSingleProcess(t *testing.T) {
	for _, tc := range []struct {
		verify                string
		signParts, filterPart int
	}{
		{VerifyExact, 4, 4},
		{VerifySignature, 2, 3}, // sign and filter split unlike the source: every-Nth upstream shard
	} {
		t.Run(fmt.Sprintf("%s/sign%d/filter%d", tc.verify, tc.signParts, tc.filterPart), func(t *testing.T) {
			dir := t.TempDir()
			part := writeShardCorpus(t, dir, SynthConfig{N: 320, DocWords: 120, Vocab: 3000, DupFrac: 0.3, EditsMin: 1, EditsMax: 3,
				ExactFrac: 0.3, Seed: 7})
			cfg, r := shardPipeline(t, dir, fmt.Sprintf("{fields: [reference], verify: %s, workers: 2, batch_docs: 16, temp_dir: %q}", tc.verify, dir))
			quiet := slog.New(slog.DiscardHandler)
			ctx := context.Background()
			run := func(stage string, parts int) {
				t.Helper()
				runParts(t, r, cfg, stage, parts)
			}
			run("src", 4)
			run("sign", tc.signParts)
			run("merge", 1)
			run("filter", tc.filterPart)
			run("single", 1)
			work := cfg.ResolvedWorkDir()

			wantKept := itemIDs(stageRows[engine.Item](t, work, "single", "items"))
			gotKept := itemIDs(stageRows[engine.Item](t, work, "filter", "items"))
			if !slices.Equal(gotKept, wantKept) {
				t.Fatalf("kept %d items, single-process dedup kept %d; first differences: %v",
					len(gotKept), len(wantKept), firstDiff(gotKept, wantKept))
			}
			singleRej := stageRows[engine.Rejection](t, work, "single", "rejections")
			gotRej := stageRows[engine.Rejection](t, work, "filter", "rejections")
			if g, w := rejectionKeys(gotRej), rejectionKeys(singleRej); !slices.Equal(g, w) {
				t.Fatalf("rejections differ from single-process dedup: %v", firstDiff(g, w))
			}
			if len(gotKept)+len(gotRej) != 320 {
				t.Fatalf("kept %d + rejected %d != 320 items", len(gotKept), len(gotRej))
			}

			// Signatures in canonical order stream; a sign split unlike the
			// source needs the in-memory sort.
			mm, err := engine.ReadManifest(filepath.Join(work, "merge", "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if wantSorted := map[bool]int64{true: 0, false: 320}[tc.signParts == 4]; mm.Counts["sorted_in_memory"] != wantSorted {
				t.Fatalf("merge sorted %d rows in memory, want %d", mm.Counts["sorted_in_memory"], wantSorted)
			}

			// The feature's point: duplicates of an original in another part.
			reasons := map[string]int{}
			cross := 0
			for _, rj := range gotRej {
				reasons[rj.Reason]++
				var d RejectionDetail
				if err := json.Unmarshal([]byte(rj.Detail), &d); err != nil {
					t.Fatalf("rejection %s detail %q: %v", rj.ItemID, rj.Detail, err)
				}
				if d.ClusterID == "" || d.SurvivorID == "" || d.SurvivorID == rj.ItemID || d.LineageID == "" || d.ClusterSize < 2 {
					t.Fatalf("rejection %s: incomplete detail %+v", rj.ItemID, d)
				}
				if !slices.Contains(gotKept, d.SurvivorID) {
					t.Fatalf("rejection %s: survivor %s was not kept", rj.ItemID, d.SurvivorID)
				}
				if part[rj.ItemID] != part[d.SurvivorID] {
					cross++
				}
			}
			if reasons[ReasonNearDuplicate] < 20 || reasons[ReasonExactDuplicate] < 5 || cross < 20 {
				t.Fatalf("planted duplicates not found: reasons %v, %d across parts", reasons, cross)
			}
			t.Logf("%d kept, rejections %v, %d across source parts", len(gotKept), reasons, cross)

			// Signatures made with other parameters are refused, not compared.
			_, err = r.Run(ctx, cfg, engine.RunOptions{Only: []string{"merge-bad"}, Log: quiet})
			if err == nil || !strings.Contains(err.Error(), "same config") {
				t.Fatalf("merge over signatures of another num_perm: err = %v, want a config mismatch", err)
			}
			// A filter without the merge among its declared upstreams reads no
			// decisions (it never opens a stage it does not list): a config
			// error naming what to list.
			_, err = r.Run(ctx, cfg, engine.RunOptions{Only: []string{"filter-nodec"}, Shard: engine.Shard{Index: 0, Count: 4}, Log: quiet})
			if err == nil || !strings.Contains(err.Error(), "list the dedup_merge stage in from:") || !errors.Is(err, engine.ErrConfig) {
				t.Fatalf("filter without decisions: err = %v, want ErrConfig naming from:", err)
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: got %q, want %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

func TestShardStageConfigErrors(t *testing.T) {
	reg := engine.NewRegistry()
	RegisterShardStages(reg)
	for _, tc := range []struct{ typ, cfg, want string }{
		{"dedup_filter", "{decisions_from: m, threshold: 0.8}", "threshold"},
		{"dedup_sign", "{threshold: 1.5, fields: [title]}", "threshold=1.5"},
		{"dedup_merge", "{num_perm: 2}", "num_perm=2"},
	} {
		sc, err := engine.NewStageConfig(tc.typ, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = reg.Build(tc.typ, sc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want it to mention %q", tc.typ, tc.cfg, err, tc.want)
		}
	}
}
