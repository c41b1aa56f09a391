package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/compose"
	"github.com/crucible-data/crucible/ops/selection"
)

// ComposeOptions are `crucible compose`'s inputs; Config is complete
// (defaults, then --config, then explicitly set flags).
type ComposeOptions struct {
	Items      []string
	RestrictTo []string // selection outputs whose task ids restrict the pool
	Out        string
	Force      bool // run even when the manifest in Out is current
	Config     compose.Config
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

const composeLong = `Compose a training corpus and a validation set from verified items.

1. Split: lineage roots (lineage_id, else the root of the parent chain) are
   ordered by a seeded hash and --validation-fraction of them go to validation;
   a lineage never appears on both sides.
2. First pass: every lineage with an admissible item (reference verified, unless
   --require-verified=false) contributes one item, so every lineage is represented.
3. Fill pass: items are added one at a time, each time from the mix of domain,
   family, route, difficulty bucket and verification-cost bucket furthest below its
   target share, never more than --lineage-cap items per lineage, until
   --train-size / --validation-size (0 = all the caps allow).
4. Coverage: counts and shares per domain, family, route, difficulty and cost, with
   top-1/3/5 family coverage, per split.

Targets, weights and buckets come from --config, a YAML file with the compose
stage's config block, e.g.
  targets: {domain: {rtl: 0.7, kernel: 0.3}, family: {counter: 0.2, fsm: 0.3, fifo: 0.5}}
  weights: {family: 2}
  difficulty_buckets: [{name: easy, below: 0.34}, {name: medium, below: 0.67}, {name: hard}]
A dimension without targets is balanced toward uniform over the values present.
Without configured buckets, difficulty and cost are cut at the pool's tertiles
(bucket names show the bounds, e.g. "<2", "2-3", ">=3").

--items takes item files or stage/ingest output directories; --restrict-to takes
selection outputs (a "crucible select" output directory means its gap tasks, or a
file of selection rows) and keeps only those tasks.

Outputs in --out, as Parquet shards plus manifest.json: train, validation (items),
composition (split, pass and dimension values of each item), coverage, rejections.`

// composeFlags keep the help texts `compose`'s flags had before they were
// derived from compose.Config (targets, weights and buckets: --config or
// --set).
var composeFlags = map[string]flagDoc{
	"validation_fraction": {Help: "share of lineage roots sent to validation"},
	"lineage_cap":         {Help: "most items taken from one lineage per split"},
	"train_size":          {Help: "train items to select (0 = all the caps allow; the first pass is never cut)"},
	"validation_size":     {Help: "validation items to select (0 = all the caps allow)"},
	"seed":                {Help: "seed of the split and tie-breaking hash"},
	"require_verified":    {Help: "admit only items whose reference is verified"},
}

func newComposeCmd() *cobra.Command {
	o := ComposeOptions{Writer: engine.DefaultWriterOptions(), Config: compose.DefaultConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "compose --items PATH... --out DIR [--restrict-to SELECT_OUT] [flags]",
		Short: "Split items by lineage into train/validation, balance the mix under per-lineage caps, report coverage",
		Long:  composeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runCompose(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Items, "items", nil, "item files or stage/ingest output directories (required)")
	fl.StringSliceVar(&o.RestrictTo, "restrict-to", nil, "compose only tasks listed here: a select output dir (its gap tasks) or selection row files")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	sf = bindStageFlags(fl, &o.Config, composeFlags).withConfigFile("YAML file with the compose config block (targets, weights, buckets); flags override it")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

// runCompose runs the pipeline's compose stage: --items are its item
// upstreams or files, --restrict-to the selection rows (a select output's
// gap shards) it is restricted to.
func runCompose(ctx context.Context, o ComposeOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" || len(o.Items) == 0 {
		return fmt.Errorf("%w: --items and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	cfg := compose.StageSettings{Config: o.Config}
	shards := map[string][]string{}
	from, err := stageInputs(o.Items, "items", nil, shards)
	if err != nil {
		return err
	}
	if err := asParquet[engine.Item](ctx, o.Out, shards, "items"); err != nil {
		return err
	}
	if len(o.RestrictTo) > 0 {
		if shards[selection.KindGap], err = shardInputs(o.RestrictTo, selection.KindGap); err != nil {
			return err
		}
		if err := asParquet[selection.TaskSelection](ctx, o.Out, shards, selection.KindGap); err != nil {
			return err
		}
		cfg.RestrictTo = selection.KindGap
	}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "compose", Config: &cfg, From: from, Shards: shards, Out: o.Out, Force: o.Force, Writer: o.Writer})
	if err != nil || res.Status == "skipped" {
		return err
	}
	n := res.Counts
	fmt.Fprintf(o.Stdout, "train %d items from %d lineages, validation %d items from %d lineages; %d rejected, %d left out by caps/sizes\n",
		res.Rows[compose.KindTrain], n["train.lineages"], res.Rows[compose.KindValidation], n["validation.lineages"],
		res.Rows[compose.KindRejections], n["train.skipped"]+n["validation.skipped"])
	so, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		return err
	}
	coverage, err := engine.ReadAll[compose.CoverageRow](so.Shards(compose.KindCoverage)...)
	if err != nil {
		return err
	}
	fmt.Fprint(o.Stdout, compose.FormatCoverage(coverage))
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}
