package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
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
	size := writeIngestCorpus(b, in, rows)
	b.Logf("%d items, %.0f MB of JSONL", rows, float64(size)/1e6)
	b.Run("crucible", func(b *testing.B) {
		b.SetBytes(size)
		var cpu time.Duration
		for i := 0; b.Loop(); i++ {
			out := filepath.Join(dir, fmt.Sprintf("crucible-%d", i))
			start := processCPU()
			if err := runIngest(context.Background(), IngestOptions{Preset: "items", Out: out, Paths: []string{in},
				Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - start
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
			start := processCPU()
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - start
			b.StopTimer()
			os.Remove(out)
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
}

// processCPU is the user and system CPU time of the process (DuckDB's
// threads included): on a shared machine the CPU each side takes is a
// steadier comparison than their wall times.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeIngestCorpus writes n valid RTL items and returns the file's size.
func writeIngestCorpus(b *testing.B, path string, n int) int64 {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	filler := strings.Repeat("The counter increments on every rising clock edge while enable is high and wraps at its modulus. ", 21)
	ref := "module RefModule(input clk, input rst, input en, output reg [7:0] q);\n  always @(posedge clk) if (rst) q <= 0; else if (en) q <= q + 1;\nendmodule\n"
	for i := 0; i < n; i++ {
		row := map[string]any{
			"item_id": fmt.Sprintf("item-%07d", i), "domain": "rtl", "family": fmt.Sprintf("fam%d", i%11),
			"instruction": fmt.Sprintf("Task %d. %s", i, filler), "reference": ref,
			"interface": map[string]any{"top": "TopModule"},
			"verifier":  map[string]any{"kind": "differential", "top": "tb", "harness": "module tb; endmodule"},
		}
		line, err := json.Marshal(row)
		if err != nil {
			b.Fatal(err)
		}
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}
