package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/selection"
	"github.com/crucible-data/crucible/rtl"
)

// SelectOptions are `crucible select`'s inputs. Config is complete (defaults,
// then --config, then explicitly set flags) by the time runSelect sees it.
type SelectOptions struct {
	Rollouts []string
	Items    []string
	Out      string
	Config   selection.Config
	// Judges judge rollouts without a verdict; nil builds the RTL and
	// kernel judges (RTLWorkers / Simulator) unless NoVerify is set.
	Judges     *engine.Judges
	NoVerify   bool
	RTLWorkers int
	Simulator  string
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

const selectLong = `Judge the responses a training stack sampled from its policies and derive the
model-relative tables.

Inputs. --rollouts: JSONL or Parquet rows {task_id, policy, sample_index, round,
response} with an optional attached verdict {status: pass|fail|unjudged,
failure_stage, speedup, exploit, feedback}. Rows without a verdict have their
answer extracted (last fenced block or <answer> tag by default) and are judged
against --items by their item's domain (RTL: Icarus unless --simulator; kernels:
the kernel verifier, auto backend); a response without extractable
code is a fail at stage "extract". --items: item JSONL/Parquet files, or stage /
ingest output directories (their "items" shards).

Outputs in --out, as Parquet shards plus manifest.json:
  evidence       one verdict per usable rollout
  rejections     unusable rollout rows (missing fields, duplicates, bad verdicts, unknown tasks)
  selection      one row per task: pass@k / avg@k per policy (unjudged samples excluded
                 from both numerator and denominator, and counted), class, success-rate stratum
  gap            tasks the student never solves (pass@k = 0) and the teacher does, with the
                 first verified teacher trajectory in full
  uncovered      tasks neither policy solved (teacher 0 of its judged samples)
  recoverable    tasks failed at round 0 and solved in a later feedback round, with the
                 privileged context (failed responses + coarse feedback, never the solution)
  rewards        per-sample reward (rtl_binary: 1/0/-1 unjudged; kernel_tiered:
                 1.0/0.5/0.2/0.05/0) with per-prompt group mean, sample std and advantage,
                 unjudged samples masked
  strata_sample  a deterministic sample mixing frontier/exploration/near_mastery/exploitation

--config takes a YAML file with the select stage's config block (the same keys as
the flags, e.g. {k: 8, extract: {mode: regexp, pattern: ...}, strata_weights: {...}});
flags given on the command line override it.`

func newSelectCmd() *cobra.Command {
	o := SelectOptions{Writer: engine.DefaultWriterOptions(), Simulator: rtl.SimIcarus}
	var configFile, weights string
	d := selection.DefaultConfig()
	f := selectFlags{}
	c := &cobra.Command{
		Use:   "select --rollouts FILE... --items PATH... --out DIR [flags]",
		Short: "Judge policy rollouts: capability gap, uncovered and feedback-recoverable tasks, strata, rewards",
		Long:  selectLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := selectConfig(configFile, cmd.Flags(), f, weights)
			if err != nil {
				return err
			}
			o.Config, o.Stdout = cfg, cmd.OutOrStdout()
			return runSelect(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Rollouts, "rollouts", nil, "rollout JSONL/Parquet files or directories (required)")
	fl.StringSliceVar(&o.Items, "items", nil, "item files or stage/ingest output directories (required unless every rollout has a verdict)")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.StringVar(&configFile, "config", "", "YAML file with the select config block; flags override it")
	fl.IntVar(&f.k, "k", d.K, "k of pass@k")
	fl.StringVar(&f.student, "student", d.Student, "policy name of the student")
	fl.StringVar(&f.teacher, "teacher", d.Teacher, "policy name of the teacher")
	fl.StringVar(&f.extract, "extract", d.Extract.Mode, "answer extraction: auto (<answer> tags, else fenced blocks)|fenced|answer_tag|regexp")
	fl.StringVar(&f.pick, "pick", d.Extract.Pick, "which block wins when a response has several: last|first")
	fl.StringVar(&f.pattern, "pattern", "", "regexp for --extract regexp; group \"answer\", else group 1, else the match")
	fl.StringSliceVar(&f.languages, "languages", nil, "accept only fenced blocks of these languages (untagged blocks always count), e.g. verilog,systemverilog")
	fl.StringVar(&f.reward, "reward", d.Reward, "reward adapter: auto (by item domain)|rtl_binary|kernel_tiered")
	fl.Float64Var(&f.speedup, "speedup-threshold", d.SpeedupThreshold, "kernel_tiered: speedup above this earns 1.0")
	fl.StringVar(&f.recoverPolicy, "recover-policy", d.RecoverPolicy, "policy whose feedback rounds are mined for recoverable tasks")
	fl.StringVar(&f.recoverContext, "recover-context", d.RecoverContext, "privileged context: trajectory (the solving sample's earlier rounds)|all_rounds")
	fl.StringVar(&f.strataPolicy, "strata-policy", d.StrataPolicy, "policy whose round-0 success rate defines the strata")
	fl.StringVar(&weights, "strata-weights", "", "strata mix, e.g. frontier=0.4,exploration=0.3,near_mastery=0.2,exploitation=0.1 (default that)")
	fl.IntVar(&f.strataSample, "strata-sample", d.StrataSample, "tasks to draw by the strata mix (0 = none)")
	fl.Uint64Var(&f.seed, "seed", d.Seed, "seed of the strata sampler")
	fl.BoolVar(&f.requireItems, "require-items", d.RequireItems, "reject rollouts of tasks missing from --items even when they carry a verdict")
	fl.IntVar(&f.batch, "batch-size", d.BatchSize, "candidates per verifier call")
	fl.BoolVar(&o.NoVerify, "no-verify", false, "do not run a verifier: rollouts without a verdict become unjudged (toolchain_missing)")
	fl.IntVar(&o.RTLWorkers, "workers", 0, "concurrent RTL simulations (default: number of CPUs)")
	fl.StringVar(&o.Simulator, "simulator", rtl.SimIcarus, "RTL simulator: icarus|verilator (verilator passes are unjudged unless trusted)")
	_ = c.MarkFlagRequired("rollouts")
	_ = c.MarkFlagRequired("out")
	return c
}

type selectFlags struct {
	k, strataSample, batch                           int
	student, teacher, extract, pick, pattern, reward string
	recoverPolicy, recoverContext, strataPolicy      string
	languages                                        []string
	speedup                                          float64
	seed                                             uint64
	requireItems                                     bool
}

// selectConfig layers defaults, the --config file and explicitly set flags.
func selectConfig(file string, fs *pflag.FlagSet, f selectFlags, weights string) (selection.Config, error) {
	cfg := selection.DefaultConfig()
	if file != "" {
		def := cfg.StrataWeights
		cfg.StrataWeights = nil
		if err := decodeYAMLFile(file, &cfg); err != nil {
			return cfg, err
		}
		if cfg.StrataWeights == nil {
			cfg.StrataWeights = def
		}
	}
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
		}
	}
	set("k", func() { cfg.K = f.k })
	set("student", func() { cfg.Student = f.student })
	set("teacher", func() { cfg.Teacher = f.teacher })
	set("extract", func() { cfg.Extract.Mode = f.extract })
	set("pick", func() { cfg.Extract.Pick = f.pick })
	set("pattern", func() { cfg.Extract.Pattern = f.pattern })
	set("languages", func() { cfg.Extract.Languages = f.languages })
	set("reward", func() { cfg.Reward = f.reward })
	set("speedup-threshold", func() { cfg.SpeedupThreshold = f.speedup })
	set("recover-policy", func() { cfg.RecoverPolicy = f.recoverPolicy })
	set("recover-context", func() { cfg.RecoverContext = f.recoverContext })
	set("strata-policy", func() { cfg.StrataPolicy = f.strataPolicy })
	set("strata-sample", func() { cfg.StrataSample = f.strataSample })
	set("seed", func() { cfg.Seed = f.seed })
	set("require-items", func() { cfg.RequireItems = f.requireItems })
	set("batch-size", func() { cfg.BatchSize = f.batch })
	if weights != "" {
		w, err := parseWeights(weights)
		if err != nil {
			return cfg, err
		}
		cfg.StrataWeights = w
	}
	return cfg, cfg.Validate()
}

// parseWeights reads "name=0.4,name=0.3".
func parseWeights(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || k == "" {
			return nil, fmt.Errorf("%w: --strata-weights: %q is not name=number", errUsage, part)
		}
		out[k] = x
	}
	return out, nil
}

func decodeYAMLFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: --config: %v", engine.ErrConfig, err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && err != io.EOF {
		return fmt.Errorf("%w: %s: %v", engine.ErrConfig, path, err)
	}
	return nil
}

func runSelect(ctx context.Context, o SelectOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" || len(o.Rollouts) == 0 {
		return fmt.Errorf("%w: --rollouts and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	rpaths, err := shardInputs(o.Rollouts, selection.KindRollouts)
	if err != nil {
		return err
	}
	rows, label, err := selection.ReadRollouts(rpaths...)
	if err != nil {
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
	js := o.Judges
	if js == nil && !o.NoVerify {
		js = rolloutJudges(o.Simulator, o.RTLWorkers)
		defer js.Close()
	}
	res, err := selection.Select(ctx, o.Config, rows, selection.Options{Judges: js, Items: items, RowLabel: label})
	if err != nil {
		return err
	}
	if err := clearOutputs(o.Out, selection.OutputKinds...); err != nil {
		return err
	}
	shards, err := selection.WriteDir(ctx, o.Out, o.Writer, res)
	if err != nil {
		return err
	}
	refs, err := fileRefs(append(rpaths, ipaths...))
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "select", Type: "select", Inputs: refs,
		Shards: relShards(shards), Counts: res.Report.Counters()}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	r := res.Report
	fmt.Fprintf(o.Stdout, "rollouts %d: %d usable (%d attached verdicts, %d verified, %d extraction failures), %d rejected\n",
		r.Rollouts, r.Rollouts-r.Rejected, r.Attached, r.Verified, r.ExtractFailed, r.Rejected)
	fmt.Fprintf(o.Stdout, "verdicts: %d pass, %d fail, %d unjudged (excluded from pass@%d/avg@%d: %d student, %d teacher)\n",
		r.Pass, r.Fail, r.Unjudged, o.Config.K, o.Config.K, r.StudentExcluded, r.TeacherExcluded)
	fmt.Fprintf(o.Stdout, "tasks %d:", r.Tasks)
	for _, c := range []string{selection.ClassGap, selection.ClassStudentSolves, selection.ClassUncovered, selection.ClassUndetermined} {
		fmt.Fprintf(o.Stdout, " %s %d", c, r.Classes[c])
	}
	fmt.Fprintf(o.Stdout, "\nrecoverable %d (%d solved without a failed turn to learn from)\nstrata:", r.Recoverable, r.RecoverableNoContext)
	for _, s := range selection.Strata {
		fmt.Fprintf(o.Stdout, " %s %d", s, r.Strata[s])
	}
	fmt.Fprintf(o.Stdout, "; sampled %d\nshards and manifest: %s\n", r.Sampled, o.Out)
	return nil
}

// shardInputs expands paths: a directory with a manifest stands for its
// shards of kind; a directory without one for its .jsonl/.parquet files;
// a file for itself.
func shardInputs(paths []string, kind string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		if so, err := engine.LoadStageOutput(p); err == nil {
			for _, m := range so.Parts {
				for _, s := range m.Shards {
					if s.Kind == kind {
						out = append(out, filepath.Join(so.Dir, s.Path))
					}
				}
			}
			continue
		}
		found, err := rowFiles(p)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// rowFiles are the .jsonl/.parquet files in a directory that has no
// manifest (not its subdirectories), sorted; none is an error.
func rowFiles(dir string) ([]string, error) {
	var found []string
	for _, ext := range append(engine.JSONLGlobs(), "*.parquet") {
		g, _ := filepath.Glob(filepath.Join(dir, ext))
		found = append(found, g...)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w: %s: no manifest and no .jsonl/.parquet files", engine.ErrInput, dir)
	}
	sort.Strings(found)
	return found, nil
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

// relShards makes shard paths relative to the output directory, as
// manifests record them.
func relShards(infos []engine.ShardInfo) []engine.ShardInfo {
	out := make([]engine.ShardInfo, len(infos))
	for i, s := range infos {
		s.Path = filepath.Base(s.Path)
		out[i] = s
	}
	return out
}
