package report

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// syntheticWork writes a two-stage work dir (n items; a verify stage with
// one verdict per item and a rejection per failure) without running a
// pipeline, so the benchmark measures the report alone.
func syntheticWork(b *testing.B, n int) string {
	b.Helper()
	ctx := context.Background()
	work := b.TempDir()
	families := []string{"counter", "fifo", "alu", "fsm", "gemm", "softmax"}
	items := make([]engine.Item, n)
	for i := range items {
		d := engine.DomainRTL
		if i%3 == 0 {
			d = engine.DomainKernel
		}
		items[i] = engine.Item{ItemID: fmt.Sprintf("it%07d", i), Domain: d, Family: families[i%len(families)],
			Route: engine.RouteSolutionFirst, Operator: "op" + fmt.Sprint(i%4), Difficulty: float64(i%100) / 100,
			Instruction: strings.Repeat("Design a module. ", 20+i%80), Reference: strings.Repeat("assign y = a & b;\n", 10+i%90)}
	}
	var evs []engine.Evidence
	var rejs []engine.Rejection
	var kept []engine.Item
	for i, it := range items {
		ev := engine.Evidence{ItemID: it.ItemID, CandidateID: "ref", Status: engine.StatusPass}
		ev.Provenance.Verifier = "rtl/differential/icarus"
		ev.Provenance.Toolchain = []engine.Tool{{Name: "iverilog", Version: "11.0"}}
		if i%7 == 0 {
			ev.Status, ev.FailureStage = engine.StatusFail, engine.StageMismatch
			rejs = append(rejs, engine.Rejection{ItemID: it.ItemID, Stage: "verify", Gate: "reference", Reason: "reference_failed"})
		} else {
			kept = append(kept, it)
		}
		evs = append(evs, ev)
	}
	opts := engine.DefaultWriterOptions()
	commit := func(stage string, from []string, write func(dir string) ([]engine.ShardInfo, error)) {
		dir := filepath.Join(work, stage)
		shards, err := write(dir)
		if err != nil {
			b.Fatal(err)
		}
		m := &engine.Manifest{Version: engine.ManifestVersion, Stage: stage, Type: stage, ConfigHash: engine.HashString(stage), Shards: shards}
		for _, f := range from {
			m.Inputs = append(m.Inputs, engine.InputRef{Kind: "manifest", Path: f + "/manifest.json"})
		}
		if err := engine.WriteManifest(dir, "manifest.json", m); err != nil {
			b.Fatal(err)
		}
	}
	commit("ingest", nil, func(dir string) ([]engine.ShardInfo, error) {
		return engine.WriteAll(ctx, dir, "items", "items", opts, items)
	})
	commit("verify", []string{"ingest"}, func(dir string) ([]engine.ShardInfo, error) {
		var all []engine.ShardInfo
		for _, w := range []func() ([]engine.ShardInfo, error){
			func() ([]engine.ShardInfo, error) { return engine.WriteAll(ctx, dir, "items", "items", opts, kept) },
			func() ([]engine.ShardInfo, error) {
				return engine.WriteAll(ctx, dir, "evidence", "evidence", opts, evs)
			},
			func() ([]engine.ShardInfo, error) {
				return engine.WriteAll(ctx, dir, "rejections", "rejections", opts, rejs)
			},
		} {
			s, err := w()
			if err != nil {
				return nil, err
			}
			all = append(all, s...)
		}
		return all, nil
	})
	return work
}

// BenchmarkGenerate: the whole report (read shards, plots, HTML, JSON, history) of a 50k-item build.
func BenchmarkGenerate(b *testing.B) {
	work := syntheticWork(b, 50000)
	sum := &engine.RunSummary{Pipeline: "bench", WorkDir: work, Started: time.Now(), Finished: time.Now(),
		Stages: []engine.StageResult{{Name: "ingest", Status: "ran", Seconds: 1}, {Name: "verify", Status: "ran", Seconds: 9}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, _, err := Generate(context.Background(), work, sum, DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		if r.Coverage.Items == 0 {
			b.Fatal("no items")
		}
	}
}
