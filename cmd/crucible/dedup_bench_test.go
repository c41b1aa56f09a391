package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// cpuSeconds is this process's user+system CPU time: a per-core figure
// that other processes on a shared machine do not inflate.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkDedupEndToEnd measures `crucible dedup` end to end (read JSONL,
// dedup, write kept/removed Parquet with every input column) on 20,000 ×
// 2 KB documents (dedup.DefaultSynthConfig), next to the in-memory
// ekzhu/minhash-lsh peer (dedup.Run with the memory backend over documents
// already in memory: no reading, no writing) in the same run:
//
//	go test -run '^$' -bench DedupEndToEnd -cpu 1 -benchtime 3x ./cmd/crucible/
//
// -cpu 1 is GOMAXPROCS=1 (the per-core figure). docs/s is wall time,
// docs/cpu-s the process's CPU time (robust to a shared machine).
func BenchmarkDedupEndToEnd(b *testing.B) {
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.DiscardHandler))
	const n = 20000
	dir := b.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	inBytes := writeSynthCorpus(b, in, n)
	report := func(b *testing.B, cpu float64) {
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
		b.ReportMetric(float64(n*b.N)/cpu, "docs/cpu-s")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
	}
	b.Run("cli", func(b *testing.B) {
		b.SetBytes(inBytes)
		runtime.GC()
		c0 := cpuSeconds()
		b.ResetTimer()
		for i := range b.N {
			o := DedupOptions{In: []string{in}, IDField: "id", TextFields: []string{"text"}, Config: dedup.DefaultConfig(),
				Writer: engine.DefaultWriterOptions(), Stdout: &bytes.Buffer{}, Out: filepath.Join(dir, fmt.Sprintf("out-%d", i))}
			if err := runDedup(context.Background(), o); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(o.Out)
			b.StartTimer()
		}
		b.StopTimer()
		report(b, cpuSeconds()-c0)
	})
	b.Run("peer-minhash-lsh-memory", func(b *testing.B) {
		syn := dedup.NewSynth(dedup.DefaultSynthConfig(n))
		docs := make(dedup.SliceSource, 0, n)
		_ = syn.Scan(context.Background(), func(d dedup.Doc) error { docs = append(docs, d); return nil })
		cfg := dedup.DefaultConfig()
		cfg.Backend = dedup.BackendMemory
		b.SetBytes(inBytes)
		runtime.GC()
		c0 := cpuSeconds()
		b.ResetTimer()
		for range b.N {
			res, err := dedup.Run(context.Background(), docs, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			res.Close()
		}
		b.StopTimer()
		report(b, cpuSeconds()-c0)
	})
}
