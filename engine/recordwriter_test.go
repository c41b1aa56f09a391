package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A record shard writer cuts row groups and shards like the typed one, and
// every row comes back in order, with the schema's types.
func TestRecordShardWriter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	dir := t.TempDir()
	w, err := NewRecordShardWriter(dir, "out", "out", schema, WriterOptions{RowGroupBytes: 2 << 10, ShardBytes: 8 << 10, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(arrow.RecordBatch(nil)); !errors.Is(err, ErrSchema) {
		t.Fatalf("Write on a record writer: %v, want ErrSchema", err)
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const batches, per = 40, 100
	for k := 0; k < batches; k++ {
		for i := 0; i < per; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(k*per + i))
			lb := b.Field(1).(*array.ListBuilder)
			if i%3 == 0 {
				lb.AppendNull()
				continue
			}
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append("t")
		}
		rec := b.NewRecordBatch()
		err := w.WriteRecord(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int32}}, nil)
	ob := array.NewRecordBuilder(mem, other)
	ob.Field(0).(*array.Int32Builder).Append(1)
	orec := ob.NewRecordBatch()
	if err := w.WriteRecord(orec); !errors.Is(err, ErrSchema) {
		t.Fatalf("a record of another schema: %v, want ErrSchema", err)
	}
	orec.Release()
	ob.Release()
	shards, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) < 2 {
		t.Fatalf("%d shards, want several at 8 KiB each", len(shards))
	}
	type row struct {
		N    int64    `arrow:"n"`
		Tags []string `arrow:"tags"`
	}
	var paths []string
	var total int64
	for _, s := range shards {
		paths = append(paths, filepath.Join(dir, s.Path))
		total += s.Rows
	}
	rows, err := ReadAll[row](paths...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != batches*per || total != batches*per {
		t.Fatalf("read %d rows, manifests say %d, wrote %d", len(rows), total, batches*per)
	}
	for i, r := range rows {
		if r.N != int64(i) || (i%per%3 == 0) != (r.Tags == nil) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
}
