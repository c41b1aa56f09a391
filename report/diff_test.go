package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func baseReport() *Report {
	return &Report{
		WorkDir: "a",
		Stages: []StageReport{{Name: "ingest", Status: "ran", Seconds: 10, RowsPerSecond: 100},
			{Name: "verify", Status: "ran", Seconds: 20, RowsPerSecond: 50}},
		Funnel:     []FunnelStep{{Stage: "ingest", Kind: "items", Rows: 1000}, {Stage: "verify", Kind: "items", Rows: 800, Rejected: 200}},
		Rejections: []RejectionCount{{Stage: "verify", Gate: "verdict", Reason: "compile", Count: 200}},
		Coverage: &Coverage{Stage: "verify", Items: 800,
			Domain: []Share{{Key: "rtl", Count: 600, Share: 0.75}, {Key: "kernel", Count: 200, Share: 0.25}},
			Family: []Share{{Key: "rtl/fifo", Count: 600, Share: 0.75}, {Key: "kernel/gemm", Count: 200, Share: 0.25}}},
		Verdicts: []VerifierStats{{Stage: "verify", Verifier: "rtl/differential", Total: 1000, Pass: 800, PassRate: 0.8}},
		Packing:  &Packing{FillRatio: 0.95, Packed: 700},
	}
}

// clone deep-copies through the slices the tests mutate.
func clone(r *Report) *Report {
	c := *r
	c.WorkDir = "b"
	c.Stages = append([]StageReport(nil), r.Stages...)
	c.Funnel = append([]FunnelStep(nil), r.Funnel...)
	c.Rejections = append([]RejectionCount(nil), r.Rejections...)
	cov := *r.Coverage
	cov.Domain = append([]Share(nil), r.Coverage.Domain...)
	cov.Family = append([]Share(nil), r.Coverage.Family...)
	c.Coverage = &cov
	c.Verdicts = append([]VerifierStats(nil), r.Verdicts...)
	p := *r.Packing
	c.Packing = &p
	return &c
}

func TestCompareFlagsEachRegression(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Report)
		section string
		off     string // the threshold setting that turns the check off
	}{
		{"funnel drop", func(r *Report) { r.Funnel[1].Rows = 700 }, "funnel", "rows_drop_pct=-1"},
		{"rejections rise", func(r *Report) { r.Rejections[0].Count = 400 }, "rejections", "rejections_rise_pct=-1"},
		{"new rejection reason", func(r *Report) {
			r.Rejections = append(r.Rejections, RejectionCount{Stage: "verify", Gate: "verdict", Reason: "timeout", Count: 30})
		}, "rejections", "rejections_rise_pct=-1"},
		{"coverage share", func(r *Report) {
			r.Coverage.Domain[1] = Share{Key: "kernel", Count: 100, Share: 100.0 / 700}
			r.Coverage.Domain[0].Share = 600.0 / 700
		}, "coverage", "coverage_drop_pts=-1"},
		{"pass rate", func(r *Report) { r.Verdicts[0].Pass, r.Verdicts[0].PassRate = 700, 0.7 }, "verdicts", "pass_rate_drop_pts=-1"},
		{"infra faults", func(r *Report) { r.Verdicts[0].InfraTotal, r.Verdicts[0].InfraRate = 50, 0.05 }, "verdicts", "infra_rate_rise_pts=-1"},
		{"throughput", func(r *Report) { r.Stages[1].RowsPerSecond = 20 }, "throughput", "throughput_drop_pct=-1"},
		{"fill", func(r *Report) { r.Packing.FillRatio = 0.80 }, "packing", "fill_drop_pts=-1"},
	}
	a := baseReport()
	if d := Compare(a, clone(a), DefaultThresholds()); d.Regressions != 0 || len(d.Changes) != 0 {
		t.Fatalf("identical runs differ: %+v", d)
	}
	for _, c := range cases {
		b := clone(a)
		c.mutate(b)
		d := Compare(a, b, DefaultThresholds())
		if d.Regressions == 0 {
			t.Errorf("%s: not flagged: %+v", c.name, d.Changes)
			continue
		}
		for _, ch := range d.Changes {
			if ch.Regression && ch.Section != c.section {
				t.Errorf("%s: unexpected regression %+v", c.name, ch)
			}
		}
		th := DefaultThresholds()
		if err := th.Set(c.off); err != nil {
			t.Fatal(err)
		}
		if d := Compare(a, b, th); d.Regressions != 0 {
			t.Errorf("%s: still flagged with %s: %+v", c.name, c.off, d.Changes)
		}
	}

	// Improvements and changes within thresholds are listed, not flagged.
	b := clone(a)
	b.Funnel[1].Rows, b.Verdicts[0].PassRate, b.Stages[1].RowsPerSecond = 850, 0.85, 45
	d := Compare(a, b, DefaultThresholds())
	if d.Regressions != 0 || len(d.Changes) != 3 {
		t.Fatalf("improvements: %+v", d.Changes)
	}
	// Small counts are never regressions (min_count), and a skipped stage's
	// throughput is not compared.
	small, smallB := baseReport(), baseReport()
	small.Funnel[1].Rows, smallB.Funnel[1].Rows = 8, 2
	smallB.Stages[1].Status, smallB.Stages[1].RowsPerSecond = "skipped", 0
	if d := Compare(small, smallB, DefaultThresholds()); d.Regressions != 0 {
		t.Fatalf("small counts flagged: %+v", d.Changes)
	}
	var buf bytes.Buffer
	Compare(a, func() *Report { r := clone(a); r.Funnel[1].Rows = 100; return r }(), DefaultThresholds()).WriteText(&buf)
	if !strings.Contains(buf.String(), "REGRESSION") || !strings.Contains(buf.String(), "rows fell 87.5% > 10%") {
		t.Fatalf("text output:\n%s", buf.String())
	}
}

func TestThresholdsSet(t *testing.T) {
	th := DefaultThresholds()
	if err := th.Set("rows_drop_pct=2.5", " min_count = 3"); err != nil || th.RowsDropPct != 2.5 || th.MinCount != 3 {
		t.Fatalf("%v %+v", err, th)
	}
	err := th.Set("nope=1", "fill_drop_pts=x", "min_count=1.5", "rows_drop_pct")
	if !errors.Is(err, engine.ErrConfig) {
		t.Fatalf("want ErrConfig, got %v", err)
	}
	for _, want := range []string{"nope", "fill_drop_pts", "min_count", "want name=value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
