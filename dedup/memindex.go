package dedup

import (
	"context"
	"fmt"
	"slices"

	minhashlsh "github.com/ekzhu/minhash-lsh"
)

// memIndex is the in-memory LSH backend on github.com/ekzhu/minhash-lsh.
//
// That library chooses its own banding internally (equal FP/FN weights, the
// choice this package avoids) and has no way to set bands × rows. So each
// band is pre-hashed into one 64-bit band key and the library indexes the
// B-slot vector of band keys with k=1 slot per band and l=B bands: a bucket
// hit is then exactly "band b of both signatures is equal". A near-zero
// threshold makes the library's optimiser pick k=1, l=B; newMemIndex checks
// that it did. Its tables are Go maps keyed by strings with interface{}
// values, which is why large corpora go to the disk backend instead.
type memIndex struct {
	bands Bands
	k     int
	sigs  []uint64 // n × k, zeros for empty docs
	keys  []uint64 // n × B
	has   []bool
	exact map[[2]uint64]int32
	exPrs [][2]int32
}

// libraryThreshold makes minhash-lsh's optimiser choose k=1, l=B.
const libraryThreshold = 0.001

func newMemIndex(bands Bands, k int) *memIndex {
	return &memIndex{bands: bands, k: k, exact: map[[2]uint64]int32{}}
}

func (m *memIndex) add(doc int32, s *signed) error {
	key := [2]uint64{s.exLo, s.exHi}
	if first, ok := m.exact[key]; ok {
		m.exPrs = append(m.exPrs, [2]int32{first, doc})
	} else {
		m.exact[key] = doc
	}
	if s.sig == nil {
		m.sigs = append(m.sigs, make([]uint64, m.k)...)
		m.keys = append(m.keys, make([]uint64, m.bands.B)...)
		m.has = append(m.has, false)
		return nil
	}
	m.sigs = append(m.sigs, s.sig...)
	m.keys = append(m.keys, s.keys...)
	m.has = append(m.has, true)
	return nil
}

func (m *memIndex) pairs(ctx context.Context, exact func(a, b int32) error, near func(a, b int32) error) error {
	for _, p := range m.exPrs {
		if err := exact(p[0], p[1]); err != nil {
			return err
		}
	}
	B := m.bands.B
	lsh := minhashlsh.NewMinhashLSH64(B, libraryThreshold)
	if k, l := lsh.Params(); k != 1 || l != B {
		return fmt.Errorf("%w: minhash-lsh chose k=%d l=%d for %d band keys, want k=1 l=%d", ErrConfig, k, l, B, B)
	}
	for i, ok := range m.has {
		if ok {
			lsh.Add(int32(i), m.keys[i*B:(i+1)*B])
		}
	}
	lsh.Index()
	var cands []int32
	for i, ok := range m.has {
		if !ok {
			continue
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		cands = cands[:0]
		for _, c := range lsh.Query(m.keys[i*B : (i+1)*B]) {
			if j := c.(int32); j > int32(i) {
				cands = append(cands, j)
			}
		}
		slices.Sort(cands)
		for _, j := range cands {
			if err := near(int32(i), j); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memIndex) signature(doc int32, dst []uint64) ([]uint64, error) {
	return append(dst[:0], m.sigs[int(doc)*m.k:int(doc+1)*m.k]...), nil
}

func (m *memIndex) close() {}

// replay feeds every document of m into another backend (auto backend
// switching from memory to disk).
func (m *memIndex) replay(dst index) error {
	byDoc := make(map[int32][2]uint64, len(m.exact))
	for k, d := range m.exact {
		byDoc[d] = k
	}
	for _, p := range m.exPrs {
		byDoc[p[1]] = byDoc[p[0]]
	}
	B := m.bands.B
	for i, ok := range m.has {
		ex := byDoc[int32(i)]
		s := signed{exLo: ex[0], exHi: ex[1]}
		if ok {
			s.sig = m.sigs[i*m.k : (i+1)*m.k]
			s.keys = m.keys[i*B : (i+1)*B]
		}
		if err := dst.add(int32(i), &s); err != nil {
			return err
		}
	}
	return nil
}
