package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crucible-data/crucible/engine"
)

// Thresholds decide which changes between two runs are regressions. A
// negative value turns a check off.
type Thresholds struct {
	RowsDropPct       float64 `yaml:"rows_drop_pct"`       // a funnel step's rows fell by more than this %
	RejectionsRisePct float64 `yaml:"rejections_rise_pct"` // a (stage, gate, reason) count rose by more than this %
	CoverageDropPts   float64 `yaml:"coverage_drop_pts"`   // a domain's or family's share fell by more than this many points
	PassRateDropPts   float64 `yaml:"pass_rate_drop_pts"`  // a verifier's pass rate fell by more than this many points
	InfraRateRisePts  float64 `yaml:"infra_rate_rise_pts"` // a verifier's infrastructure-fault rate rose by more points
	ThroughputDropPct float64 `yaml:"throughput_drop_pct"` // a stage's rows/s fell by more than this %
	FillDropPts       float64 `yaml:"fill_drop_pts"`       // the packing fill ratio fell by more points
	MinCount          int64   `yaml:"min_count"`           // counts below this in both runs are never regressions
	MinSeconds        float64 `yaml:"min_seconds"`         // stages faster than this in both runs: throughput not judged
}

// DefaultThresholds suit a nightly build of thousands of items.
func DefaultThresholds() Thresholds {
	return Thresholds{RowsDropPct: 10, RejectionsRisePct: 50, CoverageDropPts: 5, PassRateDropPts: 5,
		InfraRateRisePts: 2, ThroughputDropPct: 50, FillDropPts: 5, MinCount: 10, MinSeconds: 5}
}

var thresholdNames = []string{"rows_drop_pct", "rejections_rise_pct", "coverage_drop_pts", "pass_rate_drop_pts",
	"infra_rate_rise_pts", "throughput_drop_pct", "fill_drop_pts", "min_count", "min_seconds"}

func (t *Thresholds) field(name string) (*float64, *int64) {
	switch name {
	case "rows_drop_pct":
		return &t.RowsDropPct, nil
	case "rejections_rise_pct":
		return &t.RejectionsRisePct, nil
	case "coverage_drop_pts":
		return &t.CoverageDropPts, nil
	case "pass_rate_drop_pts":
		return &t.PassRateDropPts, nil
	case "infra_rate_rise_pts":
		return &t.InfraRateRisePts, nil
	case "throughput_drop_pct":
		return &t.ThroughputDropPct, nil
	case "fill_drop_pts":
		return &t.FillDropPts, nil
	case "min_count":
		return nil, &t.MinCount
	case "min_seconds":
		return &t.MinSeconds, nil
	}
	return nil, nil
}

// Set applies "name=value" settings, reporting every bad one.
func (t *Thresholds) Set(settings ...string) error {
	var errs []error
	for _, s := range settings {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		f, i := t.field(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("threshold %q: want name=value", s))
		case f == nil && i == nil:
			errs = append(errs, fmt.Errorf("threshold %q: unknown name (known: %s)", name, strings.Join(thresholdNames, ", ")))
		case f != nil:
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				errs = append(errs, fmt.Errorf("threshold %s: %q is not a number", name, val))
				continue
			}
			*f = v
		default:
			v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("threshold %s: %q is not an integer", name, val))
				continue
			}
			*i = v
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", engine.ErrConfig, errors.Join(errs...))
	}
	return nil
}

// Change is one figure that differs between run A and run B.
type Change struct {
	Section    string  `json:"section"` // funnel | rejections | coverage | verdicts | throughput | packing
	Key        string  `json:"key"`
	Metric     string  `json:"metric"`
	A          float64 `json:"a"`
	B          float64 `json:"b"`
	Regression bool    `json:"regression"`
	Why        string  `json:"why,omitempty"` // the threshold crossed
}

// Diff is what changed from run A to run B.
type Diff struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	Changes     []Change `json:"changes"`
	Regressions int      `json:"regressions"`
}

// Compare lists every figure that changed from a to b and flags those that
// cross t.
func Compare(a, b *Report, t Thresholds) *Diff {
	d := &Diff{A: a.WorkDir, B: b.WorkDir}
	add := func(c Change) {
		if c.A == c.B && !c.Regression {
			return
		}
		if c.Regression {
			d.Regressions++
		}
		d.Changes = append(d.Changes, c)
	}
	big := func(x, y float64) bool { return math.Max(x, y) >= float64(t.MinCount) }
	// dropPct is how many percent y is below x (negative for a rise).
	dropPct := func(x, y float64) float64 {
		if x == 0 {
			return 0
		}
		return 100 * (x - y) / x
	}

	fa, fb := funnelByStage(a), funnelByStage(b)
	for _, k := range unionKeys(fa, fb) {
		x, y := fa[k], fb[k]
		c := Change{Section: "funnel", Key: k, Metric: "rows", A: float64(x.Rows), B: float64(y.Rows)}
		if p := dropPct(c.A, c.B); t.RowsDropPct >= 0 && big(c.A, c.B) && (p > t.RowsDropPct || c.B == 0 && c.A > 0) {
			c.Regression, c.Why = true, fmt.Sprintf("rows fell %.1f%% > %g%%", p, t.RowsDropPct)
		}
		add(c)
		add(Change{Section: "funnel", Key: k, Metric: "rejected", A: float64(x.Rejected), B: float64(y.Rejected)})
	}

	ra, rb := rejectionsByKey(a), rejectionsByKey(b)
	for _, k := range unionKeys(ra, rb) {
		c := Change{Section: "rejections", Key: k, Metric: "rows", A: float64(ra[k]), B: float64(rb[k])}
		rise := -dropPct(c.A, c.B)
		if t.RejectionsRisePct >= 0 && big(c.A, c.B) && (rise > t.RejectionsRisePct || c.A == 0 && c.B > 0) {
			c.Regression = true
			if c.A == 0 {
				c.Why = "new rejection reason"
			} else {
				c.Why = fmt.Sprintf("rose %.1f%% > %g%%", rise, t.RejectionsRisePct)
			}
		}
		add(c)
	}

	for _, dim := range []string{"domain", "family", "route"} {
		sa, sb := sharesOf(a.Coverage, dim), sharesOf(b.Coverage, dim)
		for _, k := range unionKeys(sa, sb) {
			c := Change{Section: "coverage", Key: dim + " " + k, Metric: "share_pts", A: 100 * sa[k].Share, B: 100 * sb[k].Share}
			if dim != "route" && t.CoverageDropPts >= 0 && big(float64(sa[k].Count), float64(sb[k].Count)) && c.A-c.B > t.CoverageDropPts {
				c.Regression, c.Why = true, fmt.Sprintf("share fell %.1f points > %g", c.A-c.B, t.CoverageDropPts)
			}
			add(c)
		}
	}

	va, vb := verdictsByKey(a), verdictsByKey(b)
	for _, k := range unionKeys(va, vb) {
		x, y := va[k], vb[k]
		n := big(float64(x.Total), float64(y.Total))
		c := Change{Section: "verdicts", Key: k, Metric: "pass_rate_pts", A: 100 * x.PassRate, B: 100 * y.PassRate}
		if t.PassRateDropPts >= 0 && n && x.Total > 0 && c.A-c.B > t.PassRateDropPts {
			c.Regression, c.Why = true, fmt.Sprintf("pass rate fell %.1f points > %g", c.A-c.B, t.PassRateDropPts)
		}
		add(c)
		c = Change{Section: "verdicts", Key: k, Metric: "infra_rate_pts", A: 100 * x.InfraRate, B: 100 * y.InfraRate}
		if t.InfraRateRisePts >= 0 && n && c.B-c.A > t.InfraRateRisePts {
			c.Regression, c.Why = true, fmt.Sprintf("infrastructure faults rose %.1f points > %g", c.B-c.A, t.InfraRateRisePts)
		}
		add(c)
		add(Change{Section: "verdicts", Key: k, Metric: "verdicts", A: float64(x.Total), B: float64(y.Total)})
	}

	ta, tb := stagesByName(a), stagesByName(b)
	for _, k := range unionKeys(ta, tb) {
		x, y := ta[k], tb[k]
		if x.Status != "ran" || y.Status != "ran" {
			continue // a skipped stage's time belongs to an earlier run
		}
		c := Change{Section: "throughput", Key: k, Metric: "rows_per_second", A: x.RowsPerSecond, B: y.RowsPerSecond}
		if p := dropPct(c.A, c.B); t.ThroughputDropPct >= 0 && math.Max(x.Seconds, y.Seconds) >= t.MinSeconds && p > t.ThroughputDropPct {
			c.Regression, c.Why = true, fmt.Sprintf("throughput fell %.1f%% > %g%%", p, t.ThroughputDropPct)
		}
		add(c)
	}

	if a.Packing != nil || b.Packing != nil {
		pa, pb := packingOrZero(a), packingOrZero(b)
		c := Change{Section: "packing", Key: "fill_ratio", Metric: "pts", A: 100 * pa.FillRatio, B: 100 * pb.FillRatio}
		if t.FillDropPts >= 0 && c.A-c.B > t.FillDropPts {
			c.Regression, c.Why = true, fmt.Sprintf("fill fell %.1f points > %g", c.A-c.B, t.FillDropPts)
		}
		add(c)
		add(Change{Section: "packing", Key: "dropped_too_long", Metric: "samples", A: float64(pa.Dropped), B: float64(pb.Dropped)})
		add(Change{Section: "packing", Key: "packed", Metric: "samples", A: float64(pa.Packed), B: float64(pb.Packed)})
	}
	return d
}

// WriteText prints the diff as a table, regressions first.
func (d *Diff) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A: %s\nB: %s\n", d.A, d.B)
	cs := append([]Change(nil), d.Changes...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Regression && !cs[j].Regression })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tsection\tkey\tmetric\tA\tB\tnote")
	for _, c := range cs {
		flag := ""
		if c.Regression {
			flag = "REGRESSION"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", flag, c.Section, c.Key, c.Metric, num(c.A), num(c.B), c.Why)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d changes, %d regressions\n", len(d.Changes), d.Regressions)
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

func funnelByStage(r *Report) map[string]FunnelStep {
	m := map[string]FunnelStep{}
	for _, f := range r.Funnel {
		m[f.Stage] = f
	}
	return m
}

func rejectionsByKey(r *Report) map[string]int64 {
	m := map[string]int64{}
	for _, x := range r.Rejections {
		m[x.Stage+" / "+x.Gate+" / "+x.Reason] += x.Count
	}
	return m
}

func sharesOf(c *Coverage, dim string) map[string]Share {
	m := map[string]Share{}
	if c == nil {
		return m
	}
	var s []Share
	switch dim {
	case "domain":
		s = c.Domain
	case "family":
		s = c.Family
	case "route":
		s = c.Route
	}
	for _, x := range s {
		m[x.Key] = x
	}
	return m
}

func verdictsByKey(r *Report) map[string]VerifierStats {
	m := map[string]VerifierStats{}
	for _, v := range r.Verdicts {
		m[v.Stage+" / "+v.Verifier] = v
	}
	return m
}

func stagesByName(r *Report) map[string]StageReport {
	m := map[string]StageReport{}
	for _, s := range r.Stages {
		m[s.Name] = s
	}
	return m
}

func packingOrZero(r *Report) Packing {
	if r.Packing == nil {
		return Packing{}
	}
	return *r.Packing
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
