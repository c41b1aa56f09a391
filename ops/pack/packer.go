package pack

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Packing algorithms.
const (
	AlgoBestFitDecreasing = "bfd"  // best-fit decreasing, O(n log B)
	AlgoFirstFitShuffle   = "ffs"  // first-fit over a seeded shuffle, O(n log n)
	AlgoNone              = "none" // one sample per row
)

// Algorithms lists the accepted algorithm names.
var Algorithms = []string{AlgoBestFitDecreasing, AlgoFirstFitShuffle, AlgoNone}

// PackLengths assigns samples (by index into lengths) to bins of capacity
// capacity. Every length must be in [1, capacity]. The result is
// deterministic for a seed: the seed shuffles the input order first, which
// decides ties among equal lengths (bfd) or the whole order (ffs). Bins are
// returned in the order they were opened, samples within a bin in placement
// order.
func PackLengths(lengths []int, capacity int, algo string, seed uint64) ([][]int, error) {
	for i, l := range lengths {
		if l < 1 || l > capacity {
			return nil, fmt.Errorf("%w: sample %d has length %d, outside [1, %d]", ErrConfig, i, l, capacity)
		}
	}
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	switch algo {
	case AlgoNone:
		bins := make([][]int, len(lengths))
		for i := range lengths {
			bins[i] = []int{i}
		}
		return bins, nil
	case AlgoBestFitDecreasing:
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		// stable on the shuffled order: equal lengths keep the seeded order
		slices.SortStableFunc(order, func(a, b int) int { return lengths[b] - lengths[a] })
		return bestFit(lengths, order, capacity), nil
	case AlgoFirstFitShuffle:
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		return firstFit(lengths, order, capacity), nil
	}
	return nil, fmt.Errorf("%w: packing algorithm %q (want one of %v)", ErrConfig, algo, Algorithms)
}

// bestFit places each sample in the open bin with the least remaining room
// that still fits it, opening a bin when none does. A segment tree over
// remaining capacities 0..capacity holds, per capacity value, whether any bin
// has exactly that room; "smallest room >= l" is then one O(log B) descent.
// Bins with the same room form a LIFO stack, which keeps it deterministic.
func bestFit(lengths, order []int, capacity int) [][]int {
	size := 1
	for size < capacity+1 {
		size <<= 1
	}
	tree := make([]int32, 2*size) // count of bins per room, summed over ranges
	byRoom := make([][]int32, capacity+1)
	var bins [][]int
	update := func(room int, delta int32) {
		for i := room + size; i >= 1; i >>= 1 {
			tree[i] += delta
		}
	}
	// smallest room >= l holding a bin, or -1
	query := func(l int) int {
		return firstAtLeast(tree, size, 1, 0, size-1, l)
	}
	for _, s := range order {
		l := lengths[s]
		room := query(l)
		var b int32
		if room < 0 {
			b = int32(len(bins))
			bins = append(bins, nil)
			room = capacity
		} else {
			stack := byRoom[room]
			b = stack[len(stack)-1]
			byRoom[room] = stack[:len(stack)-1]
			update(room, -1)
		}
		bins[b] = append(bins[b], s)
		if left := room - l; left > 0 {
			byRoom[left] = append(byRoom[left], b)
			update(left, 1)
		}
	}
	return bins
}

// firstAtLeast finds the smallest leaf index >= l with a non-zero count in
// the subtree of node covering [lo, hi].
func firstAtLeast(tree []int32, size, node, lo, hi, l int) int {
	if hi < l || tree[node] == 0 {
		return -1
	}
	if lo == hi {
		return lo
	}
	mid := (lo + hi) / 2
	if r := firstAtLeast(tree, size, 2*node, lo, mid, l); r >= 0 {
		return r
	}
	return firstAtLeast(tree, size, 2*node+1, mid+1, hi, l)
}

// firstFit places each sample in the earliest-opened bin with room. A
// segment tree over bins (up to one per sample) keeps the maximum room of
// each range, so the leftmost fitting bin is found by one descent.
func firstFit(lengths, order []int, capacity int) [][]int {
	size := 1
	for size < len(order) {
		size <<= 1
	}
	maxRoom := make([]int32, 2*size) // unopened bins have room 0 until opened
	var bins [][]int
	set := func(b int, room int32) {
		i := b + size
		maxRoom[i] = room
		for i >>= 1; i >= 1; i >>= 1 {
			maxRoom[i] = max(maxRoom[2*i], maxRoom[2*i+1])
		}
	}
	rooms := make([]int32, 0, len(order))
	for _, s := range order {
		l := int32(lengths[s])
		b := -1
		if maxRoom[1] >= l {
			i := 1
			for i < size {
				if maxRoom[2*i] >= l {
					i = 2 * i
				} else {
					i = 2*i + 1
				}
			}
			b = i - size
		}
		if b < 0 {
			b = len(bins)
			bins = append(bins, nil)
			rooms = append(rooms, int32(capacity))
		}
		bins[b] = append(bins[b], s)
		rooms[b] -= l
		set(b, rooms[b])
	}
	return bins
}

// FillRatio is tokens placed / (bins × capacity).
func FillRatio(lengths []int, bins [][]int, capacity int) float64 {
	if len(bins) == 0 {
		return 0
	}
	var total int64
	for _, b := range bins {
		for _, s := range b {
			total += int64(lengths[s])
		}
	}
	return float64(total) / (float64(len(bins)) * float64(capacity))
}
