package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Batches streams the rows of T from a list of Parquet shards in order, a
// bounded batch at a time: one file is open at once, and within it one row
// group, so what it holds is one batch of rows (BatchOptions.BatchSize) and
// the Arrow buffers of one row group's projected columns. Only the columns
// T decodes (or BatchOptions.Columns) are read from disk.
//
// Next returns io.EOF after the last row; any other error names the file
// (and the row group, where one was being read), wraps ErrInput or
// ErrSchema, or is the context's, and is returned again by every later
// call. Close releases the open file; it is safe after io.EOF or an error.
type Batches[T any] struct {
	ctx   context.Context
	paths []string
	opts  BatchOptions
	i     int // index of the next file to open
	cur   *ParquetReader[T]
	bytes int64 // read from files already closed
	err   error
	rows  int64 // the rows the files hold, where known (upstream manifests): Collect's capacity
}

// OpenBatches streams the rows of the Parquet files in paths. Nothing is
// opened until the first Next.
func OpenBatches[T any](ctx context.Context, paths []string, opts BatchOptions) *Batches[T] {
	return &Batches[T]{ctx: ctx, paths: paths, opts: opts}
}

// ReadBatches streams a stage's upstream rows of a kind ("" for all).
func ReadBatches[T any](ctx context.Context, sc *StageContext, kind string, opts BatchOptions) *Batches[T] {
	b := OpenBatches[T](ctx, sc.InputPaths(kind), opts)
	b.rows = sc.InputRows(kind)
	return b
}

// Next returns the next batch (valid until the next call), or io.EOF.
func (b *Batches[T]) Next() ([]T, error) {
	for b.err == nil {
		if b.cur == nil {
			if b.i >= len(b.paths) {
				b.err = io.EOF
				break
			}
			p := b.paths[b.i]
			b.i++
			if !IsParquet(p) {
				b.err = fmt.Errorf("%w: %s: not a Parquet shard", ErrInput, p)
				break
			}
			if b.cur, b.err = openParquetReader[T](b.ctx, p, b.opts, nil); b.err != nil {
				break
			}
		}
		rows, err := b.cur.Next()
		if err == nil {
			return rows, nil
		}
		b.closeFile()
		if !errors.Is(err, io.EOF) {
			b.err = err
		}
	}
	return nil, b.err
}

func (b *Batches[T]) closeFile() {
	if b.cur != nil {
		b.bytes += b.cur.BytesRead()
		b.cur.Close()
		b.cur = nil
	}
}

// Each calls fn with every batch in turn, then closes b. It returns fn's
// first error or b's (io.EOF is the normal end, not an error).
func (b *Batches[T]) Each(fn func(rows []T) error) error {
	defer b.Close()
	for {
		rows, err := b.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
}

// Collect reads every remaining row into one slice, then closes b: for
// stages whose logic needs all rows at once.
func (b *Batches[T]) Collect() ([]T, error) {
	out := make([]T, 0, b.rows)
	err := b.Each(func(rows []T) error {
		out = append(out, rows...)
		return nil
	})
	if err != nil || len(out) == 0 {
		return nil, err // no rows: nil, as a read of nothing always gave
	}
	return out, nil
}

// BytesRead is the bytes read from the files so far.
func (b *Batches[T]) BytesRead() int64 {
	n := b.bytes
	if b.cur != nil {
		n += b.cur.BytesRead()
	}
	return n
}

// Close releases the open file, if any.
func (b *Batches[T]) Close() error {
	b.closeFile()
	if b.err == nil {
		b.err = io.EOF
	}
	return nil
}
