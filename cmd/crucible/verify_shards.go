package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

func newVerifyShardsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify-shards DIR",
		Short: "Check every shard under DIR against the size and sha256 its manifest records (exit 6 on any mismatch)",
		Long: `Walks DIR (a pipeline work dir, one stage dir, or a command's --out) for manifest.json and
manifest-*-of-*.json, hashes every shard each lists and compares it with the recorded size and
sha256. Mismatched, missing or unreadable files are listed and the exit code is 6; with none,
a summary is printed and the exit code is 0. A build does the same check before it skips a stage
or reads a shard, and redoes the stage instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerifyShards(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
}

func runVerifyShards(ctx context.Context, dir string, out io.Writer) error {
	checks, err := engine.VerifyWorkDir(dir)
	if err != nil {
		return err
	}
	var shards, bad int
	var bytes int64
	for _, c := range checks {
		if err := ctx.Err(); err != nil {
			return err
		}
		shards += c.Shards
		bytes += c.Bytes
		if c.Err != nil {
			bad++
			fmt.Fprintf(out, "MISMATCH %s: unreadable manifest: %v\n", c.Manifest, c.Err)
		}
		for _, m := range c.Mismatches {
			bad++
			fmt.Fprintf(out, "MISMATCH %s: %s (listed in %s)\n", m.Path, m.Reason, c.Manifest)
		}
	}
	if bad > 0 {
		return withCode(exitFindings, fmt.Errorf("verify-shards: %d mismatches (%d shards in %d manifests under %s)", bad, shards, len(checks), dir))
	}
	fmt.Fprintf(out, "verified %d shards (%.1f MB) in %d manifests under %s: all match\n", shards, float64(bytes)/1e6, len(checks), dir)
	return nil
}
