package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
)

// IngestOptions are `crucible ingest`'s inputs for callers that run it
// without a command line; Preset is the ingest stage's config.
type IngestOptions struct {
	Preset string
	Out    string
	Paths  []string
	Force  bool // run even when the manifest in Out is current
	Writer engine.WriterOptions
	Stdout io.Writer
}

// ingestFlags keep the help texts the flags had before they were derived.
var ingestFlags = map[string]flagDoc{
	"preset": {Help: "input layout: " + strings.Join(ingest.Presets, "|")},
}

func newIngestCmd() *cobra.Command {
	o := IngestOptions{Writer: engine.DefaultWriterOptions()}
	cfg := ingest.StageConfig{Preset: ingest.PresetItems}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "ingest [--preset items|verilog-eval|taskdir] --out DIR FILE|DIR...",
		Short: "Validate JSONL/Parquet rows (or task folders) into item shards; bad rows become rejection rows",
		Long: `Validate JSONL/Parquet rows (or task folders) into item shards; bad rows become rejection rows.

Runs the ingest stage of a pipeline with its output in --out DIR: a second run on
the same inputs with the same flags finds its manifest current and skips (--force
runs it anyway). --set key=value sets any key of the stage's config.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Paths, o.Stdout = args, cmd.OutOrStdout()
			return ingestStage(cmd.Context(), o, &cfg)
		},
	}
	sf = bindStageFlags(c.Flags(), &cfg, ingestFlags)
	c.Flags().StringVar(&o.Out, "out", "", "output directory for item and rejection shards and the manifest (required)")
	c.Flags().BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	_ = c.MarkFlagRequired("out")
	return c
}

// runIngest ingests o.Paths into o.Out with preset o.Preset.
func runIngest(ctx context.Context, o IngestOptions) error {
	return ingestStage(ctx, o, &ingest.StageConfig{Preset: o.Preset})
}

func ingestStage(ctx context.Context, o IngestOptions, cfg *ingest.StageConfig) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	if cfg.Preset == "" {
		cfg.Preset = ingest.PresetItems
	}
	if err := checkIngestPaths(cfg.Preset, o.Paths); err != nil {
		return err
	}
	if o.Writer.Allocator == nil {
		// Row groups of item text reuse the buffers of the ones written
		// before them (see ingest.BufferPool).
		o.Writer.Allocator = ingest.NewBufferPool()
	}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "ingest", Config: cfg, Inputs: o.Paths, Out: o.Out, Force: o.Force, Writer: o.Writer})
	if err != nil || res.Status == "skipped" {
		return err
	}
	n := res.Counts
	fmt.Fprintf(o.Stdout, "ingested %d rows: %d items, %d rejected\n", n["rows"], n["items"], n["rejected"])
	var reasons []string
	for k := range n {
		if r, ok := strings.CutPrefix(k, "rejected."); ok {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(o.Stdout, "  rejected %-16s %d\n", r, n["rejected."+r])
	}
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}

// checkIngestPaths refuses a file named on the command line that the ingest
// stage would pass over: the stage reads, of its input files, only those
// its preset understands by name (.jsonl/.json/.parquet, task.json), so
// that a directory's other files are skipped; a file the user named is
// never skipped silently.
func checkIngestPaths(preset string, paths []string) error {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		task := filepath.Base(p) == "task.json"
		reads := ".jsonl (.gz/.zst), .json or .parquet"
		ok := engine.IsJSONLName(p) || engine.IsParquet(p) || strings.HasSuffix(p, ".json") && !task
		if preset == ingest.PresetTaskDir {
			reads, ok = "task.json", task
		}
		if !st.IsDir() && !ok {
			return fmt.Errorf("%w: %s: ingest --preset %s reads %s files; name the file so, or pass its directory", errUsage, p, preset, reads)
		}
	}
	return nil
}
