package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
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
	// WrapFile, when set, wraps the writer of every shard file. Tests use it
	// to make writes fail (a disk that fills after N bytes) deterministically.
	WrapFile func(io.Writer) io.Writer
	// Compression is the Parquet page codec: CodecZstd (also ""), CodecSnappy
	// or CodecNone. CompressionLevel is zstd's level (0: the codec's default,
	// which is level 3); the zstd encoder has four speeds, so levels 1-2,
	// 3-5, 6-9 and 10+ each write the same bytes.
	Compression      string
	CompressionLevel int
}

// Output codecs (WriterOptions.Compression).
const (
	CodecZstd   = "zstd"
	CodecSnappy = "snappy"
	CodecNone   = "none"
)

// Validate checks the compression settings; an error names the bad value.
func (o WriterOptions) Validate() error {
	switch o.Compression {
	case "", CodecZstd:
		if o.CompressionLevel < 0 || o.CompressionLevel > 22 {
			return fmt.Errorf("%w: compression level %d (zstd takes 1-22, 0 for its default)", ErrConfig, o.CompressionLevel)
		}
	case CodecSnappy, CodecNone:
		if o.CompressionLevel != 0 {
			return fmt.Errorf("%w: compression level %d given for %s (only zstd has levels)", ErrConfig, o.CompressionLevel, o.Compression)
		}
	default:
		return fmt.Errorf("%w: compression %q (want zstd, snappy or none)", ErrConfig, o.Compression)
	}
	return nil
}

// parquetCompression is the writer properties of o's codec and level.
func (o WriterOptions) parquetCompression() []parquet.WriterProperty {
	switch o.Compression {
	case CodecSnappy:
		return []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy)}
	case CodecNone:
		return []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Uncompressed)}
	}
	props := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd)}
	if o.CompressionLevel > 0 {
		props = append(props, parquet.WithCompressionLevel(o.CompressionLevel))
	}
	return props
}

// DefaultWriterOptions: 64 MiB row groups, 512 MiB shards.
func DefaultWriterOptions() WriterOptions {
	return WriterOptions{RowGroupBytes: 64 << 20, ShardBytes: 512 << 20}
}

// WithDefaultSizes fills in the default row group and shard sizes where o
// sets none, keeping everything else it sets (the codec, a test's WrapFile
// or allocator).
func (o WriterOptions) WithDefaultSizes() WriterOptions {
	d := DefaultWriterOptions()
	if o.RowGroupBytes <= 0 {
		o.RowGroupBytes = d.RowGroupBytes
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = d.ShardBytes
	}
	return o
}

// ShardInfo describes one committed shard file.
type ShardInfo struct {
	Path   string `json:"path"` // relative to the stage directory
	Kind   string `json:"kind"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// ContentSHA256 hashes the rows without their timings, for row types
	// that carry some (TimedRow); empty when the file bytes are the content.
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// Content is the shard's deterministic content hash: ContentSHA256, or the
// file's sha256 for row types without timings.
func (s ShardInfo) Content() string {
	if s.ContentSHA256 != "" {
		return s.ContentSHA256
	}
	return s.SHA256
}

// TimedRow is implemented by row types holding wall-clock measurements
// (verdict timings, latencies). WithoutTimings returns the row with them
// zeroed or dropped; the shard's content hash covers that copy, so reruns
// that differ only in timings leave downstream stages current.
type TimedRow[T any] interface {
	WithoutTimings() T
}

// ShardWriter writes rows of T as a sequence of Parquet shard files named
// <prefix>-NNNNN.parquet in dir. Each file is written to a temp name, its
// footer re-read, fsynced and renamed, so a crash never leaves a partial file
// under a final name. Rows go from Go values straight into Arrow builders;
// a row group is written to the file (encoded, compressed) on a goroutine
// of its own while the next is built, so a row writer holds up to two row
// groups of RowGroupBytes. A write error surfaces from the Write that
// fills the next row group, or from Close.
type ShardWriter[T any] struct {
	dir, prefix, kind string
	opts              WriterOptions
	codec             *Codec[T] // nil for a record writer (NewRecordShardWriter)
	schema            *arrow.Schema
	mem               memory.Allocator
	recs              []arrow.RecordBatch // record writer: batches of the open row group

	bld      *array.RecordBuilder
	buffered int64
	pending  int64

	f         *os.File
	fw        *pqarrow.FileWriter
	cw        *countingWriter
	timed     bool           // T implements TimedRow[T]
	keepEmpty bool           // commit an empty shard when no row was written
	content   hash.Hash      // the current file's rows without timings (timed only)
	writing   *rowGroupWrite // the row group being written, if any
	rows      int64
	seq       int
	shards    []ShardInfo
	closed    bool
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
	opts, mem, err := prepareWriter(dir, opts)
	if err != nil {
		return nil, err
	}
	var zero T
	_, timed := any(zero).(TimedRow[T])
	return &ShardWriter[T]{dir: dir, prefix: prefix, kind: kind, opts: opts, codec: c, schema: c.Schema(), mem: mem, timed: timed}, nil
}

// prepareWriter fills opts' defaults, picks the allocator and creates dir.
func prepareWriter(dir string, opts WriterOptions) (WriterOptions, memory.Allocator, error) {
	opts = opts.WithDefaultSizes()
	if err := opts.Validate(); err != nil {
		return opts, nil, err
	}
	mem := opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return opts, nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	return opts, mem, nil
}

// NewRecordShardWriter is a ShardWriter for rows whose columns are known only
// at run time (`crucible dedup` passes its input's columns through): it takes
// Arrow record batches of schema through WriteRecord, with the same row
// groups, shards and commit protocol (temp file, footer re-read, fsync,
// rename). Write is refused on it.
func NewRecordShardWriter(dir, prefix, kind string, schema *arrow.Schema, opts WriterOptions) (*ShardWriter[arrow.RecordBatch], error) {
	opts, mem, err := prepareWriter(dir, opts)
	if err != nil {
		return nil, err
	}
	return &ShardWriter[arrow.RecordBatch]{dir: dir, prefix: prefix, kind: kind, opts: opts, schema: schema, mem: mem}, nil
}

// WriteRecord buffers a record batch of the writer's schema (a record
// writer only). The writer keeps a reference to rec's columns until its
// rows are written, so the caller may Release rec at once. Row groups are
// cut once the buffered rows reach RowGroupBytes (Arrow buffer sizes, a
// batch's mean row size for a part of it), so the writer holds about one
// row group plus the batch it was last given.
func (w *ShardWriter[T]) WriteRecord(rec arrow.RecordBatch) error {
	if w.closed {
		return fmt.Errorf("%w: write on closed shard writer", ErrIO)
	}
	if w.codec != nil {
		return fmt.Errorf("%w: WriteRecord on a %T row writer", ErrSchema, *new(T))
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%w: record schema %s does not match the writer's %s", ErrSchema, rec.Schema(), w.schema)
	}
	rows := rec.NumRows()
	if rows == 0 {
		return nil
	}
	var size int64
	for _, c := range rec.Columns() {
		size += arrayBytes(c.Data())
	}
	// A batch larger than the room left in the row group is cut in slices
	// (at its mean row size), so row groups stay near RowGroupBytes.
	per := max(1, size/rows)
	for off := int64(0); off < rows; {
		k := min(rows-off, max(1, (w.opts.RowGroupBytes-w.buffered+per-1)/per))
		w.recs = append(w.recs, rec.NewSlice(off, off+k))
		w.pending += k
		w.buffered += k * per
		off += k
		if w.buffered >= w.opts.RowGroupBytes {
			if err := w.flushRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrayBytes is the size of the buffers an array refers to.
func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}

func (w *ShardWriter[T]) releaseRecords() {
	for _, r := range w.recs {
		r.Release()
	}
	w.recs = nil
}

// hashContent adds a row, timings removed, to the current file's content
// hash. JSON of a struct is canonical (fields in order, map keys sorted).
func (w *ShardWriter[T]) hashContent(row *T) error {
	if w.content == nil {
		w.content = sha256.New()
	}
	data, err := json.Marshal(any(*row).(TimedRow[T]).WithoutTimings())
	if err != nil {
		return fmt.Errorf("%w: content hash of a %T row: %v", ErrSchema, *row, err)
	}
	w.content.Write(append(data, '\n'))
	return nil
}

// Write buffers rows, cutting row groups and shards as sizes are reached.
func (w *ShardWriter[T]) Write(rows ...T) error {
	if w.closed {
		return fmt.Errorf("%w: write on closed shard writer", ErrIO)
	}
	if w.codec == nil {
		return fmt.Errorf("%w: Write on a record shard writer (use WriteRecord)", ErrSchema)
	}
	if w.bld == nil {
		w.bld = array.NewRecordBuilder(w.mem, w.codec.Schema())
	}
	for i := range rows {
		if w.timed {
			if err := w.hashContent(&rows[i]); err != nil {
				return err
			}
		}
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

// flushRowGroup writes the buffered rows as one row group. A row writer's
// row group is encoded and compressed on a goroutine of its own while the
// caller goes on building the next one (see rowGroupWrite); a record
// writer's is written before flushRowGroup returns.
func (w *ShardWriter[T]) flushRowGroup() error {
	if w.pending == 0 {
		return nil
	}
	if err := w.waitRowGroup(); err != nil {
		return err
	}
	if w.fw == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	if w.codec != nil {
		sizes := builderDataLens(w.bld)
		w.writing = startRowGroup(w.fw, w.bld.NewRecordBatch(), w.f.Name(), w.pending)
		reserveLike(w.bld, sizes, w.pending)
		w.pending, w.buffered = 0, 0
		return nil
	}
	tbl := array.NewTableFromRecords(w.schema, w.recs)
	err := w.fw.WriteTable(tbl, tbl.NumRows())
	tbl.Release()
	w.releaseRecords()
	if err != nil {
		return fmt.Errorf("%w: write row group to %s: %w", ErrIO, w.f.Name(), err)
	}
	w.rows += w.pending
	w.pending, w.buffered = 0, 0
	return w.rowGroupWritten()
}

// rowGroupWrite is a row group being written by its own goroutine: the
// Parquet encoding and compression of a row group take about as long as
// building it from rows, so a row writer holds at most two row groups
// (the one written, the one being built) and overlaps the two. Only that
// goroutine touches the file writer until done is received from.
type rowGroupWrite struct {
	rows int64
	done chan error
}

func startRowGroup(fw *pqarrow.FileWriter, rec arrow.RecordBatch, name string, rows int64) *rowGroupWrite {
	g := &rowGroupWrite{rows: rows, done: make(chan error, 1)}
	go func() {
		defer rec.Release()
		if err := fw.Write(rec); err != nil {
			g.done <- fmt.Errorf("%w: write row group to %s: %w", ErrIO, name, err)
			return
		}
		g.done <- nil
	}()
	return g
}

// waitRowGroup waits for the row group being written, if any, and then
// does what follows a written row group (the crash point, on the caller's
// goroutine so that the points' order is the same on every run, and the
// shard cut).
func (w *ShardWriter[T]) waitRowGroup() error {
	g := w.writing
	if g == nil {
		return nil
	}
	w.writing = nil
	if err := <-g.done; err != nil {
		return err
	}
	w.rows += g.rows
	return w.rowGroupWritten()
}

// rowGroupWritten passes the crash point and commits the file once it has
// reached ShardBytes.
func (w *ShardWriter[T]) rowGroupWritten() error {
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
	var out io.Writer = f
	if w.opts.WrapFile != nil {
		out = w.opts.WrapFile(f)
	}
	w.cw = &countingWriter{w: out, h: sha256.New()}
	props := parquet.NewWriterProperties(append(w.opts.parquetCompression(),
		parquet.WithAllocator(w.mem),
		parquet.WithMaxRowGroupLength(1<<40),
		parquet.WithCreatedBy("crucible"),
		// No dictionary encoding: a column chunk whose dictionary outgrows
		// its page limit falls back to PLAIN, and arrow-go then writes the
		// chunk's page-encoding stats by iterating a Go map, so the same
		// rows gave footers that differ run to run (a resumed or repeated
		// run must write the same bytes). zstd/snappy pages compress the
		// repeats a dictionary would have saved: measured on dedup's 20k ×
		// 2 KB output, 23.38 MB without dictionaries against 23.51 MB with.
		parquet.WithDictionaryDefault(false),
	)...)
	aprops := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(w.mem))
	fw, err := pqarrow.NewFileWriter(w.schema, w.cw, props, aprops)
	if err != nil {
		w.discardFile()
		return fmt.Errorf("%w: parquet writer: %v", ErrIO, err)
	}
	w.fw = fw
	w.rows = 0
	return nil
}

// finishFile writes the footer, verifies it by re-reading, and commits.
func (w *ShardWriter[T]) finishFile() error {
	tmp := w.f.Name()
	err := w.fw.Close()
	w.fw = nil
	if err != nil {
		w.discardFile()
		return fmt.Errorf("%w: close parquet %s: %w", ErrIO, tmp, err)
	}
	if err := verifyFooter(tmp, w.rows); err != nil {
		w.discardFile()
		return err
	}
	final := w.finalPath()
	err = commitFile(w.f, final) // removes the temp file itself on failure
	w.f = nil
	if err != nil {
		w.discardFile()
		return err
	}
	info := ShardInfo{
		Path: filepath.Base(final), Kind: w.kind, Rows: w.rows, Bytes: w.cw.n,
		SHA256: hex.EncodeToString(w.cw.h.Sum(nil)),
	}
	if w.timed {
		if w.content == nil {
			w.content = sha256.New() // an empty shard
		}
		info.ContentSHA256 = hex.EncodeToString(w.content.Sum(nil))
	}
	w.shards = append(w.shards, info)
	w.f, w.fw, w.cw, w.content = nil, nil, nil, nil
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

// KeepEmpty makes a writer that never receives a row commit one empty shard
// (schema, no rows) instead of none, so that an empty input still gives a
// file any Parquet reader opens (and globs like items-*.parquet match).
func (w *ShardWriter[T]) KeepEmpty() { w.keepEmpty = true }

// Close flushes, commits the last shard and returns every committed shard.
// A writer that never received a row commits no file unless KeepEmpty was
// called. Close is idempotent.
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
		w.releaseRecords()
	}()
	err := w.flushRowGroup()
	if err == nil {
		err = w.waitRowGroup()
	}
	if err != nil {
		w.discardFile()
		return nil, err
	}
	if w.fw == nil && len(w.shards) == 0 && w.keepEmpty {
		if err := w.openFile(); err != nil {
			return nil, err
		}
	}
	if w.fw != nil {
		if err := w.finishFile(); err != nil {
			w.discardFile()
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
	w.releaseRecords()
	w.discardFile()
}

// discardFile closes and removes the uncommitted temp file, if any. Every
// error path goes through it, so a failed write (a full disk above all)
// leaves no temp file behind to keep the disk full.
func (w *ShardWriter[T]) discardFile() {
	if g := w.writing; g != nil {
		w.writing = nil
		<-g.done // its error is the one being handled, or moot
	}
	if w.fw != nil {
		_ = w.fw.Close()
	}
	if w.f != nil {
		_ = w.f.Close()
		_ = os.Remove(w.f.Name())
	}
	w.f, w.fw, w.cw, w.content = nil, nil, nil, nil
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

// textBuilder is a string or binary column's builder (StringBuilder and
// BinaryBuilder both are one).
type textBuilder interface {
	DataLen() int
	ReserveData(int)
}

// builderDataLens are the bytes of string and binary data each field of b
// holds, taken before its row group is cut.
func builderDataLens(b *array.RecordBuilder) []int {
	out := make([]int, len(b.Fields()))
	for i, f := range b.Fields() {
		if tb, ok := f.(textBuilder); ok {
			out[i] = tb.DataLen()
		}
	}
	return out
}

// reserveLike sizes the emptied builders of b for a row group like the one
// just cut (rows rows, sizes bytes of text per field): without it every
// row group grows its text buffers from nothing by doubling, and the
// copies and zeroing of each reallocation were a tenth of ingest's CPU.
func reserveLike(b *array.RecordBuilder, sizes []int, rows int64) {
	for i, f := range b.Fields() {
		f.Reserve(int(rows))
		if tb, ok := f.(textBuilder); ok && sizes[i] > 0 {
			tb.ReserveData(sizes[i])
		}
	}
}
