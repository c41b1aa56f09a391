package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/benchenv"
)

// BenchmarkIngestItemsJSONL is the hot path of `crucible ingest` without
// the command around it (no DuckDB to link, so it builds in seconds): a
// JSONL file of items like cmd/crucible's BenchmarkIngestVsDuckDB's read
// by an Ingester into the shard writers the ingest stage uses.
// CRUCIBLE_BENCH_INGEST_ROWS sets the rows (default 50,000, ≈ 120 MB).
//
//	go test -run '^$' -bench IngestItemsJSONL -benchtime 1x ./engine/ingest/
func BenchmarkIngestItemsJSONL(b *testing.B) {
	rows := 50_000
	if s := os.Getenv("CRUCIBLE_BENCH_INGEST_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CRUCIBLE_BENCH_INGEST_ROWS=%q", s)
		}
		rows = n
	}
	dir := b.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	size, err := benchenv.WriteIngestItems(in, rows)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	var cpu time.Duration
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		opts := engine.DefaultWriterOptions()
		if os.Getenv("CRUCIBLE_BENCH_POOL") != "" {
			opts.Allocator = NewBufferPool()
		}
		start := benchenv.ProcessCPU()
		items, err := engine.NewShardWriter[engine.Item](out, "items", "items", opts)
		if err != nil {
			b.Fatal(err)
		}
		rejects, err := engine.NewShardWriter[engine.Rejection](out, "rejections", "rejections", opts)
		if err != nil {
			b.Fatal(err)
		}
		var one [1]engine.Item // as the stage's sink does
		g, err := New(PresetItems, Sink{Item: func(it engine.Item) error { one[0] = it; return items.Write(one[:]...) }, Reject: func(r engine.Rejection) error { return rejects.Write(r) }})
		if err != nil {
			b.Fatal(err)
		}
		g.SinkCopies = true
		if err := g.IngestFile(context.Background(), in); err != nil {
			b.Fatal(err)
		}
		if _, err := items.Close(); err != nil {
			b.Fatal(err)
		}
		if _, err := rejects.Close(); err != nil {
			b.Fatal(err)
		}
		if g.Stats.Items != int64(rows) {
			b.Fatalf("kept %d of %d items (%v)", g.Stats.Items, rows, g.Stats.Reasons)
		}
		cpu += benchenv.ProcessCPU() - start
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
