package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// WriterOptions tune shard output.
type WriterOptions struct {
	// RowGroupBytes cuts a row group when this many bytes are buffered.
	RowGroupBytes int64
	// ShardBytes starts a new shard file once a file reaches this size.
	ShardBytes int64
	// Allocator for Arrow buffers; nil means the Go allocator. Tests pass a
	// checked allocator to prove every buffer is released.
	Allocator memory.Allocator
}

// DefaultWriterOptions: 64 MiB row groups, 512 MiB shards.
func DefaultWriterOptions() WriterOptions {
	return WriterOptions{RowGroupBytes: 64 << 20, ShardBytes: 512 << 20}
}

// ShardInfo describes one committed shard file.
type ShardInfo struct {
	Path   string `json:"path"` // relative to the stage directory
	Kind   string `json:"kind"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ShardWriter writes rows of T as a sequence of Parquet shard files named
// <prefix>-NNNNN.parquet in dir. Each file is written to a temp name, its
// footer re-read, fsynced and renamed, so a crash never leaves a partial file
// under a final name. Rows go from Go values straight into Arrow builders.
type ShardWriter[T any] struct {
	dir, prefix, kind string
	opts              WriterOptions
	codec             *Codec[T]
	mem               memory.Allocator

	bld      *array.RecordBuilder
	buffered int64
	pending  int64

	f      *os.File
	fw     *pqarrow.FileWriter
	cw     *countingWriter
	rows   int64
	seq    int
	shards []ShardInfo
	closed bool
}

type countingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// NewShardWriter creates a writer; kind labels the shards in manifests.
func NewShardWriter[T any](dir, prefix, kind string, opts WriterOptions) (*ShardWriter[T], error) {
	c, err := NewCodec[T]()
	if err != nil {
		return nil, err
	}
	if opts.RowGroupBytes <= 0 {
		opts.RowGroupBytes = DefaultWriterOptions().RowGroupBytes
	}
	if opts.ShardBytes <= 0 {
		opts.ShardBytes = DefaultWriterOptions().ShardBytes
	}
	mem := opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	return &ShardWriter[T]{dir: dir, prefix: prefix, kind: kind, opts: opts, codec: c, mem: mem}, nil
}

// Write buffers rows, cutting row groups and shards as sizes are reached.
func (w *ShardWriter[T]) Write(rows ...T) error {
	if w.closed {
		return fmt.Errorf("%w: write on closed shard writer", ErrIO)
	}
	if w.bld == nil {
		w.bld = array.NewRecordBuilder(w.mem, w.codec.Schema())
	}
	for i := range rows {
		w.buffered += int64(w.codec.Append(w.bld, &rows[i]))
		w.pending++
		if w.buffered >= w.opts.RowGroupBytes {
			if err := w.flushRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *ShardWriter[T]) flushRowGroup() error {
	if w.pending == 0 {
		return nil
	}
	if w.fw == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	rec := w.bld.NewRecordBatch()
	defer rec.Release()
	if err := w.fw.Write(rec); err != nil {
		return fmt.Errorf("%w: write row group to %s: %v", ErrIO, w.f.Name(), err)
	}
	w.rows += w.pending
	w.pending, w.buffered = 0, 0
	crashPoint(CrashRowGroupWritten, w.f.Name())
	if w.cw.n >= w.opts.ShardBytes {
		return w.finishFile()
	}
	return nil
}

func (w *ShardWriter[T]) finalPath() string {
	return filepath.Join(w.dir, fmt.Sprintf("%s-%05d.parquet", w.prefix, w.seq))
}

func (w *ShardWriter[T]) openFile() error {
	f, err := os.OpenFile(tempName(w.finalPath()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	w.f = f
	w.cw = &countingWriter{w: f, h: sha256.New()}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(w.mem),
		parquet.WithMaxRowGroupLength(1<<40),
		parquet.WithCreatedBy("crucible"),
	)
	aprops := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(w.mem))
	fw, err := pqarrow.NewFileWriter(w.codec.Schema(), w.cw, props, aprops)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("%w: parquet writer: %v", ErrIO, err)
	}
	w.fw = fw
	w.rows = 0
	return nil
}

// finishFile writes the footer, verifies it by re-reading, and commits.
func (w *ShardWriter[T]) finishFile() error {
	if err := w.fw.Close(); err != nil {
		w.f.Close()
		os.Remove(w.f.Name())
		return fmt.Errorf("%w: close parquet %s: %v", ErrIO, w.f.Name(), err)
	}
	tmp := w.f.Name()
	if err := verifyFooter(tmp, w.rows); err != nil {
		w.f.Close()
		os.Remove(tmp)
		return err
	}
	final := w.finalPath()
	if err := commitFile(w.f, final); err != nil {
		return err
	}
	w.shards = append(w.shards, ShardInfo{
		Path: filepath.Base(final), Kind: w.kind, Rows: w.rows, Bytes: w.cw.n,
		SHA256: hex.EncodeToString(w.cw.h.Sum(nil)),
	})
	w.f, w.fw, w.cw = nil, nil, nil
	w.seq++
	return nil
}

func verifyFooter(path string, rows int64) error {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("%w: re-read footer of %s: %v", ErrIO, path, err)
	}
	defer r.Close()
	if r.NumRows() != rows {
		return fmt.Errorf("%w: %s footer says %d rows, wrote %d", ErrIO, path, r.NumRows(), rows)
	}
	return nil
}

// Close flushes, commits the last shard and returns every committed shard.
// A writer that never received a row commits no file. Close is idempotent.
func (w *ShardWriter[T]) Close() ([]ShardInfo, error) {
	if w.closed {
		return w.shards, nil
	}
	w.closed = true
	defer func() {
		if w.bld != nil {
			w.bld.Release()
			w.bld = nil
		}
	}()
	if err := w.flushRowGroup(); err != nil {
		return nil, err
	}
	if w.fw != nil {
		if err := w.finishFile(); err != nil {
			return nil, err
		}
	}
	return w.shards, nil
}

// Abort discards buffered rows and any uncommitted file.
func (w *ShardWriter[T]) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.bld != nil {
		w.bld.Release()
		w.bld = nil
	}
	if w.fw != nil {
		w.fw.Close()
	}
	if w.f != nil {
		w.f.Close()
		os.Remove(w.f.Name())
	}
}

// Shards returns the shards committed so far.
func (w *ShardWriter[T]) Shards() []ShardInfo { return w.shards }

// WriteAll writes rows to a fresh set of shards and closes the writer.
func WriteAll[T any](ctx context.Context, dir, prefix, kind string, opts WriterOptions, rows []T) ([]ShardInfo, error) {
	w, err := NewShardWriter[T](dir, prefix, kind, opts)
	if err != nil {
		return nil, err
	}
	const chunk = 4096
	for i := 0; i < len(rows); i += chunk {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return nil, err
		}
		if err := w.Write(rows[i:min(i+chunk, len(rows))]...); err != nil {
			w.Abort()
			return nil, err
		}
	}
	return w.Close()
}
