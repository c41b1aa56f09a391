package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/ops/gates"
)

// AdmitOptions are `crucible admit`'s inputs; Config is complete.
type AdmitOptions struct {
	From       []string // evolve outputs: parents ("items") and candidates ("evolved")
	Items      []string // extra parent item files/dirs
	Candidates []string // extra candidate item files/dirs (evolved items)
	Out        string
	Config     gates.StageConfig
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

const admitLong = `Run evolved candidates through ordered admission gates (default order
static → strength → audit → dedup → difficulty → compose; --order changes it):

  static      format, size, interface preserved vs the parent where the operator
              claims so, leakage (share of the reference's 8-token sequences found
              in the instruction ≤ 20%)
  strength    the parent reference (adapted to the evolved interface) must fail
              the evolved verifier, and the harness-strength audit (one for
              every domain, run by the item's judge) must find no trivial
              candidate that passes (RTL: constant, Z/X, stuck or inverted
              outputs; kernels: zeros, a constant, an input copy, the reference
              on other inputs) and kill ≥ strength.min_mutant_kill_rate (RTL,
              0.8) or strength.min_kill_ratio (kernels, 0.5) of the mutants of
              the evolved reference (reason weak_verifier)
  audit       the evolved reference compiles and passes its own verifier under
              Icarus, Yosys reads the declared ports, the audit generator accepts
              the instruction
  dedup       exact (same normalized reference and ports) and near (dedup package,
              MinHash over reference + instruction) duplicates among candidates
  difficulty  size and simulator-cost bounds; sets difficulty and cost
  compose     at most lineage_cap admitted items per lineage root

A rejected item stops at its gate and is written as a rejection row (gate, reason
code, detail). Infrastructure failures are retried inside the verifier; an item
that stays unjudged is rejected with reason "unjudged".

Outputs in --out (Parquet + manifest.json): items (the parents, then the admitted
items), rejections, yield (per operator: candidates, admitted, yield %, rejection
causes, behavioural distance from the parent, simulator seconds per admitted
item), gate_evidence (every verifier run of the gates).`

func newAdmitCmd() *cobra.Command {
	o := AdmitOptions{Writer: engine.DefaultWriterOptions()}
	var configFile string
	d := gates.DefaultStageConfig()
	var f struct {
		order                 []string
		mutants, cap, workers int
		noParents             bool
		sim, cacheDir         string
	}
	c := &cobra.Command{
		Use:   "admit --from EVOLVE_OUT --out DIR [--order static,strength,...] [flags]",
		Short: "Admit evolved candidates through ordered gates; write admitted items, rejections and a per-operator yield report",
		Long:  admitLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := gates.DefaultStageConfig()
			if configFile != "" {
				if err := decodeYAMLFile(configFile, &cfg); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			if fs.Changed("order") {
				cfg.Order = f.order
			}
			if fs.Changed("max-mutants") {
				cfg.Strength.MaxMutants = f.mutants
			}
			if fs.Changed("lineage-cap") {
				cfg.Compose.LineageCap = f.cap
			}
			if fs.Changed("workers") {
				cfg.Workers = f.workers
			}
			if fs.Changed("no-parents") {
				cfg.PassParents = !f.noParents
			}
			if fs.Changed("simulator") {
				cfg.Simulator = f.sim
			}
			if fs.Changed("cache-dir") {
				cfg.CacheDir = f.cacheDir
			}
			o.Config, o.Stdout = cfg, cmd.OutOrStdout()
			return runAdmit(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.From, "from", nil, "crucible evolve output directories (their items are the parents, their evolved rows the candidates)")
	fl.StringSliceVar(&o.Items, "items", nil, "additional parent item files or directories")
	fl.StringSliceVar(&o.Candidates, "candidates", nil, "additional candidate item files or directories")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.StringVar(&configFile, "config", "", "YAML file with the admit stage's config block; flags override it")
	fl.StringSliceVar(&f.order, "order", d.Order, "gate order")
	fl.IntVar(&f.mutants, "max-mutants", d.Strength.MaxMutants, "simple mutants run per candidate at the strength gate")
	fl.IntVar(&f.cap, "lineage-cap", d.Compose.LineageCap, "most admitted items per lineage root (0 = no cap)")
	fl.IntVar(&f.workers, "workers", d.Workers, "simulator jobs in parallel (0 = all cores)")
	fl.BoolVar(&f.noParents, "no-parents", false, "write only the admitted items (not the parents) to items")
	fl.StringVar(&f.sim, "simulator", d.Simulator, "simulator: icarus | verilator")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "persist reference self-check results here")
	_ = c.MarkFlagRequired("out")
	return c
}

func runAdmit(ctx context.Context, o AdmitOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" || len(o.From)+len(o.Candidates) == 0 {
		return fmt.Errorf("%w: --out and --from (or --candidates) are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	ppaths, err := shardInputs(append(append([]string(nil), o.From...), o.Items...), "items")
	if err != nil {
		return err
	}
	var cpaths []string
	if len(o.From) > 0 {
		if cpaths, err = shardInputs(o.From, evolve.KindEvolved); err != nil {
			return err
		}
	}
	if len(o.Candidates) > 0 {
		more, err := shardInputs(o.Candidates, evolve.KindEvolved)
		if err != nil {
			return err
		}
		cpaths = append(cpaths, more...)
	}
	parents, err := engine.ReadAll[engine.Item](ppaths...)
	if err != nil {
		return err
	}
	cands, err := engine.ReadAll[engine.Item](cpaths...)
	if err != nil {
		return err
	}
	if err := clearOutputs(o.Out, "items", "rejections", gates.KindYield, gates.KindGateEvidence, evolve.KindChatLog); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return withCode(exitIO, err)
	}
	var gen textgen.Generator = textgen.Template{}
	var chatLog *engine.ShardWriter[textgen.ChatLog]
	if o.Config.Generator == "chat" {
		if chatLog, err = engine.NewShardWriter[textgen.ChatLog](o.Out, evolve.KindChatLog, evolve.KindChatLog, o.Writer); err != nil {
			return err
		}
		if gen, err = textgen.NewChat(o.Config.Chat, func(l textgen.ChatLog) error { return chatLog.Write(l) }); err != nil {
			return err
		}
	}
	ver, err := evolve.NewVerifier(o.Config.Simulator, o.Config.Workers, o.Config.CacheDir, o.Config.Retries)
	if err != nil {
		return err
	}
	judges, err := evolve.NewJudges(ver, o.Config.Kernel, cands, nil)
	if err != nil {
		return err
	}
	defer judges.Close()
	env := gates.Env{Judges: judges, Generator: gen}
	a, err := gates.New(o.Config.Config, env)
	if err != nil {
		return err
	}
	res, err := a.Admit(ctx, parents, cands)
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
	items := res.Admitted
	if o.Config.PassParents {
		items = append(append([]engine.Item(nil), parents...), res.Admitted...)
	}
	for _, part := range []func() ([]engine.ShardInfo, error){
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, "items", "items", o.Writer, items)
		},
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, "rejections", "rejections", o.Writer, res.Rejections)
		},
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, gates.KindYield, gates.KindYield, o.Writer, res.Yield)
		},
		func() ([]engine.ShardInfo, error) {
			return engine.WriteAll(ctx, o.Out, gates.KindGateEvidence, gates.KindGateEvidence, o.Writer, res.Evidence)
		},
	} {
		s, err := part()
		if err != nil {
			return err
		}
		shards = append(shards, s...)
	}
	refs, err := fileRefs(append(ppaths, cpaths...))
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "admit", Type: "admit", Inputs: refs,
		Shards: relShards(shards), Counts: res.Counters()}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	gates.FormatFunnel(o.Stdout, res)
	var b strings.Builder
	gates.FormatYield(&b, res.Yield)
	fmt.Fprint(o.Stdout, b.String())
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}
