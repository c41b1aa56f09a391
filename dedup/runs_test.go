package dedup

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortBandRecsMatchesCompareSort checks the radix sort against
// slices.SortFunc with cmpRec: random keys, keys sharing high or low digits
// (passes skipped), runs of equal keys shorter and longer than the
// insertion-sort cut, and sizes either side of the small-input cut.
func TestSortBandRecsMatchesCompareSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() uint64{
		"random":     r.Uint64,
		"low bits":   func() uint64 { return r.Uint64() & 0xFFFF },
		"high bits":  func() uint64 { return r.Uint64() &^ 0xFFFFFFFF },
		"few keys":   func() uint64 { return uint64(r.IntN(7)) << 40 },
		"one key":    func() uint64 { return 42 },
		"many equal": func() uint64 { return uint64(r.IntN(50)) * 0x9E3779B97F4A7C15 },
	}
	var tmp []bandRec
	for name, gen := range gens {
		for _, n := range []int{0, 1, 255, 256, 1000, 20000} {
			a := make([]bandRec, n)
			for i := range a {
				a[i] = bandRec{key: gen(), bd: uint64(r.IntN(40))<<32 | uint64(r.Uint32())}
			}
			want := slices.Clone(a)
			slices.SortFunc(want, cmpRec)
			tmp = sortBandRecs(a, tmp)
			if !slices.Equal(a, want) {
				t.Fatalf("%s, n=%d: radix order differs from cmpRec's", name, n)
			}
		}
	}
}
