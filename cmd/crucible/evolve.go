package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
)

// EvolveOptions are `crucible evolve`'s inputs; Config is complete
// (defaults, then --config, then explicitly set flags, then --set).
type EvolveOptions struct {
	Items  []string // item files or stage/ingest output directories (the seeds)
	Out    string
	Force  bool // run even when the manifest in Out is current
	Config evolve.StageConfig
	Writer engine.WriterOptions
	Stdout io.Writer
}

const evolveLong = `Derive new tasks from seed items, routed by contract state:

  verified reference  → contract mutation (one item per applicable operator) and
                        solution-first reconstruction (operator "respecify")
  specification only  → instruction-first evolution (operator "reword"; the
                        template generator writes no reference, so such items
                        are rejected at admission unless a model is configured)

References not yet verified are self-checked first (--verify-references); seeds
whose reference fails are skipped. Every derived item records route, operator,
parent_id and lineage_id (the root of its lineage).

A mutation changes the parsed reference (module RefModule) and derives the rest
of the task from the same declared change: the instruction (the parent's plus
a "Revision" section, from the generator) and the verifier (a differential
testbench generated from the declared interface, with the mutated reference as
golden model, seeded per item). Operators:
` + "{{OPS}}" + `
Whether a derived item is admitted is decided by "crucible admit".

Outputs in --out (Parquet shards + manifest.json): evolved (candidate items),
items (the seeds, with reference_status after the self-check), skipped (seeds
that could not be evolved, as rejection rows), chat_log (with --generator chat).`

func operatorHelp() string {
	var b strings.Builder
	for _, op := range evolve.Operators() {
		tag := ""
		if op.Control {
			tag = " [control, not default]"
		}
		fmt.Fprintf(&b, "  %-17s %s%s\n", op.Name, op.Doc, tag)
	}
	b.WriteString("Kernel operators (C/CUDA references; judged by the kernel verifier, unjudged without a backend):\n")
	for _, op := range evolve.KernelOperators() {
		fmt.Fprintf(&b, "  %-17s %s\n", op.Name, op.Doc)
	}
	return b.String()
}

// evolveFlags keep the names and help texts `evolve`'s flags had before
// they were derived from evolve.StageConfig.
var evolveFlags = map[string]flagDoc{
	"operators":         {Help: "mutation operators to apply"},
	"solution_first":    {Name: "no-solution-first", Invert: true, Help: "do not emit solution-first (respecify) items"},
	"instruction_first": {Name: "no-instruction-first", Invert: true, Help: "do not evolve specification-only seeds"},
	"verify_references": {Help: "self-check references whose status is not verified yet"},
	"tb_cycles":         {Help: "cycles of each generated differential testbench"},
	"seed":              {Help: "seed mixed into every generated testbench's stimulus seed"},
	"workers":           {Help: "seeds evolved in parallel and simulator jobs (0 = all cores)"},
	"generator":         {Help: "text generator: template | chat (chat settings come from --config; the key from the env variable chat.api_key_env)"},
	"simulator":         {Help: "simulator for reference self-checks: icarus | verilator"},
	"cache_dir":         {Help: "persist reference self-check results here"},
	"kernel_operators":  {Help: "kernel mutation operators to apply"},
	"retries":           {Help: "verifier retries of infrastructure failures"},
	"chat":              {Skip: true}, // --config or --set
	"kernel":            {Skip: true},
	"pass_seeds":        {Help: "copy the seeds to items (the count of seeds printed is theirs)"},
}

func newEvolveCmd() *cobra.Command {
	o := EvolveOptions{Writer: engine.DefaultWriterOptions(), Config: evolve.DefaultStageConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "evolve --items PATH... --out DIR [--operators a,b] [flags]",
		Short: "Derive candidate tasks from seeds (contract mutation, solution-first, instruction-first)",
		Long:  strings.Replace(evolveLong, "{{OPS}}", operatorHelp(), 1),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runEvolve(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Items, "items", nil, "seed item files or stage/ingest output directories (required)")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	sf = bindStageFlags(fl, &o.Config, evolveFlags).withConfigFile("YAML file with the evolve stage's config block; flags override it")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

// runEvolve runs the pipeline's evolve stage on o.Items into o.Out.
func runEvolve(ctx context.Context, o EvolveOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" || len(o.Items) == 0 {
		return fmt.Errorf("%w: --items and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	shards := map[string][]string{}
	from, err := stageInputs(o.Items, "items", nil, shards)
	if err != nil {
		return err
	}
	if err := asParquet[engine.Item](ctx, o.Out, shards, "items"); err != nil {
		return err
	}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "evolve", Config: &o.Config, From: from, Shards: shards, Out: o.Out, Force: o.Force, Writer: o.Writer})
	if err != nil || res.Status == "skipped" {
		return err
	}
	fmt.Fprintf(o.Stdout, "%d seeds → %d candidates (%d seeds skipped)\n", res.Rows["items"], res.Rows[evolve.KindEvolved], res.Rows[evolve.KindSkipped])
	printCounts(o.Stdout, res.Counts, "candidates.", "not_applicable.", "skipped.")
	fmt.Fprintf(o.Stdout, "shards and manifest: %s (next: crucible admit --from %s --out DIR)\n", o.Out, o.Out)
	return nil
}

// printCounts prints the counters with the given prefixes, one group a line.
func printCounts(w io.Writer, counts map[string]int64, prefixes ...string) {
	for _, p := range prefixes {
		var parts []string
		for k, v := range counts {
			if strings.HasPrefix(k, p) {
				parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(k, p), v))
			}
		}
		if len(parts) > 0 {
			sort.Strings(parts)
			fmt.Fprintf(w, "  %-16s %s\n", strings.TrimSuffix(p, "."), strings.Join(parts, " "))
		}
	}
}
