package engine

import (
	"context"
	"errors"
	"io"
	"math/rand"
	"path/filepath"
	"testing"
)

func benchItems(n int) []Item {
	r := rand.New(rand.NewSource(3))
	items := make([]Item, n)
	for i := range items {
		items[i] = randomItem(r, i)
	}
	return items
}

func itemBytes(items []Item) int64 {
	var n int64
	for i := range items {
		n += int64(len(items[i].Instruction) + len(items[i].Reference) + len(items[i].Verifier.Harness) + 200)
	}
	return n
}

// BenchmarkShardWrite measures Go structs -> Arrow -> zstd Parquet, fsync
// and commit included.
func BenchmarkShardWrite(b *testing.B) {
	items := benchItems(20000)
	b.SetBytes(itemBytes(items))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := WriteAll(context.Background(), b.TempDir(), "items", "items", DefaultWriterOptions(), items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkShardRead measures Parquet -> Arrow -> Go structs.
func BenchmarkShardRead(b *testing.B) {
	items := benchItems(20000)
	dir := b.TempDir()
	infos, err := WriteAll(context.Background(), dir, "items", "items", DefaultWriterOptions(), items)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(itemBytes(items))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := OpenParquet[Item](context.Background(), filepath.Join(dir, infos[0].Path), nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			rows, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(rows)
		}
		r.Close()
		if n != len(items) {
			b.Fatalf("read %d rows", n)
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
