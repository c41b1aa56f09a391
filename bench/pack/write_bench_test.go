package packbench

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack"
)

func benchRows(n int) []pack.MegatronRow {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]pack.MegatronRow, n)
	for i := range rows {
		row := pack.MegatronRow{InputIDs: make([]int32, 32768), LossMask: make([]int8, 32768), SeqStartID: []int32{0, 9000, 20000}, DocIDs: []string{"a", "b", "c"}}
		for k := range row.InputIDs {
			row.InputIDs[k] = int32(r.IntN(3000) * r.IntN(33))
			row.LossMask[k] = int8(k / 3000 % 2)
		}
		rows[i] = row
	}
	return rows
}

func BenchmarkWriteEngine(b *testing.B) {
	rows := benchRows(64)
	b.SetBytes(64 * 32768 * 4)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		if _, err := engine.WriteAll(context.Background(), dir, "p", "packed", engine.DefaultWriterOptions(), rows); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteNoDict(b *testing.B) {
	rows := benchRows(64)
	b.SetBytes(64 * 32768 * 4)
	c, _ := engine.NewCodec[pack.MegatronRow]()
	for i := 0; i < b.N; i++ {
		f, _ := os.Create(b.TempDir() + "/x.parquet")
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(1), parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(1<<40))
		fw, err := pqarrow.NewFileWriter(c.Schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			b.Fatal(err)
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, c.Schema())
		for k := range rows {
			c.Append(bld, &rows[k])
		}
		rec := bld.NewRecordBatch()
		if err := fw.Write(rec); err != nil {
			b.Fatal(err)
		}
		fw.Close()
		f.Close()
	}
}
