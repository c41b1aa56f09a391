package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

// BuildOptions are `crucible build`'s flags.
type BuildOptions struct {
	Config  string
	Shard   string
	Stages  []string
	Force   bool
	WorkDir string
	Out     io.Writer
	Bars    *engine.Bars
}

func newBuildCmd() *cobra.Command {
	var o BuildOptions
	var ex executorFlags
	c := &cobra.Command{
		Use:   "build --config FILE",
		Short: "Run a pipeline; stages whose manifests match their inputs and config are skipped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.Bars = cmd.OutOrStdout(), progressBars()
			return runBuildWithExecutor(cmd.Context(), o, ex)
		},
	}
	c.Flags().StringVar(&o.Config, "config", "", "pipeline YAML file (required)")
	c.Flags().StringVar(&o.Shard, "shard", "", "run the deterministic subset i/N of each stage's inputs")
	c.Flags().StringSliceVar(&o.Stages, "stage", nil, "run only these stages (their upstreams must be complete)")
	c.Flags().BoolVar(&o.Force, "force", false, "redo stages even when their manifests are current")
	c.Flags().StringVar(&o.WorkDir, "work-dir", "", "override the pipeline's work_dir")
	addExecutorFlags(c, &ex)
	_ = c.MarkFlagRequired("config")
	return c
}

func runBuild(ctx context.Context, o BuildOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	sh, err := engine.ParseShard(o.Shard)
	if err != nil {
		return err
	}
	reg := newRegistry()
	cfg, err := engine.LoadPipeline(o.Config, reg)
	if err != nil {
		return err
	}
	if o.WorkDir != "" {
		abs, err := filepath.Abs(o.WorkDir)
		if err != nil {
			return err
		}
		cfg.WorkDir = abs
	}
	var pf engine.ProgressFactory
	if o.Bars != nil {
		pf = o.Bars.Factory()
		defer o.Bars.Wait()
	}
	r := &engine.Runner{Registry: reg}
	sum, err := r.Run(ctx, cfg, engine.RunOptions{Shard: sh, Writer: cfg.WriterOptions(), Only: o.Stages, Force: o.Force, Progress: pf, Log: slog.Default()})
	if sum != nil {
		printRunSummary(o.Out, sum, sh)
	}
	// A failed yield check leaves the stage committed: the report shows it.
	if err == nil || errors.Is(err, engine.ErrYield) {
		if rerr := writeBuildReport(ctx, o.Out, sum); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// maxPrintedCounts bounds the counters printed per stage; all of them are in
// run-summary.json and the report.
const maxPrintedCounts = 8

func printRunSummary(w io.Writer, sum *engine.RunSummary, sh engine.Shard) {
	fmt.Fprintf(w, "\npipeline %s", sum.Pipeline)
	if sh.Count > 1 {
		fmt.Fprintf(w, " (shard %s)", sh)
	}
	fmt.Fprintln(w)
	for _, s := range sum.Stages {
		fmt.Fprintf(w, "  %-14s %-8s %6.2fs", s.Name, s.Status, s.Seconds)
		kinds := make([]string, 0, len(s.Rows))
		for k := range s.Rows {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(w, "  %s=%d", k, s.Rows[k])
		}
		fmt.Fprintln(w)
		if y := s.Yield; y != nil {
			limit := "none"
			if y.MaxRejectFraction != nil {
				limit = fmt.Sprintf("%g", *y.MaxRejectFraction)
			}
			fmt.Fprintf(w, "      yield: %d in, %d passed on, %d rejected (%.1f%%, max_reject_fraction %s)", y.Input, y.Output, y.Rejected, 100*y.RejectFraction, limit)
			if y.Failure != "" {
				fmt.Fprintf(w, "  FAILED: %s", y.Failure)
			}
			fmt.Fprintln(w)
		}
		if f := gateFunnel(s.Counts); f != "" {
			fmt.Fprintf(w, "      funnel: %s\n", f)
		}
		keys := make([]string, 0, len(s.Counts))
		for k := range s.Counts {
			if !strings.HasPrefix(k, "yield.") { // shown on the yield line
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == maxPrintedCounts {
				fmt.Fprintf(w, "      … %d more counts in the run summary\n", len(keys)-i)
				break
			}
			fmt.Fprintf(w, "      %-28s %d\n", k, s.Counts[k])
		}
	}
	fmt.Fprintf(w, "shards and manifests: %s/<stage>/\nrun summary: %s\n", sum.WorkDir, filepath.Join(sum.WorkDir, summaryFile(sh)))
}

func summaryFile(sh engine.Shard) string {
	if sh.Count <= 1 {
		return "run-summary.json"
	}
	return fmt.Sprintf("run-summary-%04d-of-%04d.json", sh.Index, sh.Count)
}

// gateFunnel renders an admission stage's funnel from its own counters
// ("seeds", "candidates", "gate<k>.<name>.passed", "admitted"): seeds →
// candidates → each gate in order → admitted. The seeds are the parents the
// stage read, so the line reads the same whichever stages this run ran.
// Empty for stages without gates.
func gateFunnel(counts map[string]int64) string {
	type gate struct {
		k      int
		name   string
		passed int64
	}
	var gates []gate
	for key, v := range counts {
		var k int
		var rest string
		if _, err := fmt.Sscanf(key, "gate%d.%s", &k, &rest); err != nil || !strings.HasSuffix(rest, ".passed") {
			continue
		}
		gates = append(gates, gate{k, strings.TrimSuffix(rest, ".passed"), v})
	}
	if len(gates) == 0 {
		return ""
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].k < gates[j].k })
	var parts []string
	if n, ok := counts["seeds"]; ok {
		parts = append(parts, fmt.Sprintf("seeds %d", n))
	}
	if c, ok := counts["candidates"]; ok {
		parts = append(parts, fmt.Sprintf("candidates %d", c))
	}
	for _, g := range gates {
		parts = append(parts, fmt.Sprintf("%s %d", g.name, g.passed))
	}
	if a, ok := counts["admitted"]; ok {
		parts = append(parts, fmt.Sprintf("admitted %d", a))
	}
	return strings.Join(parts, " → ")
}
