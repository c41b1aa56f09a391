package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/report"
)

// errRegression marks a diff that crossed a threshold (exit code 6).
var errRegression = errors.New("regression")

// ReportBuildOptions are `crucible report build`'s flags.
type ReportBuildOptions struct {
	WorkDir string
	Config  report.Config
	Out     io.Writer
}

// ReportDiffOptions are `crucible report diff`'s flags.
type ReportDiffOptions struct {
	RunA, RunB string
	Thresholds []string // name=value
	JSON       string   // write the diff as JSON here too
	Out        io.Writer
}

func newReportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Build reports: (re)generate a build's report, compare two builds",
		Long: `A build's report is report.html (self-contained: plots inline, no network)
and report.json next to its stage directories, plus one row per run in the
history table (<workdir>/../history/*.parquet unless --history-dir is given).

Exit codes of 'diff': 0 no regression beyond the thresholds, 6 at least one
regression, 2 bad flags, 3 a run directory without a readable report or
run summary.`,
	}
	c.AddCommand(newReportBuildCmd(), newReportDiffCmd())
	return c
}

func newReportBuildCmd() *cobra.Command {
	o := ReportBuildOptions{Config: report.DefaultConfig()}
	c := &cobra.Command{
		Use:   "build WORKDIR",
		Short: "(Re)generate report.html, report.json and the history row of a finished build",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.WorkDir, o.Out = args[0], cmd.OutOrStdout()
			return runReportBuild(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&o.Config.HistoryDir, "history-dir", "", "run-history folder (default <workdir>/../history)")
	c.Flags().BoolVar(&o.Config.NoHistory, "no-history", false, "do not add a history row")
	return c
}

func newReportDiffCmd() *cobra.Command {
	var o ReportDiffOptions
	c := &cobra.Command{
		Use:   "diff RUN_A RUN_B [--threshold name=value ...]",
		Short: "Compare two builds (A the baseline, B the new one); exit 6 on a regression",
		Long: `Compares counts per stage and gate, coverage shares, verdict rates,
throughput and packing fill of two build work directories (their report.json,
or a report built from their shards when it is missing). Thresholds, with
defaults (a negative value turns a check off):

  rows_drop_pct=10        a funnel step's rows fell by more than this %
  rejections_rise_pct=50  a stage/gate/reason rejection count rose by more %
  coverage_drop_pts=5     a domain's or family's share fell by more points
  pass_rate_drop_pts=5    a verifier's pass rate fell by more points
  infra_rate_rise_pts=2   a verifier's infrastructure-fault rate rose by more points
  throughput_drop_pct=50  a stage's rows/s fell by more than this %
  fill_drop_pts=5         the packing fill ratio fell by more points
  min_count=10            counts below this in both runs are never regressions
  min_seconds=5           stages faster than this in both runs: throughput not judged`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.RunA, o.RunB, o.Out = args[0], args[1], cmd.OutOrStdout()
			return runReportDiff(cmd.Context(), o)
		},
	}
	c.Flags().StringArrayVar(&o.Thresholds, "threshold", nil, "override a threshold: name=value (repeatable)")
	c.Flags().StringVar(&o.JSON, "json", "", "also write the diff as JSON to this file")
	return c
}

func runReportBuild(ctx context.Context, o ReportBuildOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	abs, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return err
	}
	r, outs, err := report.Generate(ctx, abs, nil, o.Config)
	if err != nil {
		return err
	}
	printReportOutputs(o.Out, r, outs)
	return nil
}

// writeBuildReport is the hook `crucible build` calls after a successful
// run. A shard part of a sharded build writes none: the parts share the
// work dir, and the report of the whole build comes from
// `crucible report build WORKDIR` once every part has finished.
func writeBuildReport(ctx context.Context, w io.Writer, sum *engine.RunSummary) error {
	if sum == nil || sum.Shard != "" {
		return nil
	}
	r, outs, err := report.Generate(ctx, sum.WorkDir, sum, report.DefaultConfig())
	if err != nil {
		return fmt.Errorf("build report (the shards are committed; retry with `crucible report build %s`): %w", sum.WorkDir, err)
	}
	printReportOutputs(w, r, outs)
	return nil
}

func printReportOutputs(w io.Writer, r *report.Report, outs report.Outputs) {
	fmt.Fprintf(w, "report: %s\nfigures: %s\n", outs.HTML, outs.JSON)
	if outs.History != "" {
		fmt.Fprintf(w, "history row: %s\n", outs.History)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func runReportDiff(ctx context.Context, o ReportDiffOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	t := report.DefaultThresholds()
	if err := t.Set(o.Thresholds...); err != nil {
		return err
	}
	a, err := report.Load(ctx, o.RunA)
	if err != nil {
		return fmt.Errorf("run A: %w", err)
	}
	b, err := report.Load(ctx, o.RunB)
	if err != nil {
		return fmt.Errorf("run B: %w", err)
	}
	d := report.Compare(a, b, t)
	d.WriteText(o.Out)
	if o.JSON != "" {
		data, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		if err := engine.WriteFileAtomic(o.JSON, append(data, '\n')); err != nil {
			return err
		}
	}
	if d.Regressions > 0 {
		return withCode(exitFindings, fmt.Errorf("%w: %d regressions from %s to %s", errRegression, d.Regressions, o.RunA, o.RunB))
	}
	return nil
}
