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

// IngestOptions are `crucible ingest`'s flags.
type IngestOptions struct {
	Preset string
	Out    string
	Paths  []string
	Writer engine.WriterOptions
	Stdout io.Writer
}

func newIngestCmd() *cobra.Command {
	o := IngestOptions{Writer: engine.DefaultWriterOptions()}
	c := &cobra.Command{
		Use:   "ingest [--preset items|verilog-eval|taskdir] --out DIR FILE|DIR...",
		Short: "Validate JSONL/Parquet rows (or task folders) into item shards; bad rows become rejection rows",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths, o.Stdout = args, cmd.OutOrStdout()
			return runIngest(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&o.Preset, "preset", ingest.PresetItems, "input layout: "+strings.Join(ingest.Presets, "|"))
	c.Flags().StringVar(&o.Out, "out", "", "output directory for item and rejection shards and the manifest (required)")
	_ = c.MarkFlagRequired("out")
	return c
}

func runIngest(ctx context.Context, o IngestOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	release, err := engine.PrepareOutput(ctx, o.Out, []string{"manifest.json"}, "items", "rejections")
	if err != nil {
		return err
	}
	defer release()
	items, err := engine.NewShardWriter[engine.Item](o.Out, "items", "items", o.Writer)
	if err != nil {
		return err
	}
	items.KeepEmpty() // an empty input is an empty, readable shard, not no file
	rejects, err := engine.NewShardWriter[engine.Rejection](o.Out, "rejections", "rejections", o.Writer)
	if err != nil {
		items.Abort()
		return err
	}
	g, err := ingest.New(o.Preset, ingest.Sink{
		Item:   func(it engine.Item) error { return items.Write(it) },
		Reject: func(r engine.Rejection) error { return rejects.Write(r) },
	})
	if err == nil {
		pctx, done := readProgress(ctx, "ingest", engine.InputBytes(o.Paths))
		err = g.IngestPaths(pctx, o.Paths)
		done()
	}
	if err != nil {
		items.Abort()
		rejects.Abort()
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "ingest", Type: "ingest", Inputs: []engine.InputRef{}, Counts: map[string]int64{}}
	for _, w := range []interface {
		Close() ([]engine.ShardInfo, error)
	}{items, rejects} {
		infos, err := w.Close()
		if err != nil {
			items.Abort() // whichever is still open drops its temp file
			rejects.Abort()
			return err
		}
		m.Shards = append(m.Shards, infos...)
	}
	for _, p := range o.Paths {
		if h, err := engine.HashFile(p); err == nil {
			m.Inputs = append(m.Inputs, engine.InputRef{Kind: "file", Path: p, SHA256: h})
		}
	}
	m.Counts["rows"], m.Counts["items"], m.Counts["rejected"] = g.Stats.Rows, g.Stats.Items, g.Stats.Rejected
	for r, n := range g.Stats.Reasons {
		m.Counts["rejected."+r] = n
	}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "ingested %d rows from %d files: %d items, %d rejected\n", g.Stats.Rows, g.Stats.Files, g.Stats.Items, g.Stats.Rejected)
	reasons := make([]string, 0, len(g.Stats.Reasons))
	for r := range g.Stats.Reasons {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(o.Stdout, "  rejected %-16s %d\n", r, g.Stats.Reasons[r])
	}
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}

// clearOutputs removes a previous run's manifest (first, so a crash in
// between never leaves a manifest listing missing shards) and its shards of
// the given kinds from dir. Other files are left alone.
func clearOutputs(dir string, kinds ...string) error {
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	for _, k := range kinds {
		old, _ := filepath.Glob(filepath.Join(dir, k+"-*.parquet"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("%w: %v", engine.ErrIO, err)
			}
		}
	}
	return nil
}
