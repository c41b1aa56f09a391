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
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// EvolveOptions are `crucible evolve`'s inputs; Config is complete
// (defaults, then --config, then explicitly set flags).
type EvolveOptions struct {
	Items  []string // item files or stage/ingest output directories (the seeds)
	Out    string
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

func newEvolveCmd() *cobra.Command {
	o := EvolveOptions{Writer: engine.DefaultWriterOptions()}
	var configFile string
	d := evolve.DefaultStageConfig()
	var f struct {
		ops                      []string
		noSolution, noInstr      bool
		verify                   bool
		cycles, workers          int
		seed                     int32
		generator, sim, cacheDir string
	}
	c := &cobra.Command{
		Use:   "evolve --items PATH... --out DIR [--operators a,b] [flags]",
		Short: "Derive candidate tasks from seeds (contract mutation, solution-first, instruction-first)",
		Long:  strings.Replace(evolveLong, "{{OPS}}", operatorHelp(), 1),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := evolve.DefaultStageConfig()
			if configFile != "" {
				if err := decodeYAMLFile(configFile, &cfg); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			if fs.Changed("operators") {
				cfg.Operators = f.ops
			}
			if fs.Changed("no-solution-first") {
				cfg.SolutionFirst = !f.noSolution
			}
			if fs.Changed("no-instruction-first") {
				cfg.InstructionFirst = !f.noInstr
			}
			if fs.Changed("verify-references") {
				cfg.VerifyReferences = f.verify
			}
			if fs.Changed("tb-cycles") {
				cfg.TBCycles = f.cycles
			}
			if fs.Changed("seed") {
				cfg.Seed = f.seed
			}
			if fs.Changed("workers") {
				cfg.Workers = f.workers
			}
			if fs.Changed("generator") {
				cfg.Generator = f.generator
			}
			if fs.Changed("simulator") {
				cfg.Simulator = f.sim
			}
			if fs.Changed("cache-dir") {
				cfg.CacheDir = f.cacheDir
			}
			o.Config, o.Stdout = cfg, cmd.OutOrStdout()
			return runEvolve(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Items, "items", nil, "seed item files or stage/ingest output directories (required)")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.StringVar(&configFile, "config", "", "YAML file with the evolve stage's config block; flags override it")
	fl.StringSliceVar(&f.ops, "operators", d.Operators, "mutation operators to apply")
	fl.BoolVar(&f.noSolution, "no-solution-first", false, "do not emit solution-first (respecify) items")
	fl.BoolVar(&f.noInstr, "no-instruction-first", false, "do not evolve specification-only seeds")
	fl.BoolVar(&f.verify, "verify-references", d.VerifyReferences, "self-check references whose status is not verified yet")
	fl.IntVar(&f.cycles, "tb-cycles", d.TBCycles, "cycles of each generated differential testbench")
	fl.Int32Var(&f.seed, "seed", d.Seed, "seed mixed into every generated testbench's stimulus seed")
	fl.IntVar(&f.workers, "workers", d.Workers, "seeds evolved in parallel and simulator jobs (0 = all cores)")
	fl.StringVar(&f.generator, "generator", d.Generator, "text generator: template | chat (chat settings come from --config; the key from the env variable chat.api_key_env)")
	fl.StringVar(&f.sim, "simulator", d.Simulator, "simulator for reference self-checks: icarus | verilator")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "persist reference self-check results here")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

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
	paths, err := shardInputs(o.Items, "items")
	if err != nil {
		return err
	}
	seeds, err := engine.ReadAll[engine.Item](paths...)
	if err != nil {
		return err
	}
	if err := clearOutputs(o.Out, evolve.KindEvolved, "items", evolve.KindSkipped, evolve.KindChatLog); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return withCode(exitIO, err)
	}
	var chatLog *engine.ShardWriter[textgen.ChatLog]
	var sink textgen.LogSink
	if o.Config.Generator == "chat" {
		if chatLog, err = engine.NewShardWriter[textgen.ChatLog](o.Out, evolve.KindChatLog, evolve.KindChatLog, o.Writer); err != nil {
			return err
		}
		sink = func(l textgen.ChatLog) error { return chatLog.Write(l) }
	}
	gen, err := evolve.NewGenerator(o.Config.Config, sink)
	if err != nil {
		return err
	}
	ver, err := evolve.NewVerifier(o.Config.Simulator, o.Config.Workers, o.Config.CacheDir, o.Config.Retries)
	if err != nil {
		return err
	}
	judges, err := evolve.NewJudges(ver, o.Config.Kernel, seeds, nil)
	if err != nil {
		return err
	}
	defer judges.Close()
	e, err := evolve.New(o.Config.Config, gen, judges, nil)
	if err != nil {
		return err
	}
	res, err := e.Evolve(ctx, seeds)
	if err != nil {
		if chatLog != nil {
			chatLog.Abort()
		}
		return err
	}
	var shards []engine.ShardInfo
	if chatLog != nil {
		s, err := chatLog.Close()
		if err != nil {
			return err
		}
		shards = append(shards, s...)
	}
	for _, part := range []func() ([]engine.ShardInfo, error){
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, evolve.KindEvolved, evolve.KindEvolved, o.Writer, res.Candidates)
		},
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, "items", "items", o.Writer, seeds)
		},
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, evolve.KindSkipped, evolve.KindSkipped, o.Writer, res.Skipped)
		},
	} {
		s, err := part()
		if err != nil {
			return err
		}
		shards = append(shards, s...)
	}
	refs, err := fileRefs(paths)
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "evolve", Type: "evolve", Inputs: refs,
		Shards: relShards(shards), Counts: res.Counts}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "%d seeds → %d candidates (%d seeds skipped)\n", len(seeds), len(res.Candidates), len(res.Skipped))
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
