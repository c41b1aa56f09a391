package dedup

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
)

// diskIndex is the bounded-memory LSH backend: signatures go to a flat file
// (read back by offset only for candidate pairs) and band keys to sorted
// runs that are k-way merged into buckets, so RAM holds one run buffer, not
// the index. ekzhu/minhash-lsh keeps its tables in Go maps and has no
// spill or merge API, which is why this path does not use it.
type diskIndex struct {
	dir    string
	runs   *runSpiller
	sigF   *os.File
	sigW   *bufio.Writer
	k      int
	maxAll int
	buf    []byte
	st     *Stats
}

func newDiskIndex(cfg Config, st *Stats) (*diskIndex, error) {
	dir, err := os.MkdirTemp(cfg.TempDir, "crucible-dedup-*")
	if err != nil {
		return nil, fmt.Errorf("%w: temp dir: %v", ErrIO, err)
	}
	f, err := os.Create(dir + "/signatures.bin")
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	return &diskIndex{dir: dir, runs: newRunSpiller(dir, cfg.RunBytes), sigF: f,
		sigW: bufio.NewWriterSize(f, 1<<20), k: cfg.NumPerm, maxAll: cfg.MaxBucketAll,
		buf: make([]byte, 8*cfg.NumPerm), st: st}, nil
}

func (d *diskIndex) add(doc int32, s *signed) error {
	for i := range d.k {
		var v uint64
		if s.sig != nil {
			v = s.sig[i]
		}
		binary.LittleEndian.PutUint64(d.buf[8*i:], v)
	}
	if _, err := d.sigW.Write(d.buf); err != nil {
		return fmt.Errorf("%w: write signatures: %v", ErrIO, err)
	}
	if err := d.runs.add(s.exLo, exactBand, doc); err != nil {
		return err
	}
	for b, key := range s.keys {
		if err := d.runs.add(key, uint32(b), doc); err != nil {
			return err
		}
	}
	return nil
}

func (d *diskIndex) pairs(ctx context.Context, exact func(a, b int32) error, near func(a, b int32) error) error {
	if err := d.sigW.Flush(); err != nil {
		return fmt.Errorf("%w: flush signatures: %v", ErrIO, err)
	}
	groups := 0
	defer func() { d.st.RunBytes = d.runs.spilt }()
	return d.runs.mergeGroups(func(band uint32, docs []int32) error {
		if groups++; groups%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if band == exactBand {
			for _, x := range docs[1:] {
				if err := exact(docs[0], x); err != nil {
					return err
				}
			}
			return nil
		}
		if len(docs) <= d.maxAll {
			for i, a := range docs {
				for _, b := range docs[i+1:] {
					if err := near(a, b); err != nil {
						return err
					}
				}
			}
			return nil
		}
		// Oversized bucket (typically many copies of one text): star plus
		// chain keeps it connected through verified edges without the
		// quadratic pair count.
		for i, b := range docs[1:] {
			if err := near(docs[0], b); err != nil {
				return err
			}
			if i > 0 {
				if err := near(docs[i], b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (d *diskIndex) signature(doc int32, dst []uint64) ([]uint64, error) {
	if _, err := d.sigF.ReadAt(d.buf, int64(doc)*int64(8*d.k)); err != nil {
		return nil, fmt.Errorf("%w: read signature %d: %v", ErrIO, doc, err)
	}
	dst = dst[:0]
	for i := range d.k {
		dst = append(dst, binary.LittleEndian.Uint64(d.buf[8*i:]))
	}
	return dst, nil
}

func (d *diskIndex) close() {
	d.sigF.Close()
	d.runs.cleanup()
	os.RemoveAll(d.dir)
}

// autoIndex starts in memory and moves to disk once the corpus outgrows
// MemoryMaxDocs.
type autoIndex struct {
	index
	cfg   Config
	st    *Stats
	limit int
	n     int
}

func (a *autoIndex) add(doc int32, s *signed) error {
	a.n++
	if m, ok := a.index.(*memIndex); ok && a.n > a.limit {
		d, err := newDiskIndex(a.cfg, a.st)
		if err != nil {
			return err
		}
		if err := m.replay(d); err != nil {
			d.close()
			return err
		}
		a.index = d
		a.st.Backend = BackendDisk
	}
	return a.index.add(doc, s)
}

func (a *autoIndex) close() { a.index.close() }

func newIndex(_ context.Context, _ Source, cfg Config, bands Bands, st *Stats) (index, error) {
	switch cfg.Backend {
	case BackendMemory:
		st.Backend = BackendMemory
		return newMemIndex(bands, cfg.NumPerm), nil
	case BackendDisk:
		st.Backend = BackendDisk
		return newDiskIndex(cfg, st)
	}
	st.Backend = BackendMemory
	return &autoIndex{index: newMemIndex(bands, cfg.NumPerm), cfg: cfg, st: st, limit: cfg.MemoryMaxDocs}, nil
}
