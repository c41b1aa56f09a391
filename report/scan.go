package report

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/crucible-data/crucible/engine"
)

// scanRows calls fn for every batch of rows of T in a shard. For Parquet it
// decodes only the columns T names (shards of items carry long texts, packed
// shards millions of token ids; a report needs a few small columns), and T's
// fields are filled by name through the engine's codec. Other files go
// through engine.ReadRows.
func scanRows[T any](ctx context.Context, path string, fn func([]T) error) (err error) {
	if !engine.IsParquet(path) {
		rows, err := engine.ReadRows[T](path)
		if err != nil {
			return err
		}
		return fn(rows)
	}
	codec, err := engine.NewCodec[T]()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, f := range codec.Schema().Fields() {
		want[f.Name] = true
	}
	// The Parquet and Arrow libraries panic on some corrupt files; a report
	// must name the file instead of crashing the build that asked for it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: corrupt Parquet: %v", engine.ErrInput, path, r)
		}
	}()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	defer pf.Close()
	var leaves []int
	sch := pf.MetaData().Schema
	for i := 0; i < sch.NumColumns(); i++ {
		if p := sch.Column(i).ColumnPath(); len(p) > 0 && want[p[0]] {
			leaves = append(leaves, i)
		}
	}
	if len(leaves) == 0 {
		// None of T's columns exist: every row reads as T's zero value.
		n := pf.NumRows()
		return fn(make([]T, n))
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	defer rr.Release()
	var buf []T
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf, err = codec.Read(rr.RecordBatch(), buf[:0])
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	return nil
}
