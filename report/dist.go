package report

import (
	"math"
	"sort"
)

// distOf summarises v (which it sorts in place) with quantiles and an
// equal-width histogram of nbins bins over [min, max].
func distOf(v []float64, nbins int) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	sort.Float64s(v)
	d := Dist{N: int64(len(v)), Min: v[0], Max: v[len(v)-1],
		P50: quantile(v, 0.5), P90: quantile(v, 0.9), P99: quantile(v, 0.99)}
	var sum float64
	for _, x := range v {
		sum += x
	}
	d.Mean = sum / float64(len(v))
	if d.Min == d.Max {
		d.Bins = []HistBin{{Lo: d.Min, Hi: d.Max, Count: d.N}}
		return d
	}
	w := (d.Max - d.Min) / float64(nbins)
	d.Bins = make([]HistBin, nbins)
	for i := range d.Bins {
		d.Bins[i] = HistBin{Lo: d.Min + float64(i)*w, Hi: d.Min + float64(i+1)*w}
	}
	for _, x := range v {
		i := int((x - d.Min) / w)
		if i >= nbins { // the maximum falls in the last bin
			i = nbins - 1
		}
		d.Bins[i].Count++
	}
	return d
}

// quantile of sorted v by nearest rank.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	if i < 0 {
		i = 0
	}
	return v[min(i, len(v)-1)]
}

func sorted(v []float64) []float64 {
	sort.Float64s(v)
	return v
}
