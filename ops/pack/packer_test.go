package pack

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func randomLengths(r *rand.Rand, n, capacity int) []int {
	out := make([]int, n)
	for i := range out {
		switch r.IntN(4) {
		case 0:
			out[i] = 1 + r.IntN(capacity)
		case 1:
			out[i] = 1 + r.IntN(capacity/8)
		default:
			out[i] = 1 + r.IntN(capacity/3)
		}
	}
	return out
}

// checkBins: every sample exactly once, no bin over capacity, none empty.
func checkBins(t *testing.T, lengths []int, bins [][]int, capacity int) {
	t.Helper()
	seen := make([]bool, len(lengths))
	for bi, b := range bins {
		if len(b) == 0 {
			t.Fatalf("bin %d empty", bi)
		}
		sum := 0
		for _, s := range b {
			if seen[s] {
				t.Fatalf("sample %d placed twice", s)
			}
			seen[s] = true
			sum += lengths[s]
		}
		if sum > capacity {
			t.Fatalf("bin %d holds %d > %d", bi, sum, capacity)
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("sample %d not placed", i)
		}
	}
}

// naiveBestFit is the textbook O(n·bins) best fit over the same order.
func naiveBestFit(lengths, order []int, capacity int) [][]int {
	var bins [][]int
	var room []int
	for _, s := range order {
		best := -1
		for b, r := range room {
			if r >= lengths[s] && (best < 0 || r < room[best]) {
				best = b
			}
		}
		if best < 0 {
			bins = append(bins, nil)
			room = append(room, capacity)
			best = len(bins) - 1
		}
		bins[best] = append(bins[best], s)
		room[best] -= lengths[s]
	}
	return bins
}

func naiveFirstFit(lengths, order []int, capacity int) [][]int {
	var bins [][]int
	var room []int
	for _, s := range order {
		b := slices.IndexFunc(room, func(r int) bool { return r >= lengths[s] })
		if b < 0 {
			bins = append(bins, nil)
			room = append(room, capacity)
			b = len(bins) - 1
		}
		bins[b] = append(bins[b], s)
		room[b] -= lengths[s]
	}
	return bins
}

func binSizes(lengths []int, bins [][]int) []int {
	var out []int
	for _, b := range bins {
		sum := 0
		for _, s := range b {
			sum += lengths[s]
		}
		out = append(out, sum)
	}
	slices.Sort(out)
	return out
}

func TestPackLengthsValidAndDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const capacity = 4096
	for trial := 0; trial < 20; trial++ {
		lengths := randomLengths(r, 1+r.IntN(800), capacity)
		for _, algo := range Algorithms {
			a, err := PackLengths(lengths, capacity, algo, 42)
			if err != nil {
				t.Fatal(err)
			}
			checkBins(t, lengths, a, capacity)
			b, _ := PackLengths(lengths, capacity, algo, 42)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: not deterministic for a fixed seed", algo)
			}
		}
	}
}

// The segment-tree packers must make exactly the choices of the naive ones.
func TestPackersMatchNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const capacity = 1000
	for trial := 0; trial < 30; trial++ {
		lengths := randomLengths(r, 1+r.IntN(500), capacity)
		order := r.Perm(len(lengths))
		slices.SortStableFunc(order, func(a, b int) int { return lengths[b] - lengths[a] })
		if got, want := binSizes(lengths, bestFit(lengths, order, capacity)), binSizes(lengths, naiveBestFit(lengths, order, capacity)); !slices.Equal(got, want) {
			t.Fatalf("best fit differs from naive:\n got %v\nwant %v", got, want)
		}
		order = r.Perm(len(lengths))
		if got, want := firstFit(lengths, order, capacity), naiveFirstFit(lengths, order, capacity); !reflect.DeepEqual(got, want) {
			t.Fatalf("first fit differs from naive")
		}
	}
}

func TestBestFitDecreasingFillsWell(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const capacity = 32768
	lengths := make([]int, 20000)
	for i := range lengths {
		lengths[i] = 200 + int(r.ExpFloat64()*3000)
		if lengths[i] > capacity {
			lengths[i] = capacity
		}
	}
	bins, err := PackLengths(lengths, capacity, AlgoBestFitDecreasing, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f := FillRatio(lengths, bins, capacity); f < 0.99 {
		t.Fatalf("fill %.4f < 0.99", f)
	}
	none, _ := PackLengths(lengths, capacity, AlgoNone, 1)
	if len(none) != len(lengths) {
		t.Fatalf("none: %d rows for %d samples", len(none), len(lengths))
	}
	other, _ := PackLengths(lengths, capacity, AlgoBestFitDecreasing, 2)
	if reflect.DeepEqual(bins, other) {
		t.Fatal("the seed has no effect on tie order")
	}
}

func TestPackLengthsRejectsBadInput(t *testing.T) {
	if _, err := PackLengths([]int{10, 5000}, 4096, AlgoBestFitDecreasing, 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("over-long sample: %v", err)
	}
	if _, err := PackLengths([]int{0}, 4096, AlgoFirstFitShuffle, 0); err == nil {
		t.Fatal("zero length accepted")
	}
	if _, err := PackLengths([]int{1}, 4096, "magic", 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown algorithm: %v", err)
	}
}
