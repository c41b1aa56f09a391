package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/benchenv"
)

// BenchmarkIngestVsDuckDB times `crucible ingest` of one JSONL file of
// items against DuckDB converting the same file to zstd Parquet
// (read_json_auto → COPY … (FORMAT parquet, COMPRESSION zstd)), back to back
// in one run, so the ratio is measured under the same machine state. The
// file is generated once: CRUCIBLE_BENCH_INGEST_ROWS items (default 200,000,
// ≈ 480 MB) of ≈ 2.4 KB each.
//
//	go test -run '^$' -bench IngestVsDuckDB -benchtime 1x ./cmd/crucible/
func BenchmarkIngestVsDuckDB(b *testing.B) {
	rows := 200_000
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
	b.Logf("%d items, %.0f MB of JSONL", rows, float64(size)/1e6)
	b.Run("crucible", func(b *testing.B) {
		b.SetBytes(size)
		var cpu time.Duration
		for i := 0; b.Loop(); i++ {
			out := filepath.Join(dir, fmt.Sprintf("crucible-%d", i))
			start := benchenv.ProcessCPU()
			if err := runIngest(context.Background(), IngestOptions{Preset: "items", Out: out, Paths: []string{in},
				Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
				b.Fatal(err)
			}
			cpu += benchenv.ProcessCPU() - start
			b.StopTimer()
			// Every generated row must be an item: a benchmark of a run that
			// rejected them would time the wrong work.
			m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
			if err != nil {
				b.Fatal(err)
			}
			if m.Counts["items"] != int64(rows) {
				b.Fatalf("ingest kept %d of %d items (counts %v)", m.Counts["items"], rows, m.Counts)
			}
			os.RemoveAll(out)
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
	b.Run("duckdb", func(b *testing.B) {
		db, err := sql.Open("duckdb", "")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.SetBytes(size)
		var cpu time.Duration
		for i := 0; b.Loop(); i++ {
			out := filepath.Join(dir, fmt.Sprintf("duckdb-%d.parquet", i))
			q := fmt.Sprintf("COPY (SELECT * FROM read_json_auto('%s', format='newline_delimited')) TO '%s' (FORMAT parquet, COMPRESSION zstd)", in, out)
			start := benchenv.ProcessCPU()
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
			cpu += benchenv.ProcessCPU() - start
			b.StopTimer()
			os.Remove(out)
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
}
