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
endpoint failed are "incomplete" and resumed by a re-run.

Outputs in --out (Parquet + manifest.json): trajectories (pack-ready rows
{id, domain, family, messages[role, content, reasoning]}, environment turns as
role "environment"), synth_trajectories (every turn with reasoning, code,
observation, backend, audit), world_model_pairs (bundle + code -> real
observation, from every real execution), world_model_corrections, chat_log; and
synth-summary.json. The generator's API key comes from the environment variable
named by generator.api_key_env (default OPENAI_API_KEY).`

func newSynthesizeCmd() *cobra.Command {
	o := SynthesizeOptions{Writer: engine.DefaultWriterOptions()}
	var configFile string
	d := synth.DefaultStageConfig()
	var f struct {
		genURL, genModel, wmURL, wmModel, sim, cacheDir      string
		rounds, samples, conc, realLimit, minAudits          int
		worldFrac, auditFrac, replayFrac, floor, temperature float64
		seed                                                 uint64
	}
	c := &cobra.Command{
		Use:   "synthesize --items PATH --out DIR --generator-url URL --generator-model NAME [flags]",
		Short: "Multi-turn generate -> verify -> feedback trajectories (real toolchains or an audited world model)",
		Long:  synthesizeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := synth.DefaultStageConfig()
			if configFile != "" {
				if err := decodeYAMLFile(configFile, &cfg); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			set := func(name string, apply func()) {
				if fs.Changed(name) {
					apply()
				}
			}
			set("generator-url", func() { cfg.Generator.BaseURL = f.genURL })
			set("generator-model", func() { cfg.Generator.Model = f.genModel })
			set("temperature", func() { cfg.Generator.Temperature = f.temperature })
			if fs.Changed("world-model-url") || fs.Changed("world-model") {
				if cfg.WorldModel == nil {
					wm := textgen.DefaultChatConfig()
					cfg.WorldModel = &wm
				}
				set("world-model-url", func() { cfg.WorldModel.BaseURL = f.wmURL })
				set("world-model", func() { cfg.WorldModel.Model = f.wmModel })
			}
			set("rounds", func() { cfg.Rounds = f.rounds })
			set("samples", func() { cfg.Samples = f.samples })
			set("concurrency", func() { cfg.Concurrency = f.conc })
			set("real-limit", func() { cfg.RealLimit = f.realLimit })
			set("world-fraction", func() { cfg.WorldFraction = f.worldFrac })
			set("audit-fraction", func() { cfg.AuditFraction = f.auditFrac })
			set("replay-fraction", func() { cfg.ReplayFraction = f.replayFrac })
			set("fidelity-floor", func() { cfg.FidelityFloor = f.floor })
			set("min-audits", func() { cfg.MinAudits = f.minAudits })
			set("seed", func() { cfg.Seed = f.seed })
			set("simulator", func() { cfg.Simulator = f.sim })
			set("cache-dir", func() { cfg.CacheDir = f.cacheDir })
			o.Config, o.Stdout = cfg, cmd.OutOrStdout()
			return runSynthesize(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Items, "items", "", "item shards directory, item JSONL/Parquet, a folder of task folders (--preset taskdir) or VerilogEval JSONL (required)")
	fl.StringVar(&o.Preset, "preset", ingest.PresetItems, "layout of --items: items | taskdir | verilog-eval")
	fl.StringVar(&o.Out, "out", "", "output directory (required); holds the journal a re-run resumes from")
	fl.StringVar(&configFile, "config", "", "YAML file with the synthesize stage's config block; flags override it")
	fl.StringVar(&f.genURL, "generator-url", "", "generator endpoint, e.g. http://localhost:8000/v1")
	fl.StringVar(&f.genModel, "generator-model", "", "generator model name")
	fl.Float64Var(&f.temperature, "temperature", 0, "generator sampling temperature")
	fl.StringVar(&f.wmURL, "world-model-url", "", "world-model endpoint (enables the world-model backend)")
	fl.StringVar(&f.wmModel, "world-model", "", "world-model model name")
	fl.IntVar(&f.rounds, "rounds", d.Rounds, "K: turns per trajectory at most")
	fl.IntVar(&f.samples, "samples", d.Samples, "trajectories per task")
	fl.IntVar(&f.conc, "concurrency", d.Concurrency, "trajectories in flight at most")
	fl.IntVar(&f.realLimit, "real-limit", d.RealLimit, "real-backend executions in flight at most")
	fl.Float64Var(&f.worldFrac, "world-fraction", d.WorldFraction, "share of trajectories run on the world model")
	fl.Float64Var(&f.auditFrac, "audit-fraction", d.AuditFraction, "share of world-model turns re-executed on the real backend")
	fl.Float64Var(&f.replayFrac, "replay-fraction", d.ReplayFraction, "share of world-model trajectories replayed whole on the real backend")
	fl.Float64Var(&f.floor, "fidelity-floor", d.FidelityFloor, "audited accuracy below which a domain's world-model trajectories stop")
	fl.IntVar(&f.minAudits, "min-audits", d.MinAudits, "audits a domain needs before the fidelity floor applies")
	fl.Uint64Var(&f.seed, "seed", d.Seed, "seed of backend choice and audit sampling")
	fl.StringVar(&f.sim, "simulator", d.Simulator, "RTL simulator: icarus | verilator")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "persist RTL reference self-check results here")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
	return c
}

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
	items, inputs, rejected, err := loadRTLItems(ctx, o.Items, o.Preset)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	kinds := []string{synth.KindPack, synth.KindRecords, synth.KindPairs, synth.KindCorrections, synth.KindChatLog}
	if err := clearOutputs(o.Out, kinds...); err != nil {
		return err
	}
	chat, err := engine.NewShardWriter[textgen.ChatLog](o.Out, synth.KindChatLog, synth.KindChatLog, o.Writer)
	if err != nil {
		return err
	}
	defer chat.Abort()
	var mu sync.Mutex // the generator's and the world model's clients share the writer
	sink := func(l textgen.ChatLog) error { mu.Lock(); defer mu.Unlock(); return chat.Write(l) }
	r, toolchain, closeFn, err := synth.Setup(o.Config, items, sink, o.Log)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer closeFn()
	res, err := r.Run(ctx, items, filepath.Join(o.Out, "synth-journal.jsonl"), toolchain)
	if err != nil {
		return err
	}
	w := synth.Writers{}
	if w.Pack, err = engine.NewShardWriter[pack.Trajectory](o.Out, synth.KindPack, synth.KindPack, o.Writer); err != nil {
		return err
	}
	defer w.Pack.Abort()
	if w.Records, err = engine.NewShardWriter[synth.TrajectoryRecord](o.Out, synth.KindRecords, synth.KindRecords, o.Writer); err != nil {
		return err
	}
	defer w.Records.Abort()
	if w.Pairs, err = engine.NewShardWriter[synth.WorldModelPair](o.Out, synth.KindPairs, synth.KindPairs, o.Writer); err != nil {
		return err
	}
	defer w.Pairs.Abort()
	if w.Corrections, err = engine.NewShardWriter[synth.Correction](o.Out, synth.KindCorrections, synth.KindCorrections, o.Writer); err != nil {
		return err
	}
	defer w.Corrections.Abort()
	if err := w.Write(res); err != nil {
		return err
	}
	var shards []engine.ShardInfo
	for _, cl := range []interface {
		Close() ([]engine.ShardInfo, error)
	}{w.Pack, w.Records, w.Pairs, w.Corrections, chat} {
		infos, err := cl.Close()
		if err != nil {
			return err
		}
		shards = append(shards, infos...)
	}
	counts := synth.SummaryCounts(res)
	counts["items"], counts["items_rejected"] = int64(len(items)), rejected
	refs, err := fileRefs(inputs)
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "synthesize", Type: "synthesize", Inputs: refs,
		Shards: shards, Counts: counts}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	if err := synth.WriteSummary(o.Out, res.Summary); err != nil {
		return err
	}
	plots, err := synth.WritePlots(o.Out, res.Summary, res.Trajectories)
	if err != nil {
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

// fileRefs are the manifest refs of a command's inputs: a directory (a task
// folder) stands for every regular file under it; an input that cannot be
// hashed is an error, never a ref silently left out.
func fileRefs(paths []string) ([]engine.InputRef, error) {
	refs := []engine.InputRef{}
	for _, p := range paths {
		files, err := engine.InputFiles(p)
		if err != nil {
			return nil, fmt.Errorf("%w: recording input %s in the manifest: %v", engine.ErrInput, p, err)
		}
		for _, f := range files {
			h, err := engine.HashFile(f)
			if err != nil {
				return nil, fmt.Errorf("recording input %s in the manifest: %w", f, err)
			}
			refs = append(refs, engine.InputRef{Kind: "file", Path: f, SHA256: h})
		}
	}
	return refs, nil
}
