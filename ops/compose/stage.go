package compose

import (
	"context"
	"errors"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/selection"
)

// Output kinds of the compose stage.
const (
	KindTrain       = "train"       // engine.Item, the training split in selection order
	KindValidation  = "validation"  // engine.Item, the validation split
	KindComposition = "composition" // Assignment, why each item is in
	KindCoverage    = "coverage"    // CoverageRow
	KindRejections  = "rejections"  // engine.Rejection, items not admitted
)

// OutputKinds lists the compose stage's output kinds.
var OutputKinds = []string{KindTrain, KindValidation, KindComposition, KindCoverage, KindRejections}

// StageSettings is the compose stage's config block: Config plus the
// optional restriction to tasks a select stage kept.
type StageSettings struct {
	Config `yaml:",inline"`
	// RestrictTo names an upstream kind of selection.TaskSelection rows
	// (e.g. "gap"); only items whose id appears there are composed. Empty
	// composes every upstream item.
	RestrictTo string `yaml:"restrict_to"`
}

// RegisterStages adds the "compose" stage type.
//
//   - name: compose
//     type: compose
//     from: [verify, select]      # upstream "items" (and "gap" with restrict_to)
//     config: {restrict_to: gap, validation_fraction: 0.2, lineage_cap: 4, train_size: 1000,
//     targets: {domain: {rtl: 0.7, kernel: 0.3}}}
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "compose", Config: StageSettings{}, Parallelism: engine.Global, Outputs: []string{KindTrain, KindValidation, KindComposition, KindCoverage, KindRejections},
		Factory: func(sc engine.StageConfig) (engine.Stage, error) {
			cfg := StageSettings{Config: DefaultConfig()}
			if err := sc.Decode(&cfg); err != nil {
				return nil, err
			}
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
			return &composeStage{cfg: cfg}, nil
		}, Doc: "split items by lineage root into train/validation, balance the mix under per-lineage caps, report coverage"})
}

type composeStage struct{ cfg StageSettings }

// Run composes the items. It holds every item it composes, whole: the
// split, the balanced fill and the lineage caps look at all of them at
// once, and train and validation are the items themselves in the order
// Compose gives. Under restrict_to, the selection's task ids are read
// first and the items stream past a batch at a time, so the items it
// drops are never held.
func (s *composeStage) Run(ctx context.Context, sc *engine.StageContext) error {
	var ids map[string]bool // restrict_to's tasks; nil: every item
	if s.cfg.RestrictTo != "" {
		if len(sc.Inputs(s.cfg.RestrictTo)) == 0 {
			sc.Log.Warn("compose: restrict_to kind has no upstream shards; composing nothing", "kind", s.cfg.RestrictTo)
		}
		keep, err := engine.ReadInputs[selection.TaskSelection](sc, s.cfg.RestrictTo)
		if err != nil {
			return err
		}
		ids = taskIDs(keep)
	}
	items := make([]engine.Item, 0, sc.InputRows("items")) // sized once: no copies left behind by growth
	err := engine.ReadBatches[engine.Item](ctx, sc, "items", engine.BatchOptions{}).Each(func(b []engine.Item) error {
		for _, it := range b {
			if ids == nil || ids[it.ItemID] {
				items = append(items, it)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res, err := Compose(items, s.cfg.Config)
	if err != nil {
		return err
	}
	if err := errors.Join(engine.WriteRows(sc, KindTrain, res.Train), engine.WriteRows(sc, KindValidation, res.Validation),
		engine.WriteRows(sc, KindComposition, res.Assignments), engine.WriteRows(sc, KindCoverage, res.Coverage),
		engine.WriteRows(sc, KindRejections, res.Rejections)); err != nil {
		return err
	}
	for k, n := range res.Counters() {
		sc.Count(k, n)
	}
	sc.Log.Info("compose: coverage\n" + FormatCoverage(res.Coverage))
	return ctx.Err()
}

// Restrict keeps the items whose id is a task of keep, in item order.
func Restrict(items []engine.Item, keep []selection.TaskSelection) []engine.Item {
	ids := taskIDs(keep)
	var out []engine.Item
	for _, it := range items {
		if ids[it.ItemID] {
			out = append(out, it)
		}
	}
	return out
}

func taskIDs(keep []selection.TaskSelection) map[string]bool {
	ids := make(map[string]bool, len(keep))
	for _, k := range keep {
		ids[k.TaskID] = true
	}
	return ids
}

// WriteDir writes every output kind as shards <kind>-NNNNN.parquet in dir
// (for the CLI) and returns the committed shards.
func WriteDir(ctx context.Context, dir string, opts engine.WriterOptions, res *Result) ([]engine.ShardInfo, error) {
	var all []engine.ShardInfo
	add := func(infos []engine.ShardInfo, err error) error {
		all = append(all, infos...)
		return err
	}
	for _, step := range []func() error{
		func() error { return add(engine.WriteAll(ctx, dir, KindTrain, KindTrain, opts, res.Train)) },
		func() error {
			return add(engine.WriteAll(ctx, dir, KindValidation, KindValidation, opts, res.Validation))
		},
		func() error {
			return add(engine.WriteAll(ctx, dir, KindComposition, KindComposition, opts, res.Assignments))
		},
		func() error { return add(engine.WriteAll(ctx, dir, KindCoverage, KindCoverage, opts, res.Coverage)) },
		func() error {
			return add(engine.WriteAll(ctx, dir, KindRejections, KindRejections, opts, res.Rejections))
		},
	} {
		if err := step(); err != nil {
			return all, err
		}
	}
	return all, nil
}

// Counters flattens the result into funnel counters for the run summary:
// <split>.items, <split>.lineages, <split>.skipped, <split>.<dim>.<value>,
// <split>.family_top.top<k>, and rejected.<reason>.
func (r *Result) Counters() map[string]int64 {
	m := map[string]int64{}
	for _, c := range r.Coverage {
		key := c.Split + "." + c.Dimension + "." + strings.ReplaceAll(c.Value, " ", "_")
		if c.Dimension == "total" {
			key = c.Split + "." + c.Value
		}
		m[key] = c.Count
	}
	for split, n := range r.Skipped {
		m[split+".skipped"] = int64(n)
	}
	for _, rj := range r.Rejections {
		m["rejected."+rj.Reason]++
	}
	return m
}
