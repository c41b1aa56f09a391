package dedup

import (
	"context"
	"testing"
)

func benchDocs(b *testing.B, n int) SliceSource {
	b.Helper()
	syn := NewSynth(DefaultSynthConfig(n))
	docs := make(SliceSource, 0, n)
	syn.Scan(context.Background(), func(d Doc) error { docs = append(docs, d); return nil })
	return docs
}

// BenchmarkSign measures tokenise + shingle + OPH signature per document.
func BenchmarkSign(b *testing.B) {
	docs := benchDocs(b, 2000)
	cfg := DefaultConfig()
	bands, _ := ChooseBands(cfg.NumPerm, cfg.Threshold, cfg.FPWeight, cfg.FNWeight)
	signer := Signer{K: cfg.NumPerm, Seed: cfg.Seed}
	var w worker
	out := signed{sig: make([]uint64, cfg.NumPerm)}
	var bytes int64
	for _, d := range docs {
		bytes += int64(len(d.Text))
	}
	b.SetBytes(bytes / int64(len(docs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.sign(&cfg, bands, signer, &docs[i%len(docs)], "", &out)
	}
}

// BenchmarkRunEndToEnd measures the whole pipeline on one worker.
func BenchmarkRunEndToEnd(b *testing.B) {
	docs := benchDocs(b, 20000)
	cfg := DefaultConfig()
	cfg.Workers = 1
	cfg.Backend = BackendDisk
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), docs, cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		res.Close()
	}
	b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkTokenize measures the tokeniser alone on the synthetic corpus.
func BenchmarkTokenize(b *testing.B) {
	docs := benchDocs(b, 2000)
	opts := DefaultConfig().tokenizeOptions()
	var bytes int64
	for _, d := range docs {
		bytes += int64(len(d.Text))
	}
	b.SetBytes(bytes / int64(len(docs)))
	var tok Tokens
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Tokenize(docs[i%len(docs)].Text, opts, &tok)
	}
}
