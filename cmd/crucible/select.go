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
// then --config, then explicitly set flags, then --set) by the time
// runSelect sees it.
type SelectOptions struct {
	Rollouts []string
	Items    []string
	Out      string
	Force    bool // run even when the manifest in Out is current
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

// selectFlags keep the names and help texts `select`'s flags had before
// they were derived from selection.Config (strata_weights has its own
// --strata-weights form).
var selectFlags = map[string]flagDoc{
	"k":                 {Help: "k of pass@k"},
	"student":           {Help: "policy name of the student"},
	"teacher":           {Help: "policy name of the teacher"},
	"extract.mode":      {Name: "extract", Help: "answer extraction: auto (<answer> tags, else fenced blocks)|fenced|answer_tag|regexp"},
	"extract.pick":      {Name: "pick", Help: "which block wins when a response has several: last|first"},
	"extract.pattern":   {Name: "pattern", Help: "regexp for --extract regexp; group \"answer\", else group 1, else the match"},
	"extract.languages": {Name: "languages", Help: "accept only fenced blocks of these languages (untagged blocks always count), e.g. verilog,systemverilog"},
	"reward":            {Help: "reward adapter: auto (by item domain)|rtl_binary|kernel_tiered"},
	"speedup_threshold": {Help: "kernel_tiered: speedup above this earns 1.0"},
	"recover_policy":    {Help: "policy whose feedback rounds are mined for recoverable tasks"},
	"recover_context":   {Help: "privileged context: trajectory (the solving sample's earlier rounds)|all_rounds"},
	"strata_policy":     {Help: "policy whose round-0 success rate defines the strata"},
	"strata_sample":     {Help: "tasks to draw by the strata mix (0 = none)"},
	"seed":              {Help: "seed of the strata sampler"},
	"require_items":     {Help: "reject rollouts of tasks missing from --items even when they carry a verdict"},
	"batch_size":        {Help: "candidates per verifier call"},
}

func newSelectCmd() *cobra.Command {
	o := SelectOptions{Writer: engine.DefaultWriterOptions(), Simulator: rtl.SimIcarus, Config: selection.DefaultConfig()}
	var apply func() error
	c := &cobra.Command{
		Use:   "select --rollouts FILE... --items PATH... --out DIR [flags]",
		Short: "Judge policy rollouts: capability gap, uncovered and feedback-recoverable tasks, strata, rewards",
		Long:  selectLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runSelect(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.Rollouts, "rollouts", nil, "rollout JSONL/Parquet files or directories (required)")
	fl.StringSliceVar(&o.Items, "items", nil, "item files or stage/ingest output directories (required unless every rollout has a verdict)")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	apply = bindSelectConfig(fl, &o.Config)
	fl.BoolVar(&o.NoVerify, "no-verify", false, "do not run a verifier: rollouts without a verdict become unjudged (toolchain_missing)")
	fl.IntVar(&o.RTLWorkers, "workers", 0, "concurrent RTL simulations (default: number of CPUs)")
	fl.StringVar(&o.Simulator, "simulator", rtl.SimIcarus, "RTL simulator: icarus|verilator (verilator passes are unjudged unless trusted)")
	_ = c.MarkFlagRequired("rollouts")
	_ = c.MarkFlagRequired("out")
	return c
}

// bindSelectConfig registers the flags of the select config on fl and
// returns what layers them onto cfg: the stage flags, and --strata-weights
// (a map in a flag's own form), which replaces the mix.
func bindSelectConfig(fl *pflag.FlagSet, cfg *selection.Config) func() error {
	sf := bindStageFlags(fl, cfg, selectFlags).withConfigFile("YAML file with the select config block; flags override it")
	weights := fl.String("strata-weights", "", "strata mix, e.g. frontier=0.4,exploration=0.3,near_mastery=0.2,exploitation=0.1 (default that)")
	return func() error {
		if err := sf.apply(); err != nil {
			return err
		}
		if *weights != "" {
			w, err := parseWeights(*weights)
			if err != nil {
				return err
			}
			cfg.StrataWeights = w
		}
		return cfg.Validate()
	}
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

// runSelect runs the pipeline's select stage, with the judges the flags
// ask for, over the rollout and item files or stage outputs given.
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
	shards := map[string][]string{}
	for kind, paths := range map[string][]string{selection.KindRollouts: o.Rollouts, "items": o.Items} {
		files, err := shardInputs(paths, kind)
		if err != nil {
			return err
		}
		shards[kind] = files
	}
	// Rollouts are read by the stage's own reader (JSONL or Parquet); items
	// as upstream shards, Parquet only.
	if err := asParquet[engine.Item](ctx, o.Out, shards, "items"); err != nil {
		return err
	}
	js := o.Judges
	if js == nil && !o.NoVerify {
		js = rolloutJudges(o.Simulator, o.RTLWorkers)
		defer js.Close()
	}
	reg := engine.NewRegistry()
	selection.RegisterStages(reg, selection.WithJudges(js))
	// The judges decide verdicts, so what they were built from is part of
	// the fingerprint (injected judges are the caller's: named only so).
	judges := map[string]any{"no_verify": o.NoVerify, "simulator": o.Simulator, "workers": o.RTLWorkers, "injected": o.Judges != nil}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "select", Config: &o.Config, Shards: shards, Out: o.Out, Force: o.Force,
		Writer: o.Writer, Registry: reg, Extra: judges})
	if err != nil || res.Status == "skipped" {
		return err
	}
	n := res.Counts
	fmt.Fprintf(o.Stdout, "rollouts %d: %d usable (%d attached verdicts, %d verified, %d extraction failures), %d rejected\n",
		n["rollouts"], n["rollouts"]-n["rejected"], n["attached"], n["verified"], n["extract_failed"], n["rejected"])
	fmt.Fprintf(o.Stdout, "verdicts: %d pass, %d fail, %d unjudged (excluded from pass@%d/avg@%d: %d student, %d teacher)\n",
		n["pass"], n["fail"], n["unjudged"], o.Config.K, o.Config.K, n["excluded_unjudged.student"], n["excluded_unjudged.teacher"])
	fmt.Fprintf(o.Stdout, "tasks %d:", n["tasks"])
	for _, c := range []string{selection.ClassGap, selection.ClassStudentSolves, selection.ClassUncovered, selection.ClassUndetermined} {
		fmt.Fprintf(o.Stdout, " %s %d", c, n["class."+c])
	}
	fmt.Fprintf(o.Stdout, "\nrecoverable %d (%d solved without a failed turn to learn from)\nstrata:", n["recoverable"], n["recoverable_no_context"])
	for _, s := range selection.Strata {
		fmt.Fprintf(o.Stdout, " %s %d", s, n["stratum."+s])
	}
	fmt.Fprintf(o.Stdout, "; sampled %d\nshards and manifest: %s\n", n["strata_sampled"], o.Out)
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
