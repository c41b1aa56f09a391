package ingest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
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
	size := writeBenchItems(b, in, rows)
	b.SetBytes(size)
	var cpu time.Duration
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		opts := engine.DefaultWriterOptions()
		if os.Getenv("CRUCIBLE_BENCH_POOL") != "" {
			opts.Allocator = NewBufferPool()
		}
		start := cpuTime()
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
		cpu += cpuTime() - start
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user and system CPU time so far: on a loaded
// machine the CPU an ingest takes varies less than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeBenchItems writes n valid RTL items (the rows of cmd/crucible's
// ingest benchmark) and returns the file's size.
func writeBenchItems(b *testing.B, path string, n int) int64 {
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
