package selection

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/crucible-data/crucible/engine"
)

// Output kinds of the select stage.
const (
	KindEvidence     = "evidence"      // engine.Evidence, one per usable rollout
	KindRejections   = "rejections"    // engine.Rejection, unusable rollout rows
	KindSelection    = "selection"     // TaskSelection, every task
	KindGap          = "gap"           // TaskSelection, capability-gap tasks with the teacher trajectory
	KindUncovered    = "uncovered"     // TaskSelection, tasks no policy solved
	KindRecoverable  = "recoverable"   // Recoverable, with privileged context
	KindRewards      = "rewards"       // RewardRow, one per usable rollout
	KindStrataSample = "strata_sample" // StrataPick
)

// KindRollouts is the input kind an upstream stage may produce instead of
// listing rollout files under the stage's inputs.
const KindRollouts = "rollouts"

// StageOption configures RegisterStages.
type StageOption func(*stageDeps)

type stageDeps struct{ judges *engine.Judges }

// WithJudges sets the judges of rollouts without an attached verdict.
// Without one such rollouts are recorded unjudged (toolchain_missing).
func WithJudges(j *engine.Judges) StageOption { return func(d *stageDeps) { d.judges = j } }

// RegisterStages adds the "select" stage type.
//
//   - name: select
//     type: select
//     from: [verify]              # upstream "items" (and optionally "rollouts")
//     inputs: [rollouts/]         # rollout JSONL/Parquet files
//     config: {k: 4, strata_sample: 100, extract: {mode: fenced, languages: [verilog]}}
func RegisterStages(reg *engine.Registry, opts ...StageOption) {
	var deps stageDeps
	for _, o := range opts {
		o(&deps)
	}
	reg.RegisterType(engine.StageType{Name: "select", Config: Config{}, Parallelism: engine.Global, Outputs: []string{KindEvidence, KindRejections, KindSelection, KindGap, KindUncovered, KindRecoverable, KindRewards, KindStrataSample},
		Factory: func(sc engine.StageConfig) (engine.Stage, error) {
			cfg, err := DecodeConfig(sc)
			if err != nil {
				return nil, err
			}
			return &selectStage{cfg: cfg, judges: deps.judges}, nil
		}, Doc: "judge policy rollouts and emit capability-gap, uncovered, feedback-recoverable, strata and reward tables"})
}

// DecodeConfig decodes a stage config block over DefaultConfig and
// validates it. strata_weights, when given, replaces the default mix.
func DecodeConfig(sc engine.StageConfig) (Config, error) {
	cfg := DefaultConfig()
	def := cfg.StrataWeights
	cfg.StrataWeights = nil
	if err := sc.Decode(&cfg); err != nil {
		return cfg, err
	}
	if cfg.StrataWeights == nil {
		cfg.StrataWeights = def
	}
	return cfg, cfg.Validate()
}

type selectStage struct {
	cfg    Config
	judges *engine.Judges
}

// Run selects over the rollouts. It holds every rollout (selection is
// global: pass@k, strata and the gap need all of a task's rollouts, in any
// order) and, of the upstream items, only those some rollout names, which
// are all Select looks up; the items stream past a batch at a time.
func (s *selectStage) Run(ctx context.Context, sc *engine.StageContext) error {
	paths := append(append([]string(nil), sc.Files...), sc.InputPaths(KindRollouts)...)
	if len(paths) == 0 {
		return fmt.Errorf("%w: stage %s: no rollout files (list them under inputs:, or produce %q upstream)", ErrConfig, sc.Name, KindRollouts)
	}
	rows, label, err := ReadRollouts(paths...)
	if err != nil {
		return err
	}
	items, nItems, err := rolloutItems(ctx, sc, rows)
	if err != nil {
		return err
	}
	sc.Log.Info("select: judging rollouts", "rollouts", len(rows), "items", nItems, "files", len(paths))
	var prog engine.Progress
	res, err := Select(ctx, s.cfg, rows, Options{Judges: s.judges, Items: items, RowLabel: label, Verified: func(n, total int) {
		if prog == nil {
			prog = sc.Progress(int64(total))
		}
		prog.Add(int64(n))
	}})
	if prog != nil {
		prog.Done()
	}
	if err != nil {
		return err
	}
	if err := WriteResult(sc, res); err != nil {
		return err
	}
	for name, n := range res.Report.Counters() {
		sc.Count(name, n)
	}
	sc.Log.Info("select: done", "tasks", res.Report.Tasks, "gap", len(res.Gap), "uncovered", len(res.Uncovered),
		"recoverable", len(res.Recoverable), "excluded_unjudged", res.Report.StudentExcluded+res.Report.TeacherExcluded)
	return nil
}

// rolloutItems streams the upstream items and keeps those a rollout names,
// in input order; n counts every item read.
func rolloutItems(ctx context.Context, sc *engine.StageContext, rows []Rollout) (items []engine.Item, n int, err error) {
	tasks := make(map[string]bool, len(rows))
	for _, r := range rows {
		tasks[r.TaskID] = true
	}
	err = engine.ReadBatches[engine.Item](ctx, sc, "items", engine.BatchOptions{}).Each(func(b []engine.Item) error {
		n += len(b)
		for _, it := range b {
			if tasks[it.ItemID] {
				items = append(items, it)
			}
		}
		return nil
	})
	return items, n, err
}

// ReadRollouts reads rollout files (JSONL or Parquet) in order and returns
// a labeller naming row i by its file and 1-based row number in that file.
func ReadRollouts(paths ...string) ([]Rollout, func(i int) string, error) {
	var rows []Rollout
	starts := make([]int, len(paths))
	for k, p := range paths {
		starts[k] = len(rows)
		r, err := engine.ReadRows[Rollout](p)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, r...)
	}
	label := func(i int) string {
		k := sort.Search(len(starts), func(k int) bool { return starts[k] > i }) - 1
		return fmt.Sprintf("%s row %d", filepath.Base(paths[k]), i-starts[k]+1)
	}
	return rows, label, nil
}

// WriteResult writes every output kind of res through the stage's writers.
func WriteResult(sc *engine.StageContext, res *Result) error {
	return errors.Join(
		engine.WriteRows(sc, KindEvidence, res.Evidence), engine.WriteRows(sc, KindRejections, res.Rejections),
		engine.WriteRows(sc, KindSelection, res.Tasks), engine.WriteRows(sc, KindGap, res.Gap), engine.WriteRows(sc, KindUncovered, res.Uncovered),
		engine.WriteRows(sc, KindRecoverable, res.Recoverable), engine.WriteRows(sc, KindRewards, res.Rewards),
		engine.WriteRows(sc, KindStrataSample, res.StrataSample))
}

// WriteDir writes every output kind of res as shards <kind>-NNNNN.parquet in
// dir (for the CLI, outside a pipeline) and returns the committed shards.
// Kinds without rows commit no file.
func WriteDir(ctx context.Context, dir string, opts engine.WriterOptions, res *Result) ([]engine.ShardInfo, error) {
	var all []engine.ShardInfo
	add := func(infos []engine.ShardInfo, err error) error {
		all = append(all, infos...)
		return err
	}
	for _, step := range []func() error{
		func() error { return add(engine.WriteAll(ctx, dir, KindEvidence, KindEvidence, opts, res.Evidence)) },
		func() error {
			return add(engine.WriteAll(ctx, dir, KindRejections, KindRejections, opts, res.Rejections))
		},
		func() error { return add(engine.WriteAll(ctx, dir, KindSelection, KindSelection, opts, res.Tasks)) },
		func() error { return add(engine.WriteAll(ctx, dir, KindGap, KindGap, opts, res.Gap)) },
		func() error { return add(engine.WriteAll(ctx, dir, KindUncovered, KindUncovered, opts, res.Uncovered)) },
		func() error {
			return add(engine.WriteAll(ctx, dir, KindRecoverable, KindRecoverable, opts, res.Recoverable))
		},
		func() error { return add(engine.WriteAll(ctx, dir, KindRewards, KindRewards, opts, res.Rewards)) },
		func() error {
			return add(engine.WriteAll(ctx, dir, KindStrataSample, KindStrataSample, opts, res.StrataSample))
		},
	} {
		if err := step(); err != nil {
			return all, err
		}
	}
	return all, nil
}

// OutputKinds lists the select stage's output kinds.
var OutputKinds = []string{KindEvidence, KindRejections, KindSelection, KindGap, KindUncovered, KindRecoverable, KindRewards, KindStrataSample}

// Counters flattens the report into funnel counters for the run summary.
func (r Report) Counters() map[string]int64 {
	m := map[string]int64{
		"rollouts": int64(r.Rollouts), "rejected": int64(r.Rejected), "attached": int64(r.Attached),
		"verified": int64(r.Verified), "extract_failed": int64(r.ExtractFailed),
		"pass": int64(r.Pass), "fail": int64(r.Fail), "unjudged": int64(r.Unjudged), "tasks": int64(r.Tasks),
		"excluded_unjudged.student": int64(r.StudentExcluded), "excluded_unjudged.teacher": int64(r.TeacherExcluded),
		"recoverable": int64(r.Recoverable), "recoverable_no_context": int64(r.RecoverableNoContext),
		"strata_sampled": int64(r.Sampled),
	}
	for k, v := range r.Classes {
		m["class."+k] = int64(v)
	}
	for k, v := range r.Strata {
		m["stratum."+k] = int64(v)
	}
	return m
}
