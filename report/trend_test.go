package report

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
)

// Issue 16.8: two runs that start in the same second are two history rows,
// and the trend keeps reference self-checks and rollouts apart instead of
// one pass rate over both.
func TestHistoryRowsAndPassRates(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 5, 1, 3, 0, 0, 100_000_000, time.UTC)
	mk := func(started time.Time) *Report {
		return &Report{Pipeline: "nightly", WorkDir: "/w", Started: started, Finished: started.Add(time.Minute),
			Funnel: []FunnelStep{{Stage: "ingest", Rows: 10}},
			Verdicts: []VerifierStats{
				{Stage: "verify-rtl", Verifier: "rtl/differential", Subject: SubjectReference, Total: 30, Pass: 30},
				{Stage: "select", Verifier: "rtl/differential", Subject: SubjectRollout, Total: 50, Pass: 10},
			}}
	}
	ctx := context.Background()
	for _, st := range []time.Time{start, start.Add(400 * time.Millisecond)} {
		if _, err := AppendHistory(ctx, dir, mk(st)); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var runs, refN, rollN int64
	var refRate, rollRate float64
	q := fmt.Sprintf(`SELECT count(*), min(reference_verdicts), min(reference_pass_rate), min(rollout_verdicts), min(rollout_pass_rate) FROM read_parquet('%s/*.parquet')`, dir)
	if err := db.QueryRow(q).Scan(&runs, &refN, &refRate, &rollN, &rollRate); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Errorf("two runs in the same second left %d history rows", runs)
	}
	if refN != 30 || refRate != 1 || rollN != 50 || rollRate != 0.2 {
		t.Errorf("history pass rates: reference %d %.3f, rollout %d %.3f; want 30 1.000, 50 0.200", refN, refRate, rollN, rollRate)
	}
	tr, err := trend(dir, mk(start), 10)
	if err != nil || len(tr) != 2 || tr[1].ReferencePassRate != 1 || tr[1].RolloutPassRate != 0.2 {
		t.Fatalf("trend %+v, %v", tr, err)
	}
	r := mk(start)
	r.Trend = tr
	page, err := RenderHTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Reference pass rate per run", "Rollout pass rate per run", "<td class=\"n\">100.0%</td><td class=\"n\">20.0%</td>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Issue 16.8: an axis is labelled at several steps, not only at its ends
// (the funnel axis read only "0" and "250").
func TestAxisLabels(t *testing.T) {
	for _, r := range [][2]float64{{0, 250 * 1.3}, {0, 7}, {0, 1e6}, {0.5, 1.5}, {0, 183}} {
		var labels []string
		for _, tk := range (plainTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if len(labels) < 4 || len(labels) > 10 {
			t.Errorf("axis %v: labels %v, want 4 to 10", r, labels)
		}
	}
	var _ plot.Ticker = plainTicks{}
}
