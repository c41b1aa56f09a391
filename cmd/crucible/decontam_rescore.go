package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/engine"
)

// DecontamRescoreOptions are `crucible decontam rescore`'s flags.
type DecontamRescoreOptions struct {
	Dir       string // a `decontam check` output directory
	Threshold float64
	Out       string // optional: the match set filtered to score ≥ Threshold
	Writer    engine.WriterOptions
	Stdout    io.Writer
}

func newDecontamRescoreCmd() *cobra.Command {
	o := DecontamRescoreOptions{Writer: engine.DefaultWriterOptions()}
	c := &cobra.Command{
		Use:   "rescore DIR --threshold T [--out DIR2]",
		Short: "Re-threshold the matches of a 'decontam check' without reading the corpus or the benchmark; exit code 6 when contamination ≥ T remains",
		Long: `DIR is the output of 'decontam check' (manifest.json, decontam.json and
matches-*.parquet). Every match scoring at least the check's --report-min was
written there, so any threshold T from that floor (recorded in decontam.json
as "floor") up to 1 gives exactly the contaminated set and the summary a
fresh check at --threshold T would. A T below the floor is a usage error
(exit 2): those matches were never written; rerun check with a lower
--report-min.

With --out DIR2, the matches scoring ≥ T are written there (matches-*.parquet,
contaminated set, decontam.json with floor T, manifest.json last), so DIR2
can itself be rescored from T up.

Exit codes: 0 no match ≥ T, 6 contamination found, 2 bad flags or T below
the floor, 3 DIR unreadable or not a check output, 4 DIR2 not writable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Stdout = args[0], cmd.OutOrStdout()
			if !cmd.Flags().Changed("threshold") {
				return fmt.Errorf("%w: --threshold is required", errUsage)
			}
			return runDecontamRescore(cmd.Context(), o)
		},
	}
	c.Flags().Float64Var(&o.Threshold, "threshold", 0, "score at or above which a match is contamination (required; not below the check's report_min)")
	c.Flags().StringVar(&o.Out, "out", "", "write the matches scoring ≥ --threshold to this directory")
	return c
}

func runDecontamRescore(ctx context.Context, o DecontamRescoreOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out != "" {
		a, _ := filepath.Abs(o.Out)
		b, _ := filepath.Abs(o.Dir)
		if a == b {
			return fmt.Errorf("%w: --out %s is the match set being rescored", errUsage, o.Out)
		}
	}
	mpath := filepath.Join(o.Dir, "manifest.json")
	man, err := engine.ReadManifest(mpath)
	if err != nil {
		return fmt.Errorf("%w: %s: %v (not a complete decontam check output)", engine.ErrInput, mpath, err)
	}
	if man.Type != "decontam_check" {
		return fmt.Errorf("%w: %s: type %q, want decontam_check", engine.ErrInput, mpath, man.Type)
	}
	rec, err := decontam.ReadRunRecord(o.Dir)
	if err != nil {
		return err
	}
	rs, err := rec.NewRescore(o.Threshold)
	if err != nil {
		return err
	}
	var w *engine.ShardWriter[decontam.Match]
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return fmt.Errorf("%w: %v", engine.ErrIO, err)
		}
		if err := clearOutputs(o.Out, "matches"); err != nil {
			return err
		}
		if w, err = engine.NewShardWriter[decontam.Match](o.Out, "matches", "matches", o.Writer); err != nil {
			return err
		}
	}
	abort := func(err error) error {
		if w != nil {
			w.Abort()
		}
		return err
	}
	kept := make([]int64, len(rec.Benchmarks))
	for _, sh := range man.Shards {
		if sh.Kind != "matches" {
			continue
		}
		p := filepath.Join(o.Dir, sh.Path)
		r, err := engine.OpenParquet[decontam.Match](ctx, p, nil)
		if err != nil {
			return abort(err)
		}
		row := int64(0)
		for {
			rows, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return abort(err)
			}
			for _, m := range rows {
				row++
				m, ok, err := rs.Add(m, fmt.Sprintf("%s row %d", p, row))
				if err != nil {
					r.Close()
					return abort(err)
				}
				if ok && w != nil {
					if err := w.Write(m); err != nil {
						r.Close()
						return abort(err)
					}
				}
			}
		}
		r.Close()
		if row != sh.Rows {
			return abort(fmt.Errorf("%w: %s: %d rows, %s says %d", engine.ErrInput, p, row, mpath, sh.Rows))
		}
	}
	sums, err := rs.Summaries()
	if err != nil {
		return abort(err)
	}
	var contaminated int64
	for i, s := range sums {
		fmt.Fprint(o.Stdout, s.String())
		kept[i] = s.Contaminated
		contaminated += s.Contaminated
	}
	if w != nil {
		infos, err := w.Close()
		if err != nil {
			return err
		}
		out := decontam.NewRunRecord(sums)
		out.Floor = o.Threshold
		for i := range out.Benchmarks {
			out.Benchmarks[i].Matches = kept[i]
		}
		m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "decontam", Type: "decontam_check",
			Inputs: []engine.InputRef{}, Shards: infos, Counts: map[string]int64{}}
		for _, s := range sums {
			m.Counts["matches."+s.Benchmark] = s.Contaminated
			m.Counts["contaminated."+s.Benchmark] = s.Contaminated
		}
		if err := decontam.WriteRunRecord(o.Out, out); err != nil {
			return err
		}
		if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "matches ≥ %.2f: %s\n", o.Threshold, o.Out)
	}
	if contaminated > 0 {
		return withCode(exitFindings, fmt.Errorf("%w: %d matches with score ≥ %.2f", errContaminated, contaminated, o.Threshold))
	}
	return nil
}
