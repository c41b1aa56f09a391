package packbench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/crucible-data/crucible/ops/pack"
)

// corpusLengths draws sample lengths (tokens) for a corpus of about total
// tokens with the shape of the generated trajectories: log-normal around
// 8k tokens, long tail; samples over B are left out as the packer drops them.
func corpusLengths(total int64, median float64, seqLen int) []int {
	r := rand.New(rand.NewPCG(11, 12))
	var out []int
	var sum int64
	for sum < total {
		l := int(median * math.Exp(0.9*r.NormFloat64()))
		if l < 64 || l > seqLen {
			continue
		}
		out = append(out, l)
		sum += int64(l)
	}
	return out
}

func benchPack(b *testing.B, lengths []int, algo string) {
	b.ResetTimer()
	var fill float64
	for i := 0; i < b.N; i++ {
		bins, err := pack.PackLengths(lengths, 32768, algo, 1)
		if err != nil {
			b.Fatal(err)
		}
		fill = pack.FillRatio(lengths, bins, 32768)
	}
	b.ReportMetric(fill, "fill")
	b.ReportMetric(float64(len(lengths)), "samples")
}

// 540M tokens of trajectories (~60k samples), as in the end-to-end run.
func BenchmarkPackLengths540MTokensBFD(b *testing.B) {
	benchPack(b, corpusLengths(540_000_000, 8000, 32768), pack.AlgoBestFitDecreasing)
}

func BenchmarkPackLengths540MTokensFFS(b *testing.B) {
	benchPack(b, corpusLengths(540_000_000, 8000, 32768), pack.AlgoFirstFitShuffle)
}

// 540M tokens of short samples (~1.8M samples of ~300 tokens): the scaling case.
func BenchmarkPackLengths540MTokensShortBFD(b *testing.B) {
	benchPack(b, corpusLengths(540_000_000, 250, 32768), pack.AlgoBestFitDecreasing)
}

func BenchmarkPackLengths540MTokensShortFFS(b *testing.B) {
	benchPack(b, corpusLengths(540_000_000, 250, 32768), pack.AlgoFirstFitShuffle)
}
