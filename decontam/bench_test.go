package decontam

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/dedup"
)

// BenchmarkCheckCorpus measures corpus→benchmark-index matching throughput
// (2 KB synthetic documents against the VerilogEval spec-to-rtl index).
func BenchmarkCheckCorpus(b *testing.B) {
	ds := filepath.Join("..", "..", "shared", "datasets")
	var suite RecordSlice
	err := dedup.ScanRecords(context.Background(), filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl"), "id",
		[]string{"prompt", "ref"}, func(r dedup.Record) error { suite = append(suite, r); return nil })
	if err != nil {
		b.Skip(err)
	}
	ix, cleanup, err := BuildTempIndex(context.Background(), DefaultConfig(), b.TempDir(), "ve", SideBenchmark, suite)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	syn := dedup.NewSynth(dedup.DefaultSynthConfig(2000))
	var corpus RecordSlice
	var bytes int64
	syn.Scan(context.Background(), func(d dedup.Doc) error {
		corpus = append(corpus, dedup.Record{ID: d.ID, Fields: []dedup.Field{{Name: "text", Text: d.Text}}})
		bytes += int64(len(d.Text))
		return nil
	})
	b.SetBytes(bytes / int64(len(corpus)))
	b.ReportAllocs()
	b.ResetTimer()
	m := ix.NewMatcher()
	for i := 0; i < b.N; i++ {
		r := corpus[i%len(corpus)]
		if _, err := m.Match(r.ID, "text", r.Text()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}
