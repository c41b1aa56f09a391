package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// IsParquet reports whether path names a Parquet file (by extension).
func IsParquet(path string) bool { return strings.EqualFold(filepath.Ext(path), ".parquet") }

// ParquetReader streams rows of T from one Parquet file, a record batch at a
// time. Read follows io.Reader's convention: it returns io.EOF after the last
// row.
type ParquetReader[T any] struct {
	path  string
	codec *Codec[T]
	pf    *file.Reader
	rr    pqarrow.RecordReader
	buf   []T

	lenient bool
	next    int64             // rows returned before the current batch
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
	c, err := NewCodec[T]()
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	pf, err := openParquetFile(path)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024, Parallel: false}, mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, path, err)
	}
	var first int64 // rows before the first row group read: row numbers stay the file's own
	for _, g := range rowGroups {
		if g < 0 || g >= pf.NumRowGroups() {
			pf.Close()
			return nil, fmt.Errorf("%w: %s: row group %d of %d", ErrInput, path, g, pf.NumRowGroups())
		}
	}
	if len(rowGroups) > 0 {
		for g := 0; g < rowGroups[0]; g++ {
			first += pf.MetaData().RowGroup(g).NumRows()
		}
	}
	rr, err := fr.GetRecordReader(ctx, nil, rowGroups)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, path, err)
	}
	return &ParquetReader[T]{path: path, codec: c, pf: pf, rr: rr, next: first}, nil
}

// openParquetFile opens a Parquet file, turning the library's panics on
// corrupt footers into errors that name the file.
func openParquetFile(path string) (pf *file.Reader, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: %s: empty file (0 bytes), not Parquet", ErrInput, path)
	}
	defer func() {
		if r := recover(); r != nil {
			pf, err = nil, fmt.Errorf("%w: %s: corrupt Parquet: %v", ErrInput, path, r)
		}
	}()
	pf, err = file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a readable Parquet file (size %d): %v", ErrInput, path, st.Size(), err)
	}
	return pf, nil
}

// Next returns the next batch of rows (valid until the next call), or io.EOF.
func (r *ParquetReader[T]) Next() (rows []T, err error) {
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("%w: %s: corrupt Parquet data: %v", ErrInput, r.path, p)
		}
	}()
	if !r.rr.Next() {
		if err := r.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: %v", ErrInput, r.path, err)
		}
		return nil, io.EOF
	}
	rec := r.rr.RecordBatch()
	clear(r.bad)
	base := r.next
	r.buf, err = r.codec.ReadChecked(rec, r.buf[:0], func(row int, err error) {
		if r.bad == nil {
			r.bad = map[int]*RowError{}
		}
		r.bad[row] = &RowError{Path: r.path, Row: base + int64(row) + 1, Err: err}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	r.next += int64(len(r.buf))
	if !r.lenient {
		for i := range r.buf {
			if e := r.bad[i]; e != nil {
				return nil, e
			}
		}
	}
	return r.buf, nil
}

// Offset is the number of file rows before the next row Next returns (the
// rows of row groups not read, for OpenParquetRowGroups).
func (r *ParquetReader[T]) Offset() int64 { return r.next }

// Schema returns the file's Arrow schema.
func (r *ParquetReader[T]) Schema() *arrow.Schema { return r.rr.Schema() }

// Close releases the reader.
func (r *ParquetReader[T]) Close() error {
	r.rr.Release()
	return r.pf.Close()
}

// RowError is a Parquet row with a value that does not convert to the row
// type's field (Err names the field). It is an ErrSchema.
type RowError struct {
	Path string
	Row  int64 // 1-based
	Err  error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%v: %s row %d: %v", ErrSchema, e.Path, e.Row, e.Err)
}
func (e *RowError) Unwrap() error { return ErrSchema }

// JSONLError describes one bad line of a JSONL file.
type JSONLError struct {
	Path string
	Line int64
	Err  error
}

func (e *JSONLError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *JSONLError) Unwrap() error { return ErrInput }

// MaxJSONLLine bounds one JSONL line; longer lines are reported, not read.
const MaxJSONLLine = 256 << 20

// ScanJSONL calls fn for every non-blank line of a JSONL file with the line
// number and raw bytes (valid only during the call). A line with invalid
// UTF-8 or over MaxJSONLLine is passed to bad instead, and scanning goes on.
//
// The file may be gzip- or zstd-compressed (see OpenInput); a file that is
// not JSONL text at all is one ErrInput, not a rejection per line.
func ScanJSONL(path string, fn func(line int64, raw []byte) error, bad func(*JSONLError)) error {
	in, format, err := OpenInput(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if format.Kind == FormatParquet {
		return fmt.Errorf("%w: %s: Parquet data (magic PAR1) where JSONL was expected; name it .parquet", ErrInput, path)
	}
	br := bufio.NewReaderSize(in, 1<<20)
	var line int64
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > MaxJSONLLine {
				line++
				bad(&JSONLError{Path: path, Line: line, Err: fmt.Errorf("line longer than %d bytes", MaxJSONLLine)})
				buf = buf[:0]
				if err := skipLine(br); err != nil {
					return nil
				}
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %s: read %s at line %d: %v", ErrInput, path, format, line+1, err)
		}
		if len(buf) > 0 {
			line++
			if ferr := emitLine(path, line, buf, fn, bad); ferr != nil {
				return ferr
			}
		}
		buf = buf[:0]
		if err != nil {
			return nil
		}
	}
}

// emitLine hands one read line to fn, or to bad when it is not valid UTF-8;
// blank lines count as lines but hold no row.
func emitLine(path string, line int64, buf []byte, fn func(line int64, raw []byte) error, bad func(*JSONLError)) error {
	raw := bytes.TrimSpace(buf)
	switch {
	case len(raw) == 0:
		return nil
	case !utf8.Valid(raw):
		bad(&JSONLError{Path: path, Line: line, Err: fmt.Errorf("invalid UTF-8 at byte %d", invalidUTF8At(raw))})
		return nil
	}
	return fn(line, raw)
}

func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return err
	}
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// ReadRows reads every row of a Parquet or JSONL file into T. In JSONL, a
// line that does not decode is an error naming the file and line.
func ReadRows[T any](path string) ([]T, error) {
	if IsParquet(path) {
		r, err := OpenParquet[T](context.Background(), path, nil)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var out []T
		for {
			rows, err := r.Next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			out = append(out, rows...)
		}
	}
	var out []T
	var firstBad *JSONLError
	err := ScanJSONL(path, func(line int64, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return &JSONLError{Path: path, Line: line, Err: err}
		}
		out = append(out, v)
		return nil
	}, func(e *JSONLError) {
		if firstBad == nil {
			firstBad = e
		}
	})
	if err != nil {
		return nil, err
	}
	if firstBad != nil {
		return nil, firstBad
	}
	return out, nil
}

// ReadAll reads rows from several files in order.
func ReadAll[T any](paths ...string) ([]T, error) {
	var out []T
	for _, p := range paths {
		rows, err := ReadRows[T](p)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// ScanRows streams every row of the Parquet files in paths, in order, to fn
// (the row is valid only during the call). It stops at the first error from
// a file or from fn.
func ScanRows[T any](ctx context.Context, paths []string, fn func(*T) error) error {
	for _, p := range paths {
		if err := scanFile(ctx, p, fn); err != nil {
			return err
		}
	}
	return nil
}

func scanFile[T any](ctx context.Context, path string, fn func(*T) error) error {
	r, err := OpenParquet[T](ctx, path, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rows, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
