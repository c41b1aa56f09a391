package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/ops/synth"
)

// SynthesizeOptions are `crucible synthesize`'s inputs; Config is complete
// (defaults, then --config, then explicitly set flags).
type SynthesizeOptions struct {
	Items  string // item shards/JSONL, a taskdir folder (--preset taskdir) or a VerilogEval JSONL
	Preset string
	Out    string
	Force  bool // run even when the manifest in Out is current
	Config synth.StageConfig
	Writer engine.WriterOptions
	Stdout io.Writer
	Log    *slog.Logger
}

const synthesizeLong = `Synthesize multi-turn error-correction trajectories: per task, a generator
model (OpenAI-compatible chat completions) writes reasoning and code; the code is
extracted and executed on a backend, which returns an observation (an outcome
label from a closed per-domain vocabulary — PASS, COMPILATION_ERROR,
SIMULATION_MISMATCH, TIMEOUT, ... — and bounded diagnostics); the next prompt
carries the observation; the loop stops at the first PASS or after --rounds.

Backends: the real toolchains (Icarus for RTL, the kernel verifier for kernels)
or, for --world-fraction of the trajectories, a world model (an OpenAI-compatible
endpoint that predicts the observation from the task's environment bundle and
the code). --audit-fraction of world-model turns (seeded) are re-executed on the
real backend and disagreements recorded as corrections; --replay-fraction of
world-model trajectories are replayed whole, for trajectory agreement. A domain
whose audited accuracy falls below --fidelity-floor (after --min-audits audits)
stops getting world-model trajectories, and its world-model trajectories are not
admitted. Infrastructure failures are re-executed and never shown to the
generator; unresolved, the trajectory ends unjudged.

Every turn is appended to <out>/synth-journal.jsonl (fsynced) as it finishes:
re-running the same command after a crash or interrupt resumes each trajectory
from its last completed turn. Trajectories whose generator or world-model
endpoint failed are "incomplete" and resumed by a re-run. Once every trajectory
is complete, a re-run on the same --items with the same flags is skipped as up
to date; --force runs it again.

Outputs in --out (Parquet + manifest.json): trajectories (pack-ready rows
{id, domain, family, messages[role, content, reasoning]}, environment turns as
role "environment"), synth_trajectories (every turn with reasoning, code,
observation, backend, audit), world_model_pairs (bundle + code -> real
observation, from every real execution), world_model_corrections, chat_log; and
synth-summary.json. The generator's API key comes from the environment variable
named by generator.api_key_env (default OPENAI_API_KEY).`

// synthesizeFlags keep the names and help texts `synthesize`'s flags had
// before they were derived from synth.StageConfig; the world model (a
// pointer, nil without one) has its own two flags, and the rest of its
// block is --config or --set world_model.KEY.
var synthesizeFlags = map[string]flagDoc{
	"generator.base_url":    {Name: "generator-url", Help: "generator endpoint, e.g. http://localhost:8000/v1"},
	"generator.model":       {Help: "generator model name"},
	"generator.temperature": {Name: "temperature", Help: "generator sampling temperature"},
	"rounds":                {Help: "K: turns per trajectory at most"},
	"samples":               {Help: "trajectories per task"},
	"concurrency":           {Help: "trajectories in flight at most"},
	"real_limit":            {Help: "real-backend executions in flight at most"},
	"world_fraction":        {Help: "share of trajectories run on the world model"},
	"audit_fraction":        {Help: "share of world-model turns re-executed on the real backend"},
	"replay_fraction":       {Help: "share of world-model trajectories replayed whole on the real backend"},
	"fidelity_floor":        {Help: "audited accuracy below which a domain's world-model trajectories stop"},
	"min_audits":            {Help: "audits a domain needs before the fidelity floor applies"},
	"seed":                  {Help: "seed of backend choice and audit sampling"},
	"simulator":             {Help: "RTL simulator: icarus | verilator"},
	"cache_dir":             {Help: "persist RTL reference self-check results here"},
	"world_model":           {Skip: true},
}

func newSynthesizeCmd() *cobra.Command {
	o := SynthesizeOptions{Writer: engine.DefaultWriterOptions(), Config: synth.DefaultStageConfig()}
	var sf *stageFlags
	var wmURL, wmModel string
	c := &cobra.Command{
		Use:   "synthesize --items PATH --out DIR --generator-url URL --generator-model NAME [flags]",
		Short: "Multi-turn generate -> verify -> feedback trajectories (real toolchains or an audited world model)",
		Long:  synthesizeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			fs := cmd.Flags()
			if fs.Changed("world-model-url") || fs.Changed("world-model") {
				if o.Config.WorldModel == nil {
					wm := textgen.DefaultChatConfig()
					o.Config.WorldModel = &wm
				}
				if fs.Changed("world-model-url") {
					o.Config.WorldModel.BaseURL = wmURL
				}
				if fs.Changed("world-model") {
					o.Config.WorldModel.Model = wmModel
				}
			}
			o.Stdout = cmd.OutOrStdout()
			return runSynthesize(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Items, "items", "", "item shards directory, item JSONL/Parquet, a folder of task folders (--preset taskdir) or VerilogEval JSONL (required)")
	fl.StringVar(&o.Preset, "preset", ingest.PresetItems, "layout of --items: items | taskdir | verilog-eval")
	fl.StringVar(&o.Out, "out", "", "output directory (required); holds the journal a re-run resumes from")
	fl.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current (the journal still resumes finished turns)")
	fl.StringVar(&wmURL, "world-model-url", "", "world-model endpoint (enables the world-model backend)")
	fl.StringVar(&wmModel, "world-model", "", "world-model model name")
	sf = bindStageFlags(fl, &o.Config, synthesizeFlags).withConfigFile("YAML file with the synthesize stage's config block; flags override it")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

// synthesizeConfig is what decides synthesize's output: its manifest's
// config hash.
type synthesizeConfig struct {
	synth.StageConfig `yaml:",inline"`
	Preset            string `yaml:"preset"`
}

// synthesizeOutputs are the kinds `synthesize` commits; the journal, the
// summary JSON and the plots are other files in --out.
var synthesizeOutputs = []string{synth.KindPack, synth.KindRecords, synth.KindPairs, synth.KindCorrections, synth.KindChatLog}

// runSynthesize runs the agent loop as a command stage: a rerun on the
// same --items with the same flags skips, unless the last run left
// trajectories incomplete (endpoint failures), which it resumes from the
// journal. The summary JSON and the plots are written inside the stage,
// before the runner commits the manifest.
func runSynthesize(ctx context.Context, o SynthesizeOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Items == "" || o.Out == "" {
		return fmt.Errorf("%w: --items and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	var (
		res      *synth.Result
		items    []engine.Item
		rejected int64
		plots    []string
		counts   map[string]int64
	)
	run := func(ctx context.Context, sc *engine.StageContext) error {
		var err error
		if items, _, rejected, err = loadRTLItems(ctx, o.Items, o.Preset); err != nil {
			return err
		}
		chat, err := engine.StageWriter[textgen.ChatLog](sc, synth.KindChatLog)
		if err != nil {
			return err
		}
		var mu sync.Mutex // the generator's and the world model's clients share the writer
		sink := func(l textgen.ChatLog) error { mu.Lock(); defer mu.Unlock(); return chat.Write(l) }
		r, toolchain, closeFn, err := synth.Setup(o.Config, items, sink, o.Log)
		if err != nil {
			return withCode(exitUsage, err)
		}
		defer closeFn()
		if res, err = r.Run(ctx, items, filepath.Join(sc.Dir, "synth-journal.jsonl"), toolchain); err != nil {
			return err
		}
		w := synth.Writers{}
		if w.Pack, err = engine.StageWriter[pack.Trajectory](sc, synth.KindPack); err != nil {
			return err
		}
		if w.Records, err = engine.StageWriter[synth.TrajectoryRecord](sc, synth.KindRecords); err != nil {
			return err
		}
		if w.Pairs, err = engine.StageWriter[synth.WorldModelPair](sc, synth.KindPairs); err != nil {
			return err
		}
		if w.Corrections, err = engine.StageWriter[synth.Correction](sc, synth.KindCorrections); err != nil {
			return err
		}
		if err := w.Write(res); err != nil {
			return err
		}
		counts = synth.SummaryCounts(res)
		counts["items"], counts["items_rejected"] = int64(len(items)), rejected
		for k, n := range counts {
			sc.Count(k, n)
		}
		if n := counts["generator_failed"] + counts["world_model_failed"]; n > 0 {
			sc.Unfinished(fmt.Sprintf("%d trajectories incomplete (endpoint failures)", n))
		}
		if err := synth.WriteSummary(sc.Dir, res.Summary); err != nil {
			return err
		}
		plots, err = synth.WritePlots(sc.Dir, res.Summary, res.Trajectories)
		return err
	}
	sr, err := runCommandStage(ctx, o.Stdout, commandStage{Name: "synthesize", Type: "synthesize",
		Config: &synthesizeConfig{o.Config, o.Preset}, Inputs: []string{o.Items}, Out: o.Out, Force: o.Force,
		Writer: o.Writer, Run: run, Outputs: synthesizeOutputs})
	if err != nil || sr.Status == "skipped" {
		return err
	}
	fmt.Fprintf(o.Stdout, "synthesized %d trajectories from %d items (%d rejected at ingest); %d pack rows, %d world-model pairs, %d corrections\n\n",
		len(res.Trajectories), len(items), rejected, len(res.Pack), len(res.Pairs), len(res.Corrections))
	res.Summary.Print(o.Stdout)
	if n := counts["generator_failed"] + counts["world_model_failed"]; n > 0 {
		fmt.Fprintf(o.Stdout, "\n%d trajectories incomplete (endpoint failures): re-run the same command to resume them\n", n)
	}
	fmt.Fprintf(o.Stdout, "\noutputs: %s (plots: %d PNG files)\n", filepath.Clean(o.Out), len(plots))
	return nil
}
