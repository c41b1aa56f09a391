package dedup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/jsonscan"
)

// rowSpool keeps the rows of the JSONL files a FileSource scans with a
// spooled JSONLSchema in one temporary file, so the passes after the first
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
// Disk and memory: the file is about as large as the input's JSONL
// (decompressed), in the temp directory, removed by JSONLSchema.Close;
// memory is one 1 MB write buffer, and while reading one 1 MB read buffer
// and the largest row.
//
// Row format: uvarint body length, then the body: uvarint line, uvarint
// member count, and per member uvarint key length, key, one byte kind
// (kindRaw or kindText), uvarint value length, value.
type rowSpool struct {
	dir  string
	f    *os.File
	w    *bufio.Writer
	off  int64               // bytes written
	segs map[string]spoolSeg // rows of each scanned JSONL file
	cur  spoolSeg            // the file being scanned

	members []spoolMember // the row being parsed
	texts   []spoolText   // its text fields' decoded values
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
	raw  []byte // the member value (identity, not contents, matters)
	text string
}

// Kinds of spooled member values.
const (
	kindRaw  = 0 // raw JSON text
	kindText = 1 // a text field's string, decoded
)

func newRowSpool(dir string) *rowSpool { return &rowSpool{dir: dir} }

// reset starts an empty spool (a failed or stopped scan's rows are dropped).
func (s *rowSpool) reset() error {
	s.close()
	f, err := os.CreateTemp(s.dir, "dedup-rows-*.bin")
	if err != nil {
		return fmt.Errorf("%w: dedup: create row spool: %v", engine.ErrIO, err)
	}
	s.f, s.w, s.off, s.segs = f, bufio.NewWriterSize(f, 1<<20), 0, map[string]spoolSeg{}
	return nil
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

// text records that the member value raw decodes to the text field value t.
func (s *rowSpool) text(raw []byte, t string) {
	s.texts = append(s.texts, spoolText{raw: raw, text: t})
}

// drop forgets the row being parsed.
func (s *rowSpool) drop() { s.members, s.texts = s.members[:0], s.texts[:0] }

// endRow writes the row being parsed.
func (s *rowSpool) endRow(line int64) error {
	defer s.drop()
	var ts [16]int // per member: index in s.texts, or -1 for a raw value
	textOf := ts[:0]
	n := uvarintLen(uint64(line)) + uvarintLen(uint64(len(s.members)))
	for _, m := range s.members {
		t, vlen := -1, len(m.v)
		for k, x := range s.texts {
			if len(x.raw) == len(m.v) && &x.raw[0] == &m.v[0] {
				t, vlen = k, len(x.text)
			}
		}
		textOf = append(textOf, t)
		n += uvarintLen(uint64(len(m.key))) + len(m.key) + 1 + uvarintLen(uint64(vlen)) + vlen
	}
	var b [binary.MaxVarintLen64]byte
	w := s.w
	w.Write(binary.AppendUvarint(b[:0], uint64(n)))
	w.Write(binary.AppendUvarint(b[:0], uint64(line)))
	w.Write(binary.AppendUvarint(b[:0], uint64(len(s.members))))
	for i, m := range s.members {
		w.Write(binary.AppendUvarint(b[:0], uint64(len(m.key))))
		w.Write(m.key)
		if t := textOf[i]; t >= 0 {
			w.WriteByte(kindText)
			w.Write(binary.AppendUvarint(b[:0], uint64(len(s.texts[t].text))))
			w.WriteString(s.texts[t].text)
		} else {
			w.WriteByte(kindRaw)
			w.Write(binary.AppendUvarint(b[:0], uint64(len(m.v))))
			w.Write(m.v)
		}
	}
	if _, err := w.Write(nil); err != nil { // bufio keeps the first error
		return fmt.Errorf("%w: dedup: write row spool %s: %v", engine.ErrIO, s.f.Name(), err)
	}
	s.off += int64(uvarintLen(uint64(n)) + n)
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

// close removes the spool file.
func (s *rowSpool) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f, s.segs = nil, nil
	}
}

// scan reads path's spooled rows in order: fn gets each row's body, or nil
// for a row want (when not nil) says to skip.
func (s *rowSpool) scan(ctx context.Context, path string, want func() bool, fn func(body []byte) error) error {
	seg := s.segs[path]
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, seg.off, seg.end-seg.off), 1<<20)
	corrupt := func(err error) error {
		return fmt.Errorf("%w: dedup: row spool %s of %s: %v", engine.ErrIO, s.f.Name(), path, err)
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
			if _, err := r.Discard(int(n)); err != nil {
				return corrupt(err)
			}
			if err := fn(nil); err != nil {
				return err
			}
			continue
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n, n+n/4)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return corrupt(err)
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
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
