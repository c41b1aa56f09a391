package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/report"
)

// buildSeeds runs ingest + filter on the bundled seeds, keeping the given
// domains, and returns the work dir.
func buildSeeds(t *testing.T, dir, domains string) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	cfg := filepath.Join(dir, "p.yaml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, []byte(fmt.Sprintf(`name: seeds
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: keep
    type: filter
    from: [ingest]
    config: {domains: [%s]}
`, filepath.Join(root, "examples", "seeds"), domains)), 0o644)
	if err := runBuild(context.Background(), BuildOptions{Config: cfg, Out: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "work")
}

func TestReportBuildAndDiff(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	runA := buildSeeds(t, filepath.Join(base, "a"), "rtl, kernel")
	// The regression: run B's filter drops the kernel seeds.
	runB := buildSeeds(t, filepath.Join(base, "b"), "rtl")

	var out bytes.Buffer
	hist := filepath.Join(base, "history")
	for _, run := range []string{runA, runB} {
		out.Reset()
		err := runReportBuild(ctx, ReportBuildOptions{WorkDir: run, Config: report.Config{HistoryDir: hist}, Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), filepath.Join(run, "report.html")) {
			t.Fatalf("report build output: %s", out.String())
		}
	}
	for _, run := range []string{runA, runB} {
		r, err := report.Load(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		checkReportAgainstShards(t, run, r)
	}
	// Both runs are of pipeline "seeds": B's report shows the trend of both.
	rb, err := report.Load(ctx, runB)
	if err != nil || len(rb.Trend) != 2 || rb.Trend[0].FinalItems != 35 || rb.Trend[1].FinalItems != 30 {
		t.Fatalf("trend of run B: %+v, %v", rb.Trend, err)
	}
	if page, _ := os.ReadFile(filepath.Join(runB, report.HTMLFile)); !strings.Contains(string(page), `alt="Final items per run"`) {
		t.Error("run B's page lacks the trend plot")
	}
	rows, err := report.ReadHistory(hist)
	if err != nil || len(rows) != 2 || rows[0].FinalItems != 35 || rows[1].FinalItems != 30 {
		t.Fatalf("history after two runs: %+v, %v", rows, err)
	}

	// Same run on both sides: nothing changed, exit 0.
	out.Reset()
	if err := runReportDiff(ctx, ReportDiffOptions{RunA: runA, RunB: runA, Out: &out}); err != nil {
		t.Fatalf("A vs A: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "0 changes, 0 regressions") {
		t.Fatalf("A vs A output:\n%s", out.String())
	}

	// A -> B: the funnel lost the kernel seeds, a new rejection reason.
	out.Reset()
	jsonPath := filepath.Join(base, "diff.json")
	err = runReportDiff(ctx, ReportDiffOptions{RunA: runA, RunB: runB, Out: &out, JSON: jsonPath, Thresholds: []string{"min_count=1"}})
	if code := exitCode(ctx, err); code != exitFindings {
		t.Fatalf("A -> B: exit %d (%v), want %d\n%s", code, err, exitFindings, out.String())
	}
	for _, want := range []string{"REGRESSION  funnel      keep", "new rejection reason", "coverage    domain kernel"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
	if st, err := os.Stat(jsonPath); err != nil || st.Size() == 0 {
		t.Errorf("diff JSON not written: %v", err)
	}
	// Loose thresholds accept the same change.
	out.Reset()
	loose := []string{"rows_drop_pct=50", "rejections_rise_pct=-1", "coverage_drop_pts=100"}
	if err := runReportDiff(ctx, ReportDiffOptions{RunA: runA, RunB: runB, Out: &out, Thresholds: loose}); err != nil {
		t.Fatalf("loose thresholds: %v\n%s", err, out.String())
	}

	// Bad flags and bad runs map to their exit codes.
	err = runReportDiff(ctx, ReportDiffOptions{RunA: runA, RunB: runB, Out: &out, Thresholds: []string{"rows_drop=5", "min_count=x"}})
	if exitCode(ctx, err) != exitUsage || !strings.Contains(err.Error(), "rows_drop") || !strings.Contains(err.Error(), "min_count") {
		t.Errorf("bad thresholds: %v", err)
	}
	err = runReportDiff(ctx, ReportDiffOptions{RunA: runA, RunB: base, Out: &out})
	if exitCode(ctx, err) != exitInput {
		t.Errorf("a directory that is no build: exit %d (%v)", exitCode(ctx, err), err)
	}
}

func TestReportCommandWiring(t *testing.T) {
	c := newReportCmd()
	var names []string
	for _, s := range c.Commands() {
		names = append(names, s.Name())
	}
	if strings.Join(names, ",") != "build,diff" {
		t.Fatalf("report subcommands: %v", names)
	}
	// The build hook writes nothing for a shard part of a sharded build.
	if err := writeBuildReport(context.Background(), &bytes.Buffer{}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReportOfDemoBuild builds the bundled demo pipeline (examples/nightly.yaml,
// what `make demo` runs) into a temp dir and checks the report's numbers
// against counts taken directly from the shards.
func TestReportOfDemoBuild(t *testing.T) {
	root := testenv.RepoRoot(t)
	cfg := filepath.Join(root, "examples", "nightly.yaml")
	if _, err := os.Stat(cfg); err != nil {
		t.Skipf("no demo pipeline at %s: %v", cfg, err)
	}
	if testing.Short() {
		t.Skip("the demo build runs real verifiers; skipped with -short")
	}
	ctx := context.Background()
	work := filepath.Join(t.TempDir(), "work")
	if err := runBuild(ctx, BuildOptions{Config: cfg, WorkDir: work, Out: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runReportBuild(ctx, ReportBuildOptions{WorkDir: work, Config: report.Config{NoHistory: true}, Out: &out}); err != nil {
		t.Fatal(err)
	}
	r, err := report.Load(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	checkReportAgainstShards(t, work, r)
	checkReportWithDuckDB(t, work, r)
	// Every evolution operator, and re-specification, admits items over the
	// bundled seeds (ops/gates' TestAdmitBundledSeedsEveryOperator checks
	// the admission invariants on a covering subset of the seeds).
	admitted := map[string]int64{}
	for _, o := range r.Operators {
		if o.AdmitStage != "" {
			admitted[o.Operator] += o.Admitted
		}
	}
	for _, op := range append(evolve.DefaultOperatorNames(), evolve.OpRespecify) {
		if admitted[op] == 0 {
			t.Errorf("operator %s: no item admitted by the demo build (operators: %+v)", op, r.Operators)
		}
	}
	page, err := os.ReadFile(filepath.Join(work, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"funnel", "rejections", "operators", "coverage", "verdicts", "lengths", "packing", "stages", "toolchain", "config"} {
		if !strings.Contains(string(page), `<section id="`+id+`">`) {
			t.Errorf("page lacks section %s", id)
		}
	}
}

// checkReportAgainstShards recounts, for any pipeline, the funnel, the
// rejections and the verdicts of every stage from its shards.
func checkReportAgainstShards(t *testing.T, work string, r *report.Report) {
	t.Helper()
	var rejTotal int64
	for _, x := range r.Rejections {
		rejTotal += x.Count
	}
	var rejShards int64
	for i, st := range r.Stages {
		so, err := engine.LoadStageOutput(filepath.Join(work, st.Name))
		if err != nil {
			t.Fatal(err)
		}
		rej, err := engine.ReadAll[engine.Rejection](so.Shards("rejections")...)
		if err != nil {
			t.Fatal(err)
		}
		rejShards += int64(len(rej))
		if r.Funnel[i].Rejected != int64(len(rej)) {
			t.Errorf("stage %s: %d rejected in the report, %d rows in its shards", st.Name, r.Funnel[i].Rejected, len(rej))
		}
		var items int64
		for _, k := range []string{"items", "train", "validation"} {
			rows, err := engine.ReadAll[engine.Item](so.Shards(k)...)
			if err != nil {
				t.Fatal(err)
			}
			items += int64(len(rows))
		}
		if items > 0 && r.Funnel[i].Rows != items {
			t.Errorf("stage %s: funnel %d, %d items in its shards", st.Name, r.Funnel[i].Rows, items)
		}
		evs, err := engine.ReadAll[engine.Evidence](so.Shards("evidence")...)
		if err != nil {
			t.Fatal(err)
		}
		var pass, total int64
		for _, v := range r.Verdicts {
			if v.Stage == st.Name {
				pass, total = pass+v.Pass, total+v.Total
			}
		}
		var shardPass int64
		for _, e := range evs {
			if e.Status == engine.StatusPass {
				shardPass++
			}
		}
		if total != int64(len(evs)) || pass != shardPass {
			t.Errorf("stage %s: report %d verdicts (%d pass), shards %d (%d pass)", st.Name, total, pass, len(evs), shardPass)
		}
	}
	if rejTotal != rejShards {
		t.Errorf("rejections: report %d, shards %d", rejTotal, rejShards)
	}
}
