package dedup

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// bandRec is one (band key, band, document) record of the disk-backed LSH
// index. band exactBand marks an exact-dedup record keyed by the normalised
// text hash.
type bandRec struct {
	key uint64
	bd  uint64 // band<<32 | doc
}

const exactBand = 0xFFFF

func (r bandRec) band() uint32 { return uint32(r.bd >> 32) }
func (r bandRec) doc() int32   { return int32(uint32(r.bd)) }

func cmpRec(a, b bandRec) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.bd, b.bd)
}

// runSpiller buffers band records and spills them as sorted runs to files in
// dir once the buffer reaches its byte budget, so the band index never has
// to fit in RAM: only one buffer plus one read buffer per run during the
// merge.
type runSpiller struct {
	dir   string
	limit int
	buf   []bandRec
	files []string
	spilt int64 // bytes written
}

func newRunSpiller(dir string, budgetBytes int64) *runSpiller {
	limit := int(budgetBytes / 16)
	return &runSpiller{dir: dir, limit: limit, buf: make([]bandRec, 0, min(limit, 1<<20))}
}

func (s *runSpiller) add(key uint64, band uint32, doc int32) error {
	s.buf = append(s.buf, bandRec{key: key, bd: uint64(band)<<32 | uint64(uint32(doc))})
	if len(s.buf) >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *runSpiller) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	slices.SortFunc(s.buf, cmpRec)
	f, err := os.CreateTemp(s.dir, "bandrun-*.bin")
	if err != nil {
		return fmt.Errorf("%w: create band run: %v", ErrIO, err)
	}
	s.files = append(s.files, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	var b [16]byte
	for _, r := range s.buf {
		binary.LittleEndian.PutUint64(b[:8], r.key)
		binary.LittleEndian.PutUint64(b[8:], r.bd)
		if _, err := w.Write(b[:]); err != nil {
			f.Close()
			return fmt.Errorf("%w: write band run %s: %v", ErrIO, f.Name(), err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%w: write band run %s: %v", ErrIO, f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: close band run %s: %v", ErrIO, f.Name(), err)
	}
	s.spilt += int64(len(s.buf)) * 16
	s.buf = s.buf[:0]
	return nil
}

// cleanup removes the run files.
func (s *runSpiller) cleanup() {
	for _, f := range s.files {
		os.Remove(f)
	}
}

// runCursor reads one sorted run: a spilled file, or (mem != nil) the
// sorted in-memory remainder, which never has to touch the disk.
type runCursor struct {
	r   *bufio.Reader
	f   *os.File
	mem []bandRec
	cur bandRec
}

func (c *runCursor) close() {
	if c.f != nil {
		c.f.Close()
	}
}

func (c *runCursor) next() (bool, error) {
	if c.f == nil {
		if len(c.mem) == 0 {
			return false, nil
		}
		c.cur, c.mem = c.mem[0], c.mem[1:]
		return true, nil
	}
	var b [16]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("%w: read band run %s: %v", ErrIO, c.f.Name(), err)
	}
	c.cur = bandRec{key: binary.LittleEndian.Uint64(b[:8]), bd: binary.LittleEndian.Uint64(b[8:])}
	return true, nil
}

type cursorHeap []*runCursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return cmpRec(h[i].cur, h[j].cur) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*runCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeGroups k-way merges the spilled runs and the in-memory remainder and
// calls fn once per (key, band) group of two or more documents, docs in
// ascending order. The docs slice is reused between calls.
func (s *runSpiller) mergeGroups(fn func(band uint32, docs []int32) error) error {
	return s.merge(2, func(_ uint64, band uint32, docs []int32) error { return fn(band, docs) })
}

// merge calls fn for every (key, band) group of at least minGroup records.
func (s *runSpiller) merge(minGroup int, fn func(key uint64, band uint32, docs []int32) error) error {
	slices.SortFunc(s.buf, cmpRec)
	h := cursorHeap{}
	defer func() {
		for _, c := range h {
			c.close()
		}
	}()
	if len(s.buf) > 0 {
		c := &runCursor{mem: s.buf}
		c.next()
		h = append(h, c)
	}
	for _, name := range s.files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("%w: open band run: %v", ErrIO, err)
		}
		c := &runCursor{r: bufio.NewReaderSize(f, 256<<10), f: f}
		ok, err := c.next()
		if err != nil {
			f.Close()
			return err
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, c)
	}
	heap.Init(&h)
	var group []int32
	var gKey uint64
	var gBand uint32
	flush := func() error {
		if len(group) >= minGroup {
			if err := fn(gKey, gBand, group); err != nil {
				return err
			}
		}
		group = group[:0]
		return nil
	}
	for h.Len() > 0 {
		c := h[0]
		r := c.cur
		if len(group) == 0 || r.key != gKey || r.band() != gBand {
			if err := flush(); err != nil {
				return err
			}
			gKey, gBand = r.key, r.band()
		}
		group = append(group, r.doc())
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			c.close()
			heap.Pop(&h)
		}
	}
	return flush()
}

// SortedRuns is an external sort of (key, tag, doc) records: records are
// buffered up to a byte budget, spilled as sorted runs and k-way merged.
// decontam uses it to build corpus-scale n-gram indexes.
type SortedRuns struct{ s *runSpiller }

// NewSortedRuns spills into dir (which must exist) once budgetBytes of
// records (16 bytes each) are buffered.
func NewSortedRuns(dir string, budgetBytes int64) *SortedRuns {
	return &SortedRuns{s: newRunSpiller(dir, budgetBytes)}
}

// Add buffers one record; tag must be below 0xFFFF.
func (r *SortedRuns) Add(key uint64, tag uint32, doc int32) error { return r.s.add(key, tag, doc) }

// Merge calls fn for every (key, tag) group in ascending (key, tag) order,
// docs ascending.
func (r *SortedRuns) Merge(fn func(key uint64, tag uint32, docs []int32) error) error {
	return r.s.merge(1, fn)
}

// Cleanup removes spilled files.
func (r *SortedRuns) Cleanup() { r.s.cleanup() }
