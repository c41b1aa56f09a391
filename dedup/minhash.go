package dedup

import (
	"math"
	"math/bits"
	"slices"

	"github.com/zeebo/xxh3"
)

// Shingle kinds.
const (
	ShingleWord = "word" // n consecutive tokens
	ShingleChar = "char" // n consecutive bytes of the normalised text
)

// AppendShingles appends the 64-bit xxh3 hashes of the shingles of t to dst.
// A word shingle is the normalised byte span from token i to token i+n-1
// (tokens are single-space separated, so the span is canonical); documents
// shorter than n tokens yield one shingle covering all their tokens, so short
// documents still compare. The result may contain repeats; MinHash is
// insensitive to them and exact Jaccard deduplicates first.
func AppendShingles(dst []uint64, t *Tokens, kind string, n int, seed uint64) []uint64 {
	if t.Len() == 0 || n <= 0 {
		return dst
	}
	if kind == ShingleChar {
		b := t.Buf
		if len(b) <= n {
			return append(dst, xxh3.HashSeed(b, seed))
		}
		for i := 0; i+n <= len(b); i++ {
			dst = append(dst, xxh3.HashSeed(b[i:i+n], seed))
		}
		return dst
	}
	m := t.Len()
	if m <= n {
		return append(dst, xxh3.HashSeed(t.Buf[t.Start[0]:t.End(m-1)], seed))
	}
	st := t.Start
	for i := 0; i+n < m; i++ {
		dst = append(dst, xxh3.HashSeed(t.Buf[st[i]:st[i+n]-1], seed))
	}
	dst = append(dst, xxh3.HashSeed(t.Buf[st[m-n]:], seed))
	return dst
}

// Signer computes one-permutation MinHash (OPH) signatures with optimal
// densification (Shrivastava, ICML 2017).
//
// Why OPH: the classic scheme applies K independent permutations to every
// shingle (K multiply-mods per shingle). OPH hashes each shingle once,
// uses the hash to pick one of K bins and keeps the bin minimum: one hash and
// one compare per shingle, independent of K. Empty bins (documents with
// fewer shingles than bins leave some) are filled by optimal densification:
// bin i borrows the value of the first non-empty bin in a fixed pseudo-random
// probe sequence h(i,1), h(i,2), ... that is the same for every document.
// The collision probability of each slot stays exactly the Jaccard
// similarity, so Estimate is unbiased; variance is close to K-permutation
// MinHash once documents have a few times K shingles.
type Signer struct {
	K    int
	Seed uint64
}

// emptyBin marks a bin no shingle landed in. A real minimum can equal it
// only if a shingle hashes to 2^64-1, which is treated as empty (harmless:
// probability 2^-64 per shingle).
const emptyBin = math.MaxUint64

// Sign writes the K-slot signature of the shingle hashes into dst (resized)
// and returns it. It returns nil when there are no shingles: an empty
// document has no signature and must not be banded (all empties would
// collide).
func (s Signer) Sign(shingles []uint64, dst []uint64) []uint64 {
	if len(shingles) == 0 {
		return nil
	}
	k := s.K
	if cap(dst) < k {
		dst = make([]uint64, k)
	}
	dst = dst[:k]
	for i := range dst {
		dst[i] = emptyBin
	}
	uk := uint64(k)
	// Each input is re-mixed with the seed (one splitmix finaliser): callers
	// may pass non-uniform hashes, and signatures for different seeds must
	// be independent. High bits choose the bin, the whole value competes for
	// its minimum.
	seed := s.Seed
	for _, h := range shingles {
		v := mix64(h ^ seed)
		bin, _ := bits.Mul64(v, uk)
		dst[bin] = min(dst[bin], v) // a conditional move: the branch mispredicted
	}
	s.densify(dst)
	return dst
}

// densify fills empty bins by optimal densification. Only originally
// non-empty bins are borrowed from (a bitmap records them), so the result
// does not depend on fill order. Expected probes per empty bin are K/m for
// m non-empty bins.
func (s Signer) densify(sig []uint64) {
	k := uint64(len(sig))
	var stack [16]uint64
	full := stack[:0]
	if words := (len(sig) + 63) / 64; words <= len(stack) {
		full = stack[:words]
	} else {
		full = make([]uint64, words)
	}
	empty := 0
	for i, v := range sig {
		if v != emptyBin {
			full[i/64] |= 1 << (i % 64)
		} else {
			empty++
		}
	}
	if empty == 0 || empty == len(sig) {
		return
	}
	for i, v := range sig {
		if v != emptyBin || full[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		for attempt := uint64(1); ; attempt++ {
			j, _ := bits.Mul64(mix64(s.Seed^(uint64(i)<<32|attempt)^0x9e3779b97f4a7c15), k)
			if full[j/64]&(1<<(j%64)) != 0 {
				sig[i] = sig[j]
				break
			}
		}
	}
}

// mix64 is the splitmix64 finaliser: a cheap bijective 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Estimate returns the fraction of equal slots: an unbiased estimate of the
// Jaccard similarity of the two shingle sets.
func Estimate(a, b []uint64) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	eq := 0
	for i, v := range a {
		if v == b[i] {
			eq++
		}
	}
	return float64(eq) / float64(len(a))
}

// BandKeys writes the b band keys of sig (r slots per band) into dst.
func BandKeys(sig []uint64, b, r int, dst []uint64) []uint64 {
	dst = dst[:0]
	for band := 0; band < b; band++ {
		h := uint64(band+1) * 0x9e3779b97f4a7c15
		for _, v := range sig[band*r : band*r+r] {
			h = mix64(h ^ v)
		}
		dst = append(dst, h)
	}
	return dst
}

// ExactJaccard computes |A∩B|/|A∪B| of two sorted, deduplicated sets.
func ExactJaccard(a, b []uint64) float64 { return sortedJaccard(a, b) }

// sortedJaccard is ExactJaccard for any element width (verification keeps
// 32-bit shingle sets to halve their memory).
func sortedJaccard[T uint32 | uint64](a, b []T) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// SortedSet sorts and deduplicates hashes in place.
func SortedSet(h []uint64) []uint64 {
	slices.Sort(h)
	out := h[:0]
	for i, v := range h {
		if i == 0 || v != h[i-1] {
			out = append(out, v)
		}
	}
	return out
}
