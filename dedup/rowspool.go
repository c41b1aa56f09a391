package dedup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/jsonscan"
)

// rowSpool keeps the rows of the JSONL files a FileSource scans with a
// spooled JSONLSchema (in memory, or past spoolMemBytes in one temporary
// file; see below), so the passes after the first
// (Fetch for verification, Input.ScanBatches for the output) read them
// from there instead of parsing the JSON again. A row is kept as its
// top-level members: each key decoded, each value as its raw JSON text,
// except the text fields' string values, which are kept decoded (the first
// pass decoded them for signing; the output would decode them again).
//
// Why: `crucible dedup` read every JSONL line three times, and the second
// and third readings validated each line again and unquoted its text again
// (a fifth of the command's CPU on 20k x 2 KB documents). Reading a spooled
// row is a few varints and one copy.
//
// Disk and memory: the spool is about as large as the input's JSONL
// (decompressed). Its first spoolMemBytes stay in memory, so a corpus that
// small never touches the disk (writing and reading the file back was a
// tenth of the command's CPU on 20k x 2 KB documents); a larger one moves
// to a file in the temp directory the moment it outgrows that, and from
// then on the memory is one 1 MB write buffer, and while reading one 1 MB
// read buffer and the largest row. JSONLSchema.Close drops both.
//
// Row format: uvarint body length, then the body: uvarint line, uvarint
// member count, and per member uvarint key length, key, one byte kind
// (kindRaw or kindText), uvarint value length, value.
type rowSpool struct {
	dir      string
	memLimit int64 // bytes kept in memory before the spool moves to a file
	chunk    int64 // size of the memory chunks (spoolChunk; tests make rows span chunks)
	f        *os.File
	mem      [][]byte // the spool while f is nil: chunk-byte chunks, the last one filling
	w        *bufio.Writer
	off      int64               // bytes written
	segs     map[string]spoolSeg // rows of each scanned JSONL file
	cur      spoolSeg            // the file being scanned

	members []spoolMember // the row being parsed
	texts   []spoolText   // its text fields' decoded values
	scratch []byte        // their bytes
}

type spoolSeg struct {
	off, end int64
	rows     int64
}

type spoolMember struct {
	key []byte
	v   []byte
}

type spoolText struct {
	raw        []byte // the member value (identity, not contents, matters)
	start, end int    // the decoded value: scratch[start:end]
	s          string // after endRow: the value, in the spool's memory when it can be
}

// Kinds of spooled member values.
const (
	kindRaw  = 0 // raw JSON text
	kindText = 1 // a text field's string, decoded
)

// spoolMemBytes is how much of a spool stays in memory: 128 MiB holds the
// rows of about 55k documents of 2 KB, and is an eighth of the 1 GiB the
// command peaks at on 1M such documents (where the spool goes to disk).
const spoolMemBytes = 128 << 20

// spoolChunk is the size of the in-memory spool's chunks (fixed, so growing
// the spool never copies what it holds).
const spoolChunk = 4 << 20

func newRowSpool(dir string) *rowSpool {
	return &rowSpool{dir: dir, memLimit: spoolMemBytes, chunk: spoolChunk}
}

// reset starts an empty spool (a failed or stopped scan's rows are dropped).
func (s *rowSpool) reset() error {
	s.close()
	s.off, s.segs = 0, map[string]spoolSeg{}
	return nil
}

// toFile moves the in-memory spool to a new temp file.
func (s *rowSpool) toFile() error {
	f, err := os.CreateTemp(s.dir, "dedup-rows-*.bin")
	if err != nil {
		return fmt.Errorf("create row spool: %v", err)
	}
	for _, c := range s.mem {
		if _, err := f.Write(c); err != nil {
			f.Close()
			os.Remove(f.Name())
			return fmt.Errorf("write row spool %s: %v", f.Name(), err)
		}
	}
	s.f, s.mem, s.w = f, nil, bufio.NewWriterSize(f, int(min(1<<20, s.chunk)))
	return nil
}

// write appends p to the spool: to its memory chunks, or through the write
// buffer to its file.
func (s *rowSpool) write(p []byte) {
	if s.f != nil {
		s.w.Write(p) // bufio keeps the first error for finish and endRow
		return
	}
	for len(p) > 0 {
		if len(s.mem) == 0 || int64(len(s.mem[len(s.mem)-1])) == s.chunk {
			s.mem = append(s.mem, make([]byte, 0, s.chunk))
		}
		c := s.mem[len(s.mem)-1]
		n := min(len(p), int(s.chunk)-len(c))
		s.mem[len(s.mem)-1] = append(c, p[:n]...)
		p = p[n:]
	}
}

func (s *rowSpool) writeUvarint(x uint64) {
	var b [binary.MaxVarintLen64]byte
	s.write(binary.AppendUvarint(b[:0], x))
}

// writeText appends a text value and returns it as a string: in the spool's
// memory when it fits its current chunk (chunks are never written again, so
// the string can share them), else a copy.
func (s *rowSpool) writeText(v []byte) string {
	if s.f == nil && len(v) > 0 && len(s.mem) > 0 {
		c := s.mem[len(s.mem)-1]
		if at := len(c); int64(at+len(v)) <= s.chunk {
			s.mem[len(s.mem)-1] = append(c, v...)
			return unsafe.String(&s.mem[len(s.mem)-1][at], len(v))
		}
	}
	s.write(v)
	return string(v)
}

// name says where the spool is, for errors.
func (s *rowSpool) name() string {
	if s.f != nil {
		return s.f.Name()
	}
	return "(in memory)"
}

func (s *rowSpool) beginFile() { s.cur = spoolSeg{off: s.off, end: s.off} }

func (s *rowSpool) endFile(path string) {
	s.cur.end = s.off
	s.segs[path] = s.cur
}

// member records one top-level member of the row being parsed (raw stays
// valid until endRow: it is the scanner's line).
func (s *rowSpool) member(key []byte, slow bool, v []byte) {
	if slow {
		key = []byte(jsonscan.Key(key, true))
	}
	s.members = append(s.members, spoolMember{key: key, v: v})
}

// text decodes the member value raw, a validated JSON string, as a text
// field's value; endRow writes it and returns it (texts[i].s, i the
// returned index).
func (s *rowSpool) text(raw []byte) int {
	start := len(s.scratch)
	s.scratch = appendUnquoted(s.scratch, raw[1:len(raw)-1])
	s.texts = append(s.texts, spoolText{raw: raw, start: start, end: len(s.scratch)})
	return len(s.texts) - 1
}

// drop forgets the row being parsed.
func (s *rowSpool) drop() {
	s.members, s.texts, s.scratch = s.members[:0], s.texts[:0], s.scratch[:0]
}

// endRow writes the row being parsed, and sets its texts' strings (valid
// after drop, which the caller defers). A spool that would outgrow
// memLimit moves to its file first.
func (s *rowSpool) endRow(line int64) error {
	var ts [16]int // per member: index in s.texts, or -1 for a raw value
	textOf := ts[:0]
	n := uvarintLen(uint64(line)) + uvarintLen(uint64(len(s.members)))
	for _, m := range s.members {
		t, vlen := -1, len(m.v)
		for k, x := range s.texts {
			if len(x.raw) == len(m.v) && &x.raw[0] == &m.v[0] {
				t, vlen = k, x.end-x.start
			}
		}
		textOf = append(textOf, t)
		n += uvarintLen(uint64(len(m.key))) + len(m.key) + 1 + uvarintLen(uint64(vlen)) + vlen
	}
	size := int64(uvarintLen(uint64(n)) + n)
	if s.f == nil && s.off+size > s.memLimit { // in memory, off is the bytes the chunks hold
		if err := s.toFile(); err != nil {
			return fmt.Errorf("%w: dedup: row spool: %v", engine.ErrIO, err)
		}
	}
	s.writeUvarint(uint64(n))
	s.writeUvarint(uint64(line))
	s.writeUvarint(uint64(len(s.members)))
	for i, m := range s.members {
		s.writeUvarint(uint64(len(m.key)))
		s.write(m.key)
		if t := textOf[i]; t >= 0 {
			x := &s.texts[t]
			s.write([]byte{kindText})
			s.writeUvarint(uint64(x.end - x.start))
			x.s = s.writeText(s.scratch[x.start:x.end])
		} else {
			s.write([]byte{kindRaw})
			s.writeUvarint(uint64(len(m.v)))
			s.write(m.v)
		}
	}
	if s.f != nil {
		if _, err := s.w.Write(nil); err != nil { // bufio keeps the first error
			return fmt.Errorf("%w: dedup: write row spool %s: %v", engine.ErrIO, s.f.Name(), err)
		}
	}
	// A text entry endRow did not write (a text field wanted twice, or
	// its member repeated and an earlier value entry left behind) gets its
	// own copy.
	for k := range s.texts {
		if x := &s.texts[k]; x.s == "" && x.end > x.start {
			x.s = string(s.scratch[x.start:x.end])
		}
	}
	s.off += size
	s.cur.rows++
	return nil
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// finish flushes the spool after a complete scan.
func (s *rowSpool) finish() error {
	if s.f == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%w: dedup: write row spool %s: %v", engine.ErrIO, s.f.Name(), err)
	}
	return nil
}

// has reports whether path's rows are in the spool.
func (s *rowSpool) has(path string) bool {
	if s == nil || s.segs == nil {
		return false
	}
	_, ok := s.segs[path]
	return ok
}

// close drops the spool (and removes its file).
func (s *rowSpool) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
	}
	s.f, s.mem, s.w, s.segs = nil, nil, nil, nil
}

// scan reads path's spooled rows in order: fn gets each row's body, or nil
// for a row want (when not nil) says to skip.
func (s *rowSpool) scan(ctx context.Context, path string, want func() bool, fn func(body []byte) error) error {
	seg := s.segs[path]
	var r spoolReader
	if s.f != nil {
		r = &fileSpoolReader{r: bufio.NewReaderSize(io.NewSectionReader(s.f, seg.off, seg.end-seg.off), 1<<20)}
	} else {
		r = &memSpoolReader{mem: s.mem, chunk: s.chunk, off: seg.off, end: seg.end}
	}
	corrupt := func(err error) error {
		return fmt.Errorf("%w: dedup: row spool %s of %s: %v", engine.ErrIO, s.name(), path, err)
	}
	var buf []byte
	for i := int64(0); i < seg.rows; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return corrupt(err)
		}
		if want != nil && !want() {
			if err := r.skip(n); err != nil {
				return corrupt(err)
			}
			if err := fn(nil); err != nil {
				return err
			}
			continue
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, 0, n+n/4)
		}
		body, err := r.next(n, buf)
		if err != nil {
			return corrupt(err)
		}
		if err := fn(body); err != nil {
			return err
		}
	}
	return nil
}

// spoolReader reads a spool segment: next returns the next n bytes (in
// buf, cap(buf) >= n, or in the spool's own memory), skip drops them.
type spoolReader interface {
	io.ByteReader
	next(n uint64, buf []byte) ([]byte, error)
	skip(n uint64) error
}

type fileSpoolReader struct{ r *bufio.Reader }

func (f *fileSpoolReader) ReadByte() (byte, error) { return f.r.ReadByte() }

func (f *fileSpoolReader) next(n uint64, buf []byte) ([]byte, error) {
	buf = buf[:n]
	if _, err := io.ReadFull(f.r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func (f *fileSpoolReader) skip(n uint64) error {
	_, err := f.r.Discard(int(n))
	return err
}

// memSpoolReader reads [off, end) of an in-memory spool; a row inside one
// chunk is returned in place (no copy).
type memSpoolReader struct {
	mem      [][]byte
	chunk    int64
	off, end int64
}

func (m *memSpoolReader) ReadByte() (byte, error) {
	if m.off >= m.end {
		return 0, io.ErrUnexpectedEOF
	}
	b := m.mem[m.off/m.chunk][m.off%m.chunk]
	m.off++
	return b, nil
}

func (m *memSpoolReader) next(n uint64, buf []byte) ([]byte, error) {
	if n > uint64(m.end-m.off) {
		return nil, io.ErrUnexpectedEOF
	}
	c, o := m.off/m.chunk, m.off%m.chunk
	m.off += int64(n)
	if o+int64(n) <= m.chunk {
		return m.mem[c][o : o+int64(n) : o+int64(n)], nil
	}
	buf = buf[:0]
	for rest := int64(n); rest > 0; c, o = c+1, 0 {
		k := min(rest, m.chunk-o)
		buf = append(buf, m.mem[c][o:o+k]...)
		rest -= k
	}
	return buf, nil
}

func (m *memSpoolReader) skip(n uint64) error {
	if n > uint64(m.end-m.off) {
		return io.ErrUnexpectedEOF
	}
	m.off += int64(n)
	return nil
}

var errSpoolRow = errors.New("malformed spooled row")

// spoolRow decodes one spooled row body: its line, and fn for each member
// in the order of the input (text: v is a decoded text field string; else
// raw JSON). v and key point into body.
func spoolRow(body []byte, fn func(key []byte, text bool, v []byte)) (int64, error) {
	next := func() (uint64, bool) {
		x, k := binary.Uvarint(body)
		if k <= 0 {
			return 0, false
		}
		body = body[k:]
		return x, true
	}
	take := func() ([]byte, bool) {
		n, ok := next()
		if !ok || n > uint64(len(body)) {
			return nil, false
		}
		v := body[:n:n]
		body = body[n:]
		return v, true
	}
	line, ok1 := next()
	count, ok2 := next()
	if !ok1 || !ok2 {
		return 0, errSpoolRow
	}
	for range count {
		key, ok := take()
		if !ok || len(body) == 0 {
			return 0, errSpoolRow
		}
		kind := body[0]
		body = body[1:]
		v, ok := take()
		if !ok || kind > kindText || (kind == kindRaw && len(v) == 0) {
			return 0, errSpoolRow
		}
		fn(key, kind == kindText, v)
	}
	if len(body) != 0 {
		return 0, errSpoolRow
	}
	return int64(line), nil
}
