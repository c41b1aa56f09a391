package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DefaultBatchSize is the rows of one batch when BatchOptions leaves it 0.
const DefaultBatchSize = 1024

// BatchOptions shape how Parquet rows are read into T.
type BatchOptions struct {
	// BatchSize bounds the rows of one batch (0: DefaultBatchSize).
	BatchSize int
	// Columns, when set, is a projection narrower than T: only these
	// top-level columns are read and decoded, the rest of T stays zero.
	// Each must name a field of T and be in every file read (an ErrSchema
	// naming the file and column otherwise). Unset, the columns are T's
	// own, and one missing from a file reads as the zero value (Codec.Read).
	Columns []string
	// Mem allocates the Arrow buffers (nil: Go allocator).
	Mem memory.Allocator
}

// ParquetReader streams rows of T from one Parquet file, a record batch at a
// time, one row group after another. Only the columns T decodes (or the
// declared projection) are read: their leaf indices go to the Parquet
// reader, so the bytes of other columns are never fetched. Read follows
// io.Reader's convention: it returns io.EOF after the last row.
type ParquetReader[T any] struct {
	ctx    context.Context
	path   string
	codec  *Codec[T]
	src    *countingFile
	pf     *file.Reader
	fr     *pqarrow.FileReader
	leaves []int // projected leaf columns; empty when the file has none of T's
	schema *arrow.Schema
	groups []int // row groups to read, in order
	gi     int   // index into groups of the one being read
	open   bool  // groups[gi] is being read
	rr     pqarrow.RecordReader
	zeros  int64 // rows left of a row group read with no leaf column
	batch  int
	buf    []T

	lenient bool
	next    int64             // file rows before the next row returned
	bad     map[int]*RowError // rows of the current batch that did not convert
}

// Lenient makes Next return rows whose values do not convert to T (see
// Codec.Read) instead of failing; RowError tells them apart. Ingest uses it
// to turn each into a rejection row.
func (r *ParquetReader[T]) Lenient() { r.lenient = true }

// RowError is the conversion error of row i of the last batch, or nil.
func (r *ParquetReader[T]) RowError(i int) *RowError { return r.bad[i] }

// OpenParquet opens path for streaming. mem may be nil (Go allocator).
func OpenParquet[T any](ctx context.Context, path string, mem memory.Allocator) (*ParquetReader[T], error) {
	return OpenParquetRowGroups[T](ctx, path, mem, nil)
}

// OpenParquetRowGroups is OpenParquet over only the given row groups (nil:
// all), in that order.
func OpenParquetRowGroups[T any](ctx context.Context, path string, mem memory.Allocator, rowGroups []int) (*ParquetReader[T], error) {
	return openParquetReader[T](ctx, path, BatchOptions{Mem: mem}, rowGroups)
}

// openParquetReader is the one way a Parquet file is opened for rows of T.
func openParquetReader[T any](ctx context.Context, path string, opts BatchOptions, rowGroups []int) (*ParquetReader[T], error) {
	c, err := NewCodec[T]()
	if err != nil {
		return nil, err
	}
	want, err := projection(c, opts.Columns)
	if err != nil {
		return nil, err
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	src, pf, err := openParquetFile(path)
	if err != nil {
		return nil, err
	}
	r := &ParquetReader[T]{ctx: ctx, path: path, codec: c, src: src, pf: pf, groups: rowGroups, batch: opts.BatchSize}
	if err := r.init(want, opts); err != nil {
		pf.Close()
		return nil, err
	}
	return r, nil
}

// init builds the Arrow reader and resolves the projection and row groups.
func (r *ParquetReader[T]) init(want []string, opts BatchOptions) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: corrupt Parquet metadata: %v", ErrInput, r.path, p)
		}
	}()
	n := r.pf.NumRowGroups()
	for _, g := range r.groups {
		if g < 0 || g >= n {
			return fmt.Errorf("%w: %s: row group %d of %d", ErrInput, r.path, g, n)
		}
	}
	if r.groups == nil {
		for g := range n {
			r.groups = append(r.groups, g)
		}
	}
	props := pqarrow.ArrowReadProperties{BatchSize: int64(opts.BatchSize), Parallel: false}
	if r.fr, err = pqarrow.NewFileReader(r.pf, props, opts.Mem); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInput, r.path, err)
	}
	full, err := r.fr.Schema()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInput, r.path, err)
	}
	var fields []arrow.Field
	for _, f := range full.Fields() {
		if slices.Contains(want, f.Name) {
			fields = append(fields, f)
		}
	}
	r.schema = arrow.NewSchema(fields, nil)
	if len(r.groups) > 0 {
		r.next = r.groupStart(r.groups[0])
	}
	if opts.Columns != nil {
		for _, name := range want {
			if !r.schema.HasField(name) {
				return fmt.Errorf("%w: %s: no column %q (the projection asks for it)", ErrSchema, r.path, name)
			}
		}
	}
	s := r.pf.MetaData().Schema
	for i := 0; i < s.NumColumns(); i++ {
		if slices.Contains(want, s.ColumnRoot(i).Name()) {
			r.leaves = append(r.leaves, i)
		}
	}
	return nil
}

// projection is the top-level columns a reader of T reads: the declared
// ones (each checked against T's fields), else all of T's.
func projection[T any](c *Codec[T], columns []string) ([]string, error) {
	var own []string
	for _, f := range c.fields {
		own = append(own, f.name)
	}
	if columns == nil {
		return own, nil
	}
	for _, name := range columns {
		if !slices.Contains(own, name) {
			var zero T
			return nil, fmt.Errorf("%w: projected column %q is not a field of %T (fields: %v)", ErrSchema, name, zero, own)
		}
	}
	return columns, nil
}

// countingFile is the file under a Parquet reader, counting the bytes read
// from it (what a projection saves is visible in BytesRead).
type countingFile struct {
	*os.File
	n atomic.Int64
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.Add(int64(n))
	return n, err
}

// openParquetFile opens a Parquet file, turning the library's panics on
// corrupt footers into errors that name the file.
func openParquetFile(path string) (src *countingFile, pf *file.Reader, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if st.Size() == 0 {
		return nil, nil, fmt.Errorf("%w: %s: empty file (0 bytes), not Parquet", ErrInput, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	src = &countingFile{File: f}
	defer func() {
		if r := recover(); r != nil {
			f.Close()
			pf, err = nil, fmt.Errorf("%w: %s: corrupt Parquet: %v", ErrInput, path, r)
		}
	}()
	pf, err = file.NewParquetReader(src)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: not a readable Parquet file (size %d): %v", ErrInput, path, st.Size(), err)
	}
	return src, pf, nil
}

// Next returns the next batch of rows (valid until the next call), or io.EOF.
// A batch never spans two row groups.
func (r *ParquetReader[T]) Next() (rows []T, err error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", r.path, err)
		}
		if !r.open {
			if r.gi >= len(r.groups) {
				return nil, io.EOF
			}
			if err := r.openGroup(); err != nil {
				return nil, err
			}
		}
		rows, err := r.nextInGroup()
		if err != nil || rows != nil {
			return rows, err
		}
		r.closeGroup()
	}
}

// openGroup starts reading row group groups[gi].
func (r *ParquetReader[T]) openGroup() (err error) {
	g := r.groups[r.gi]
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: row group %d: corrupt Parquet: %v", ErrInput, r.path, g, p)
		}
	}()
	r.next = r.groupStart(g)
	if len(r.leaves) == 0 { // none of T's columns: the group's rows read as zero values
		r.zeros, r.open = r.pf.MetaData().RowGroup(g).NumRows(), true
		return nil
	}
	r.rr, err = r.fr.GetRecordReader(r.ctx, r.leaves, []int{g})
	if err != nil {
		return fmt.Errorf("%w: %s: row group %d: %v", ErrInput, r.path, g, err)
	}
	r.open = true
	return nil
}

// groupStart is the number of file rows before row group g.
func (r *ParquetReader[T]) groupStart(g int) int64 {
	var n int64
	for k := 0; k < g; k++ {
		n += r.pf.MetaData().RowGroup(k).NumRows()
	}
	return n
}

// closeGroup ends the row group being read.
func (r *ParquetReader[T]) closeGroup() {
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	r.open, r.zeros = false, 0
	r.gi++
}

// nextInGroup decodes the next batch of the current row group; nil rows and
// a nil error mean the group is done.
func (r *ParquetReader[T]) nextInGroup() (rows []T, err error) {
	g := r.groups[r.gi]
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("%w: %s: row group %d: corrupt Parquet data: %v", ErrInput, r.path, g, p)
		}
	}()
	clear(r.bad)
	if r.rr == nil {
		if r.zeros == 0 {
			return nil, nil
		}
		n := min(r.zeros, int64(r.batch))
		r.zeros -= n
		r.buf = append(r.buf[:0], make([]T, n)...)
		r.next += n
		return r.buf, nil
	}
	if !r.rr.Next() {
		if err := r.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: row group %d: %v", ErrInput, r.path, g, err)
		}
		return nil, nil
	}
	base := r.next
	r.buf, err = r.codec.ReadChecked(r.rr.RecordBatch(), r.buf[:0], func(row int, err error) {
		if r.bad == nil {
			r.bad = map[int]*RowError{}
		}
		r.bad[row] = &RowError{Path: r.path, Row: base + int64(row) + 1, Err: err}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: row group %d: %w", r.path, g, err)
	}
	r.next += int64(len(r.buf))
	if !r.lenient {
		for i := range r.buf {
			if e := r.bad[i]; e != nil {
				return nil, e
			}
		}
	}
	if len(r.buf) == 0 {
		return nil, nil
	}
	return r.buf, nil
}

// Offset is the number of file rows before the next row Next returns (the
// rows of row groups not read, for OpenParquetRowGroups).
func (r *ParquetReader[T]) Offset() int64 { return r.next }

// Schema returns the Arrow schema of the columns read (the file's, narrowed
// to the projection).
func (r *ParquetReader[T]) Schema() *arrow.Schema { return r.schema }

// BytesRead is the bytes read from the file so far, footer included.
func (r *ParquetReader[T]) BytesRead() int64 { return r.src.n.Load() }

// Close releases the reader.
func (r *ParquetReader[T]) Close() error {
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	return r.pf.Close()
}
