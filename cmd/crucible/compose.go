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

func newComposeCmd() *cobra.Command {
	o := ComposeOptions{Writer: engine.DefaultWriterOptions()}
	var configFile string
	d := compose.DefaultConfig()
	var f struct {
		fraction               float64
		cap, train, validation int
		seed                   uint64
		requireVerified        bool
	}
	c := &cobra.Command{
		Use:   "compose --items PATH... --out DIR [--restrict-to SELECT_OUT] [flags]",
		Short: "Split items by lineage into train/validation, balance the mix under per-lineage caps, report coverage",
		Long:  composeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := compose.DefaultConfig()
			if configFile != "" {
				if err := decodeYAMLFile(configFile, &cfg); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			if fs.Changed("validation-fraction") {
				cfg.ValidationFraction = f.fraction
			}
			if fs.Changed("lineage-cap") {
				cfg.LineageCap = f.cap
			}
			if fs.Changed("train-size") {
				cfg.TrainSize = f.train
			}
			if fs.Changed("validation-size") {
				cfg.ValidationSize = f.validation
			}
			if fs.Changed("seed") {
				cfg.Seed = f.seed
			}
			if fs.Changed("require-verified") {
				cfg.RequireVerified = f.requireVerified
			}
			o.Config, o.Stdout = cfg, cmd.OutOrStdout()
			return runCompose(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Items, "items", nil, "item files or stage/ingest output directories (required)")
	fl.StringSliceVar(&o.RestrictTo, "restrict-to", nil, "compose only tasks listed here: a select output dir (its gap tasks) or selection row files")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.StringVar(&configFile, "config", "", "YAML file with the compose config block (targets, weights, buckets); flags override it")
	fl.Float64Var(&f.fraction, "validation-fraction", d.ValidationFraction, "share of lineage roots sent to validation")
	fl.IntVar(&f.cap, "lineage-cap", d.LineageCap, "most items taken from one lineage per split")
	fl.IntVar(&f.train, "train-size", d.TrainSize, "train items to select (0 = all the caps allow; the first pass is never cut)")
	fl.IntVar(&f.validation, "validation-size", d.ValidationSize, "validation items to select (0 = all the caps allow)")
	fl.Uint64Var(&f.seed, "seed", d.Seed, "seed of the split and tie-breaking hash")
	fl.BoolVar(&f.requireVerified, "require-verified", d.RequireVerified, "admit only items whose reference is verified")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

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
	ipaths, err := shardInputs(o.Items, "items")
	if err != nil {
		return err
	}
	items, err := engine.ReadAll[engine.Item](ipaths...)
	if err != nil {
		return err
	}
	inputs := ipaths
	if len(o.RestrictTo) > 0 {
		spaths, err := shardInputs(o.RestrictTo, selection.KindGap)
		if err != nil {
			return err
		}
		keep, err := engine.ReadAll[selection.TaskSelection](spaths...)
		if err != nil {
			return err
		}
		before := len(items)
		items = compose.Restrict(items, keep)
		fmt.Fprintf(o.Stdout, "restricted to %d selected tasks: %d of %d items\n", len(keep), len(items), before)
		inputs = append(inputs, spaths...)
	}
	res, err := compose.Compose(items, o.Config)
	if err != nil {
		return err
	}
	if err := clearOutputs(o.Out, compose.OutputKinds...); err != nil {
		return err
	}
	shards, err := compose.WriteDir(ctx, o.Out, o.Writer, res)
	if err != nil {
		return err
	}
	refs, err := fileRefs(inputs)
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "compose", Type: "compose", Inputs: refs,
		Shards: relShards(shards), Counts: res.Counters()}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "train %d items from %d lineages, validation %d items from %d lineages; %d rejected, %d left out by caps/sizes\n",
		len(res.Train), res.Lineages[compose.SplitTrain], len(res.Validation), res.Lineages[compose.SplitValidation],
		len(res.Rejections), res.Skipped[compose.SplitTrain]+res.Skipped[compose.SplitValidation])
	fmt.Fprint(o.Stdout, compose.FormatCoverage(res.Coverage))
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}
