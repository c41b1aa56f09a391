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
// merge. The budget covers the buffer and the radix sort's scratch of the
// same size: half of it each.
type runSpiller struct {
	dir   string
	limit int
	buf   []bandRec
	tmp   []bandRec // sortBandRecs' scratch, kept between spills
	files []string
	spilt int64 // bytes written
}

func newRunSpiller(dir string, budgetBytes int64) *runSpiller {
	limit := max(int(budgetBytes/32), 1)
	// The buffer starts small: a run over a few documents should not clear
	// 16 MB first, and append grows it to limit in a few doublings.
	return &runSpiller{dir: dir, limit: limit, buf: make([]bandRec, 0, min(limit, 1<<16))}
}

// sort orders the buffer by cmpRec.
func (s *runSpiller) sort() { s.tmp = sortBandRecs(s.buf, s.tmp) }

// sortBandRecs sorts a by cmpRec and returns tmp (grown to len(a)) for the
// next call. It is an LSD radix sort of the keys, 11 bits a pass, skipping
// a pass in which every key has the same digit, then a sort of each run of
// equal keys by bd (runs are short: a key is one band hash or one text
// hash). pdqsort with cmpRec was 6% of `crucible dedup`'s CPU; the radix
// passes touch each record 6 times without a compare.
func sortBandRecs(a, tmp []bandRec) []bandRec {
	if len(a) < 256 {
		slices.SortFunc(a, cmpRec)
		return tmp
	}
	if cap(tmp) < len(a) {
		tmp = make([]bandRec, len(a))
	}
	tmp = tmp[:len(a)]
	const bits, passes = 11, 6 // 6 x 11 >= 64
	var count [passes][1 << bits]int
	for _, r := range a {
		k := r.key
		for p := range passes {
			count[p][k>>(bits*p)&(1<<bits-1)]++
		}
	}
	src, dst := a, tmp
	for p := range passes {
		c := &count[p]
		shift := bits * p
		if c[src[0].key>>shift&(1<<bits-1)] == len(a) {
			continue // every key has the same digit here: the pass keeps the order
		}
		sum := 0
		for i := range c {
			c[i], sum = sum, sum+c[i]
		}
		for _, r := range src {
			d := r.key >> shift & (1<<bits - 1)
			dst[c[d]] = r
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j].key == a[i].key {
			j++
		}
		if j-i > 1 {
			run := a[i:j]
			if len(run) <= 16 {
				for x := 1; x < len(run); x++ { // insertion sort by bd
					for y := x; y > 0 && run[y].bd < run[y-1].bd; y-- {
						run[y], run[y-1] = run[y-1], run[y]
					}
				}
			} else {
				slices.SortFunc(run, func(x, y bandRec) int { return cmp.Compare(x.bd, y.bd) })
			}
		}
		i = j
	}
	return tmp
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
	s.sort()
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
	s.sort()
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
