package dedup

import (
	"context"
	"fmt"
	"slices"
)

// shingleSet32 is shingleSet truncated to the high 32 bits of each hash,
// halving verification memory. Two distinct shingles of a ~400-shingle
// pair collide with probability ~400²/2³² ≈ 4·10⁻⁵, so the Jaccard value
// moves by far less than the estimator noise the exact check removes.
func (w *worker) shingleSet32(cfg *Config, text string) []uint32 {
	Tokenize(text, cfg.tokenizeOptions(), &w.tok)
	w.shingles = AppendShingles(w.shingles[:0], &w.tok, cfg.Shingle, cfg.NGram, cfg.Seed)
	out := make([]uint32, len(w.shingles))
	for i, h := range w.shingles {
		out[i] = uint32(h >> 32)
	}
	w.radix = sortUint32(out, w.radix)
	return slices.Compact(out)
}

// sortUint32 sorts a ascending (the order slices.Sort gives; keys are
// plain integers, so any correct sort gives the same slice), using tmp as
// scratch, and returns tmp for reuse. Why a radix sort: a document's few
// hundred hashes are random, and pdqsort's mispredicted comparisons were
// half of verification's time; four byte-wide counting passes do not
// branch on the data.
func sortUint32(a, tmp []uint32) []uint32 {
	if len(a) < 64 {
		slices.Sort(a)
		return tmp
	}
	if cap(tmp) < len(a) {
		tmp = make([]uint32, len(a))
	}
	tmp = tmp[:len(a)]
	var count [4][256]int
	for _, v := range a {
		count[0][v&0xff]++
		count[1][v>>8&0xff]++
		count[2][v>>16&0xff]++
		count[3][v>>24]++
	}
	src, dst := a, tmp
	for p := range 4 {
		c := &count[p]
		if c[src[0]>>(8*p)&0xff] == len(a) {
			continue // every key has the same byte here: the pass keeps the order
		}
		sum := 0
		for i := range c {
			c[i], sum = sum, sum+c[i]
		}
		shift := 8 * p
		for _, v := range src {
			b := v >> shift & 0xff
			dst[c[b]] = v
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return tmp
}

// verifyExact rescans the source for the documents in stashed pairs and
// accepts a pair when the exact Jaccard of its shingle sets reaches the
// threshold. Memory is proportional to the documents in candidate pairs,
// not to the corpus.
func verifyExact(ctx context.Context, src Source, cfg *Config, stash []uint64, n int, uf *unionFind, st *Stats) error {
	st.PrefilterPass = int64(len(stash))
	need := map[int32][]uint32{}
	for _, p := range stash {
		need[int32(p>>32)] = nil
		need[int32(uint32(p))] = nil
	}
	var w worker
	if f, ok := src.(Fetcher); ok {
		idx := make([]int32, 0, len(need))
		for i := range need {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		err := f.Fetch(ctx, idx, func(i int32, d Doc) error {
			need[i] = w.shingleSet32(cfg, d.Text)
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		i := int32(0)
		err := src.Scan(ctx, func(d Doc) error {
			if _, ok := need[i]; ok {
				need[i] = w.shingleSet32(cfg, d.Text)
			}
			i++
			return nil
		})
		if err != nil {
			return err
		}
		if int(i) != n {
			return fmt.Errorf("%w: source yielded %d documents on the verification scan, %d on the first", ErrInput, i, n)
		}
	}
	for _, p := range stash {
		a, b := int32(p>>32), int32(uint32(p))
		if sortedJaccard(need[a], need[b]) >= cfg.Threshold {
			st.VerifiedPairs++
			uf.union(a, b)
		}
	}
	return nil
}
