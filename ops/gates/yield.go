package gates

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// ReasonCount is how many candidates one gate rejected for one reason.
type ReasonCount struct {
	Gate   string `arrow:"gate" json:"gate"`
	Reason string `arrow:"reason" json:"reason"`
	Count  int64  `arrow:"count" json:"count"`
}

// YieldRow is the per-operator yield report (one row per operator and a
// final "*" row for all of them).
type YieldRow struct {
	Operator   string        `arrow:"operator" json:"operator"`
	Route      string        `arrow:"route" json:"route"`
	Candidates int64         `arrow:"candidates" json:"candidates"`
	Admitted   int64         `arrow:"admitted" json:"admitted"`
	YieldPct   float64       `arrow:"yield_pct" json:"yield_pct"` // verified yield: admitted / candidates
	Rejections []ReasonCount `arrow:"rejections" json:"rejections"`
	// Behavioural distance from the parent: the fraction of compared output
	// samples on which the adapted parent differs under the evolved
	// verifier, over candidates where it was measured (-1 when none).
	MeanDistance float64 `arrow:"mean_distance" json:"mean_distance"`
	MinDistance  float64 `arrow:"min_distance" json:"min_distance"`
	MaxDistance  float64 `arrow:"max_distance" json:"max_distance"`
	Measured     int64   `arrow:"distance_measured" json:"distance_measured"`
	// SimSeconds is all simulator time the gates spent on the operator's
	// candidates; CostPerAdmitted divides it by the survivors (0 when none).
	SimSeconds      float64 `arrow:"sim_seconds" json:"sim_seconds"`
	CostPerAdmitted float64 `arrow:"cost_per_admitted_s" json:"cost_per_admitted_s"`
}

// WithoutTimings zeroes the simulator-time columns (see engine.TimedRow):
// the yield itself is deterministic, the seconds spent on it are not.
func (y YieldRow) WithoutTimings() YieldRow {
	y.SimSeconds, y.CostPerAdmitted = 0, 0
	return y
}

// BuildYield aggregates candidates per operator, in operator-name order,
// plus the total row "*".
func BuildYield(cands []*Candidate) []YieldRow {
	rows := map[string]*YieldRow{}
	reasons := map[string]map[[2]string]int64{}
	var dist = map[string][]float64{}
	add := func(key, route string, c *Candidate) {
		r := rows[key]
		if r == nil {
			r = &YieldRow{Operator: key, Route: route}
			rows[key] = r
			reasons[key] = map[[2]string]int64{}
		}
		if r.Route != route {
			r.Route = "mixed"
		}
		r.Candidates++
		if c.Rejection == nil {
			r.Admitted++
		} else {
			reasons[key][[2]string{c.Rejection.Gate, c.Rejection.Reason}]++
		}
		if c.Distance >= 0 {
			dist[key] = append(dist[key], c.Distance)
		}
		r.SimSeconds += c.SimSeconds
	}
	for _, c := range cands {
		add(c.Item.Operator, c.Item.Route, c)
		add("*", "*", c)
	}
	var keys []string
	for k := range rows {
		if k != "*" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(rows) > 0 {
		keys = append(keys, "*")
	}
	var out []YieldRow
	for _, k := range keys {
		r := rows[k]
		r.YieldPct = round2(100 * float64(r.Admitted) / float64(r.Candidates))
		r.MeanDistance, r.MinDistance, r.MaxDistance = -1, -1, -1
		if ds := dist[k]; len(ds) > 0 {
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, d := range ds {
				sum += d
				lo, hi = math.Min(lo, d), math.Max(hi, d)
			}
			r.MeanDistance, r.MinDistance, r.MaxDistance, r.Measured = round4(sum/float64(len(ds))), round4(lo), round4(hi), int64(len(ds))
		}
		r.SimSeconds = round4(r.SimSeconds)
		if r.Admitted > 0 {
			r.CostPerAdmitted = round4(r.SimSeconds / float64(r.Admitted))
		}
		for gr, n := range reasons[k] {
			r.Rejections = append(r.Rejections, ReasonCount{Gate: gr[0], Reason: gr[1], Count: n})
		}
		sort.Slice(r.Rejections, func(a, b int) bool {
			x, y := r.Rejections[a], r.Rejections[b]
			if x.Count != y.Count {
				return x.Count > y.Count
			}
			return x.Gate+x.Reason < y.Gate+y.Reason
		})
		out = append(out, *r)
	}
	return out
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

// FormatYield prints the report as a table.
func FormatYield(w io.Writer, rows []YieldRow) {
	fmt.Fprintf(w, "%-18s %-18s %6s %6s %7s %8s %9s %10s  %s\n", "operator", "route", "cand", "admit", "yield%", "dist", "sim_s", "s/admit", "rejections")
	for _, r := range rows {
		var rs []string
		for _, x := range r.Rejections {
			rs = append(rs, fmt.Sprintf("%s/%s=%d", x.Gate, x.Reason, x.Count))
		}
		dist := "-"
		if r.Measured > 0 {
			dist = fmt.Sprintf("%.3f", r.MeanDistance)
		}
		fmt.Fprintf(w, "%-18s %-18s %6d %6d %7.1f %8s %9.2f %10.3f  %s\n", r.Operator, r.Route, r.Candidates, r.Admitted, r.YieldPct, dist, r.SimSeconds, r.CostPerAdmitted, strings.Join(rs, ", "))
	}
}

// FormatFunnel prints the gate funnel.
func FormatFunnel(w io.Writer, res *Result) {
	fmt.Fprintf(w, "candidates %d", len(res.Candidates))
	for _, f := range res.Funnel {
		fmt.Fprintf(w, " → %s %d (−%d)", f.Gate, f.Passed, f.Rejected)
	}
	fmt.Fprintf(w, " → admitted %d\n", len(res.Admitted))
}
