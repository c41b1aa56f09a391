package kernels

import (
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Timing summarises one side's timed samples (milliseconds).
type Timing struct {
	N      int
	Median float64
	P10    float64
	P90    float64
	Min    float64
	Mean   float64
	Std    float64
}

// Spread is the P10–P90 width relative to the median: the noise band a
// speedup must clear to mean anything.
func (t Timing) Spread() float64 {
	if t.Median <= 0 {
		return 0
	}
	return (t.P90 - t.P10) / t.Median
}

// Summarize computes the order statistics of xs.
func Summarize(xs []float64) Timing {
	if len(xs) == 0 {
		return Timing{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	mean, std := stat.MeanStdDev(s, nil)
	return Timing{N: len(s), Median: median(s), P10: stat.Quantile(0.1, stat.Empirical, s, nil),
		P90: stat.Quantile(0.9, stat.Empirical, s, nil), Min: s[0], Mean: mean, Std: std}
}

// median of a sorted slice (average of the two middle values when even).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// SpeedupCI estimates reference/candidate median-time speedup with a
// percentile bootstrap: both sample sets are resampled with replacement
// rounds times (seeded, so verdicts are reproducible) and the (alpha/2,
// 1-alpha/2) quantiles of the resampled ratios bound the interval. A
// candidate is "faster" only when lo clears the threshold, which keeps clock
// and thermal noise from producing fast verdicts.
func SpeedupCI(ref, cand []float64, rounds int, alpha float64, seed uint64) (point, lo, hi float64) {
	if len(ref) == 0 || len(cand) == 0 {
		return 0, 0, 0
	}
	rs := append([]float64(nil), ref...)
	cs := append([]float64(nil), cand...)
	sort.Float64s(rs)
	sort.Float64s(cs)
	if median(cs) <= 0 {
		return 0, 0, 0
	}
	point = median(rs) / median(cs)
	if rounds <= 0 {
		return point, point, point
	}
	r := rand.New(rand.NewPCG(seed, 0xC0FFEE))
	ratios := make([]float64, 0, rounds)
	rb := make([]float64, len(rs))
	cb := make([]float64, len(cs))
	for i := 0; i < rounds; i++ {
		for j := range rb {
			rb[j] = rs[r.IntN(len(rs))]
		}
		for j := range cb {
			cb[j] = cs[r.IntN(len(cs))]
		}
		sort.Float64s(rb)
		sort.Float64s(cb)
		if m := median(cb); m > 0 {
			ratios = append(ratios, median(rb)/m)
		}
	}
	if len(ratios) == 0 {
		return point, 0, 0
	}
	sort.Float64s(ratios)
	return point, stat.Quantile(alpha/2, stat.Empirical, ratios, nil), stat.Quantile(1-alpha/2, stat.Empirical, ratios, nil)
}
