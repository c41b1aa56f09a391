package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// benchCodecs are the output codecs measured for the default (README,
// "Output compression").
var benchCodecs = []struct {
	name string
	w    engine.WriterOptions
}{
	{"zstd-1", engine.WriterOptions{Compression: engine.CodecZstd, CompressionLevel: 1}},
	{"zstd-3", engine.WriterOptions{Compression: engine.CodecZstd, CompressionLevel: 3}},
	{"snappy", engine.WriterOptions{Compression: engine.CodecSnappy}},
	{"none", engine.WriterOptions{Compression: engine.CodecNone}},
}

// writeSynthCorpus writes dedup's benchmark workload (dedup.DefaultSynthConfig:
// 2 KB documents, 10% planted near duplicates) as JSONL rows with an id, a
// text and two metadata columns.
func writeSynthCorpus(tb testing.TB, path string, n int) int64 {
	tb.Helper()
	syn := dedup.NewSynth(dedup.DefaultSynthConfig(n))
	var b bytes.Buffer
	for i := range n {
		text, _ := json.Marshal(syn.Text(i))
		fmt.Fprintf(&b, `{"id":%q,"n":%d,"lang":"l%d","text":%s}`+"\n", syn.ID(i), i, i%7, text)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return int64(b.Len())
}

// BenchmarkDedupOutputCodecs measures the output codecs on the dedup
// output of 20,000 × 2 KB documents:
//
//	go test -p 1 -run '^$' -bench DedupOutputCodecs -benchtime 3x ./cmd/crucible/
//
// write/<codec>: writing the output rows (kept and removed, all columns,
// held in memory) as Parquet shards, MB/s of the JSONL input and the bytes
// written; dedup/<codec>: the whole `crucible dedup` run with that codec.
func BenchmarkDedupOutputCodecs(b *testing.B) {
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.DiscardHandler))
	dir := b.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	inBytes := writeSynthCorpus(b, in, 20000)
	base := DedupOptions{In: []string{in}, IDField: "id", TextFields: []string{"text"}, Config: dedup.DefaultConfig(),
		Writer: engine.DefaultWriterOptions(), Stdout: &bytes.Buffer{}}
	base.Config.Workers = 1
	o := base
	o.Out = filepath.Join(dir, "base")
	if err := runDedup(context.Background(), o); err != nil {
		b.Fatal(err)
	}
	so, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		b.Fatal(err)
	}
	files := append(so.Shards("kept"), so.Shards("removed")...)
	rows, err := dedup.OpenInput(context.Background(), files, "id")
	if err != nil {
		b.Fatal(err)
	}
	var recs []arrow.RecordBatch
	if err := rows.ScanBatches(context.Background(), func(_ string, rec arrow.RecordBatch, _ []string) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, c := range benchCodecs {
		b.Run("write/"+c.name, func(b *testing.B) {
			b.SetBytes(inBytes)
			var out int64
			for i := range b.N {
				d := filepath.Join(dir, fmt.Sprintf("w-%s-%d", c.name, i))
				opts := engine.DefaultWriterOptions()
				opts.Compression, opts.CompressionLevel = c.w.Compression, c.w.CompressionLevel
				w, err := engine.NewRecordShardWriter(d, "rows", "rows", rows.Schema, opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := w.WriteRecord(r); err != nil {
						b.Fatal(err)
					}
				}
				infos, err := w.Close()
				if err != nil {
					b.Fatal(err)
				}
				out = 0
				for _, s := range infos {
					out += s.Bytes
				}
				os.RemoveAll(d)
			}
			b.ReportMetric(float64(out)/1e6, "out-MB")
		})
	}
	for _, c := range benchCodecs {
		b.Run("dedup/"+c.name, func(b *testing.B) {
			b.SetBytes(inBytes)
			for i := range b.N {
				o := base
				o.Out = filepath.Join(dir, fmt.Sprintf("d-%s-%d", c.name, i))
				o.Writer.Compression, o.Writer.CompressionLevel = c.w.Compression, c.w.CompressionLevel
				if err := runDedup(context.Background(), o); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(o.Out)
			}
		})
	}
}
