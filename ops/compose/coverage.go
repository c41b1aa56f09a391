package compose

import (
	"fmt"
	"sort"
	"strings"
)

// CoverageRow is one line of the coverage report. Dimension is one of Dims,
// "family_top" (Value top1/top3/top5: the share of items in the k largest
// families) or "total" (Value items/lineages).
type CoverageRow struct {
	Split     string  `json:"split" arrow:"split"`
	Dimension string  `json:"dimension" arrow:"dimension"`
	Value     string  `json:"value" arrow:"value"`
	Count     int64   `json:"count" arrow:"count"`
	Share     float64 `json:"share" arrow:"share"`
	Target    float64 `json:"target" arrow:"target"` // the balancing target share; 0 for family_top/total
}

// coverage reports counts and shares per dimension value, sorted by count
// (descending) then value, and the top-1/3/5 family coverage.
func coverage(split string, picked []pick, targets [5]map[string]float64) []CoverageRow {
	n := len(picked)
	share := func(c int) float64 {
		if n == 0 {
			return 0
		}
		return float64(c) / float64(n)
	}
	roots := map[string]bool{}
	for _, p := range picked {
		roots[p.c.root] = true
	}
	out := []CoverageRow{
		{Split: split, Dimension: "total", Value: "items", Count: int64(n), Share: share(n)},
		{Split: split, Dimension: "total", Value: "lineages", Count: int64(len(roots))},
	}
	var familyCounts []int
	for d, name := range Dims {
		counts := map[string]int{}
		for _, p := range picked {
			counts[p.c.vals[d]]++
		}
		// Values with a target but no item are reported too: a gap.
		for v := range targets[d] {
			if _, ok := counts[v]; !ok {
				counts[v] = 0
			}
		}
		vals := sortedKeys(counts)
		sort.SliceStable(vals, func(a, b int) bool { return counts[vals[a]] > counts[vals[b]] })
		for _, v := range vals {
			out = append(out, CoverageRow{Split: split, Dimension: name, Value: v, Count: int64(counts[v]),
				Share: share(counts[v]), Target: targets[d][v]})
			if name == DimFamily && counts[v] > 0 {
				familyCounts = append(familyCounts, counts[v])
			}
		}
	}
	for _, k := range []int{1, 3, 5} {
		c := 0
		for i := 0; i < k && i < len(familyCounts); i++ {
			c += familyCounts[i]
		}
		out = append(out, CoverageRow{Split: split, Dimension: "family_top", Value: fmt.Sprintf("top%d", k), Count: int64(c), Share: share(c)})
	}
	return out
}

// FormatCoverage renders coverage rows as an aligned text table for logs
// and the CLI.
func FormatCoverage(rows []CoverageRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-10s %-24s %7s %7s %7s\n", "split", "dimension", "value", "count", "share", "target")
	for _, r := range rows {
		target := ""
		if r.Target > 0 {
			target = fmt.Sprintf("%6.1f%%", 100*r.Target)
		}
		shareS := fmt.Sprintf("%6.1f%%", 100*r.Share)
		if r.Dimension == "total" && r.Value == "lineages" {
			shareS = ""
		}
		fmt.Fprintf(&b, "%-10s %-10s %-24s %7d %7s %7s\n", r.Split, r.Dimension, r.Value, r.Count, shareS, target)
	}
	return b.String()
}
