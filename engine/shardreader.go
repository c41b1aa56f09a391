package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// IsParquet reports whether path names a Parquet file (by extension).
func IsParquet(path string) bool { return strings.EqualFold(filepath.Ext(path), ".parquet") }

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
		return OpenBatches[T](context.Background(), []string{path}, BatchOptions{}).Collect()
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
	b := OpenBatches[T](ctx, paths, BatchOptions{})
	defer b.Close()
	return b.Each(func(rows []T) error {
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
}
