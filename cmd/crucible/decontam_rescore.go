package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	Force     bool // rescore into --out even when its manifest there is current
}

func newDecontamRescoreCmd() *cobra.Command {
	o := DecontamRescoreOptions{Writer: engine.DefaultWriterOptions()}
	var sf *stageFlags
	cfg := decontamRescoreConfig{Compression: o.Writer.Compression, Level: o.Writer.CompressionLevel}
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
can itself be rescored from T up. That write runs as a one-stage pipeline
reading DIR (its manifest and decontam.json are the fingerprint): a rerun
with DIR and T unchanged finds DIR2's manifest current and skips (exit
code still 6 when the skipped rescore had found contamination); --force
writes it anyway. Without --out nothing is written.

--set key=value sets a key of the rescore's config: threshold (--set
threshold=0.7 is --threshold 0.7), compression and compression_level (the
codec of DIR2's shards; the engine's default unless set).

Exit codes: 0 no match ≥ T, 6 contamination found, 2 bad flags or T below
the floor, 3 DIR unreadable or not a check output, 4 DIR2 not writable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Stdout = args[0], cmd.OutOrStdout()
			if err := sf.apply(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("threshold") && !setsKey(sf, "threshold") {
				return fmt.Errorf("%w: --threshold is required", errUsage)
			}
			o.Threshold, o.Writer.Compression, o.Writer.CompressionLevel = cfg.Threshold, cfg.Compression, cfg.Level
			if err := o.Writer.Validate(); err != nil {
				return fmt.Errorf("%w: --set compression/compression_level: %v", errUsage, err)
			}
			return runDecontamRescore(cmd.Context(), o)
		},
	}
	sf = bindStageFlags(c.Flags(), &cfg, decontamRescoreFlags)
	c.Flags().StringVar(&o.Out, "out", "", "write the matches scoring ≥ --threshold to this directory")
	c.Flags().BoolVar(&o.Force, "force", false, "with --out: rescore even when the manifest in --out is current")
	return c
}

// decontamRescoreFlags: --threshold keeps its help text; the codec of the
// rescored shards (the engine's default unless set) has no flag, only
// --set compression=zstd|snappy|none and --set compression_level=N.
var decontamRescoreFlags = map[string]flagDoc{
	"threshold":         {Help: "score at or above which a match is contamination (required; not below the check's report_min)"},
	"compression":       {Skip: true},
	"compression_level": {Skip: true},
}

// setsKey reports whether a --set on the command line names key.
func setsKey(sf *stageFlags, key string) bool {
	for _, kv := range sf.sets {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// decontamRescoreConfig is what decides a rescored match set beyond its
// input (the check output's manifest and decontam.json): its fingerprint.
type decontamRescoreConfig struct {
	Threshold   float64 `yaml:"threshold"`
	Compression string  `yaml:"compression"`
	Level       int     `yaml:"compression_level"`
}

// The manifest types a match set that rescore reads has: a check's, and a
// rescored one's (which can be rescored again from its floor up).
const (
	checkManifestTy   = "decontam_check"
	rescoreManifestTy = "decontam_rescore"
)

func runDecontamRescore(ctx context.Context, o DecontamRescoreOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out != "" && samePath(o.Out, o.Dir) {
		return fmt.Errorf("%w: --out %s is the match set being rescored", errUsage, o.Out)
	}
	mpath := filepath.Join(o.Dir, "manifest.json")
	man, err := engine.ReadManifest(mpath)
	if err != nil {
		return fmt.Errorf("%w: %s: %v (not a complete decontam check output)", engine.ErrInput, mpath, err)
	}
	if man.Type != checkManifestTy && man.Type != rescoreManifestTy {
		return fmt.Errorf("%w: %s: type %q, want %s or %s", engine.ErrInput, mpath, man.Type, checkManifestTy, rescoreManifestTy)
	}
	rec, err := decontam.ReadRunRecord(o.Dir)
	if err != nil {
		return err
	}
	// A threshold below the floor is refused here, before any reading.
	if _, err := rec.NewRescore(o.Threshold); err != nil {
		return err
	}
	if o.Out == "" {
		// Nothing is written: the match set is read and summarised only,
		// so there is nothing to commit (and nothing to skip).
		var shards []string
		var rows []int64
		for _, sh := range man.Shards {
			if sh.Kind == kindMatches {
				shards, rows = append(shards, filepath.Join(o.Dir, sh.Path)), append(rows, sh.Rows)
			}
		}
		sums, err := rescoreMatches(ctx, rec, o.Threshold, shards, rows, mpath, nil)
		if err != nil {
			return err
		}
		return printRescore(o, sums)
	}
	var sums []decontam.Summary
	run := func(ctx context.Context, sc *engine.StageContext) error {
		w, err := engine.StageWriter[decontam.Match](sc, kindMatches)
		if err != nil {
			return err
		}
		var shards []string
		var rows []int64
		for _, in := range sc.Inputs(kindMatches) {
			shards, rows = append(shards, in.Path), append(rows, in.Rows)
		}
		if sums, err = rescoreMatches(ctx, rec, o.Threshold, shards, rows, mpath, w); err != nil {
			return err
		}
		out := decontam.NewRunRecord(sums)
		out.Floor = o.Threshold
		for i := range out.Benchmarks {
			out.Benchmarks[i].Matches = sums[i].Contaminated
		}
		for _, s := range sums {
			sc.Count("matches."+s.Benchmark, s.Contaminated)
			sc.Count("contaminated."+s.Benchmark, s.Contaminated)
		}
		return decontam.WriteRunRecord(sc.Dir, out)
	}
	cfg := decontamRescoreConfig{Threshold: o.Threshold, Compression: o.Writer.Compression, Level: o.Writer.CompressionLevel}
	// The match set's manifest fingerprints its shards; decontam.json,
	// beside it, is an input file of its own.
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Name: "decontam_rescore", Type: rescoreManifestTy, Config: &cfg,
		Inputs: []string{filepath.Join(o.Dir, decontam.RunFile)}, From: []string{o.Dir}, Out: o.Out, Force: o.Force,
		Writer: o.Writer, Run: run, Outputs: []string{kindMatches}})
	if err != nil {
		return err
	}
	if res.Status == "skipped" {
		if n := contaminatedCount(res.Counts); n > 0 {
			return withCode(exitFindings, fmt.Errorf("%w: %d matches with score ≥ %.2f", errContaminated, n, o.Threshold))
		}
		return nil
	}
	return printRescore(o, sums)
}

// printRescore prints a rescore's summaries (and where its matches went)
// and returns its exit: 6 when a match scores ≥ the threshold.
func printRescore(o DecontamRescoreOptions, sums []decontam.Summary) error {
	var contaminated int64
	for _, s := range sums {
		fmt.Fprint(o.Stdout, s.String())
		contaminated += s.Contaminated
	}
	if o.Out != "" {
		fmt.Fprintf(o.Stdout, "matches ≥ %.2f: %s\n", o.Threshold, o.Out)
	}
	if contaminated > 0 {
		return withCode(exitFindings, fmt.Errorf("%w: %d matches with score ≥ %.2f", errContaminated, contaminated, o.Threshold))
	}
	return nil
}

// rescoreMatches reads the match shards in order (rows: the row count
// each manifest entry says), re-thresholds every match at threshold, and
// hands those scoring at least that to w (nil: none written).
func rescoreMatches(ctx context.Context, rec decontam.RunRecord, threshold float64, shards []string, rows []int64, mpath string, w *engine.ShardWriter[decontam.Match]) ([]decontam.Summary, error) {
	rs, err := rec.NewRescore(threshold)
	if err != nil {
		return nil, err
	}
	for i, p := range shards {
		if err := rescoreShard(ctx, rs, p, rows[i], mpath, w); err != nil {
			return nil, err
		}
	}
	return rs.Summaries()
}

func rescoreShard(ctx context.Context, rs *decontam.Rescore, p string, want int64, mpath string, w *engine.ShardWriter[decontam.Match]) error {
	r, err := engine.OpenParquet[decontam.Match](ctx, p, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	row := int64(0)
	for {
		rows, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, m := range rows {
			row++
			m, ok, err := rs.Add(m, fmt.Sprintf("%s row %d", p, row))
			if err != nil {
				return err
			}
			if ok && w != nil {
				if err := w.Write(m); err != nil {
					return err
				}
			}
		}
	}
	if row != want {
		return fmt.Errorf("%w: %s: %d rows, %s says %d", engine.ErrInput, p, row, mpath, want)
	}
	return nil
}
