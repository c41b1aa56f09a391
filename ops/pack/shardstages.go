package pack

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// Cross-shard packing (issue 11): the "pack" stage needs every sample in one
// process; these three stages split it so a cluster can run it:
//
//	pack_lengths (sharded)   render + tokenise a part, write one length row per sample
//	pack_plan    (unsharded) one global PackLengths over every part's lengths
//	pack_write   (sharded)   part i re-renders the samples of its contiguous
//	                         range of plan rows and writes them
//
// With the same config, seed and input order the packed rows equal the
// single-process "pack" stage's, row for row. Only lengths and ids travel to
// the planner, never tokens, so its memory is ~100 bytes per sample.

// Shard kinds of the cross-shard stages.
const (
	KindPackLengths = "pack_lengths"
	KindPackPlan    = "pack_plan"
	KindPackMeta    = "pack_meta" // one row: the config identity a part was made with
)

// LengthRow is one rendered sample as pack_lengths saw it. Source and Row
// locate the trajectory so pack_write can read it again: Source is an
// upstream shard path relative to the work directory, or an absolute path of
// a raw input file (FromFile); Row is the Parquet row index or JSONL line.
type LengthRow struct {
	DocID         string `arrow:"doc_id"`
	Source        string `arrow:"source"`
	FromFile      bool   `arrow:"from_file"`
	Row           int64  `arrow:"row"`
	Tokens        int64  `arrow:"tokens"`
	TrainedTokens int64  `arrow:"trained_tokens"`
	Domain        string `arrow:"domain"`
	Family        string `arrow:"family"`
	Dropped       bool   `arrow:"dropped"` // longer than seq_len: never packed, never truncated
}

// PlanRow is one packed row of the global plan: its samples in placement
// order and where each lives.
type PlanRow struct {
	RowIndex   int64    `arrow:"row_index"`
	DocIDs     []string `arrow:"doc_ids"`
	Sources    []string `arrow:"sources"`
	FromFile   []bool   `arrow:"from_file"`
	SourceRows []int64  `arrow:"source_rows"`
	Tokens     []int64  `arrow:"tokens"`
}

// PackMeta pins the config a part was produced with, so a plan built with
// one tokeniser or template is never written with another.
type PackMeta struct {
	TokenizerSpec string `arrow:"tokenizer_spec"`
	TokenizerID   string `arrow:"tokenizer_id"`
	TokenizerHash string `arrow:"tokenizer_sha256"`
	TemplateHash  string `arrow:"template_hash"`
	SeqLen        int64  `arrow:"seq_len"`
	Layout        string `arrow:"layout"`
	Algorithm     string `arrow:"algorithm"`
	Seed          int64  `arrow:"seed"` // the uint64 seed's bits
}

// ShardConfig is the config of all three stages. The packing fields must be
// identical across them (checked through PackMeta). Plan may name the
// pack_plan stage pack_write lists in from: (its plan is a broadcast input:
// every part is handed all of it).
type ShardConfig struct {
	Config `yaml:",inline"`
	Plan   string `yaml:"plan"`
}

// RegisterShardStages registers pack_lengths, pack_plan and pack_write.
func RegisterShardStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "pack_lengths", Config: ShardConfig{}, Parallelism: engine.PerPart, Outputs: []string{KindPackLengths, KindPackMeta, KindRejections},
		Factory: shardFactory(runPackLengths),
		Doc:     "cross-shard packing 1/3 (sharded): render and tokenise a part's trajectories, write pack_lengths rows (over-length samples marked dropped)"})
	reg.RegisterType(engine.StageType{Name: "pack_plan", Config: ShardConfig{}, Parallelism: engine.Global, Outputs: []string{KindPackPlan, KindPackMeta, KindDropped, KindRejections},
		Factory: shardFactory(runPackPlan),
		Doc:     "cross-shard packing 2/3 (unsharded): one global best-fit plan over every part's lengths; pack_plan rows, dropped report, fill"})
	reg.RegisterType(engine.StageType{Name: "pack_write", Config: ShardConfig{}, Parallelism: engine.PerPart, Outputs: []string{KindPacked}, Broadcast: []string{KindPackPlan, KindPackMeta},
		Factory: shardFactory(runPackWrite),
		Doc:     "cross-shard packing 3/3 (sharded): part i re-renders the samples of its contiguous range of plan rows and writes packed rows"})
}

type shardRun func(ctx context.Context, sc *engine.StageContext, cfg ShardConfig, env *packEnv) error

// packEnv is the loaded tokeniser and renderer plus their identity.
type packEnv struct {
	r    *Renderer
	meta PackMeta
}

func shardFactory(run shardRun) engine.StageFactory {
	return func(scfg engine.StageConfig) (engine.Stage, error) {
		cfg := ShardConfig{Config: DefaultConfig(), Plan: defaultPlanStage}
		if err := scfg.Decode(&cfg); err != nil {
			return nil, err
		}
		if cfg.Tokenizer != tokenizer.CL100KBase && cfg.Tokenizer != tokenizer.O200KBase && cfg.Tokenizer != "" {
			cfg.Tokenizer = scfg.Path(cfg.Tokenizer)
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", scfg.Name, err)
		}
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			tok, err := tokenizer.Load(cfg.Tokenizer)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrConfig, err)
			}
			tmpl := cfg.template()
			r, err := NewRenderer(tok, tmpl)
			if err != nil {
				return err
			}
			env := &packEnv{r: r, meta: PackMeta{TokenizerSpec: cfg.Tokenizer, TokenizerID: tok.ID(), TokenizerHash: tok.FileHash(),
				TemplateHash: tmpl.Hash(), SeqLen: int64(cfg.SeqLen), Layout: cfg.Layout, Algorithm: cfg.Algorithm, Seed: int64(cfg.Seed)}}
			return run(ctx, sc, cfg, env)
		}), nil
	}
}

// checkMeta compares an upstream part's identity with this stage's. With
// lengths only the fields that decide lengths matter; the writer must match
// the plan in everything.
func checkMeta(what string, have, want PackMeta, all bool) error {
	var diffs []string
	diff := func(field string, a, b any) {
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s: %v upstream, %v here", field, a, b))
		}
	}
	diff("tokenizer id", have.TokenizerID, want.TokenizerID)
	diff("tokenizer sha256", have.TokenizerHash, want.TokenizerHash)
	diff("template hash", have.TemplateHash, want.TemplateHash)
	diff("seq_len", have.SeqLen, want.SeqLen)
	if all {
		diff("layout", have.Layout, want.Layout)
		diff("algorithm", have.Algorithm, want.Algorithm)
		diff("seed", uint64(have.Seed), uint64(want.Seed))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s was made with a different config (the pack_lengths, pack_plan and pack_write configs must be identical): %s",
			ErrConfig, what, strings.Join(diffs, "; "))
	}
	return nil
}

func readMeta(sc *engine.StageContext, paths []string, want PackMeta, all bool) error {
	if len(paths) == 0 {
		return fmt.Errorf("%w: stage %s: no upstream %s shard (is the upstream a pack_lengths/pack_plan stage?)", ErrInput, sc.Name, KindPackMeta)
	}
	for _, p := range paths {
		rows, err := engine.ReadRows[PackMeta](p)
		if err != nil {
			return err
		}
		for _, m := range rows {
			if err := checkMeta(p, m, want, all); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeMeta(sc *engine.StageContext, m PackMeta) error {
	w, err := engine.StageWriter[PackMeta](sc, KindPackMeta)
	if err != nil {
		return err
	}
	return w.Write(m)
}

// defaultPlanStage is `plan:`'s default: any pack_plan stage in from: will do.
const defaultPlanStage = "pack_plan"

// splitSource parses a sample's source ("path#row" for Parquet, "path:line"
// for JSONL) into its path and number.
func splitSource(src string) (string, int64, error) {
	i := strings.LastIndexAny(src, "#:")
	if i < 0 {
		return "", 0, fmt.Errorf("%w: sample source %q has no row", ErrInput, src)
	}
	n, err := strconv.ParseInt(src[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("%w: sample source %q: %v", ErrInput, src, err)
	}
	return src[:i], n, nil
}

func runPackLengths(ctx context.Context, sc *engine.StageContext, cfg ShardConfig, env *packEnv) error {
	work := sc.WorkDir()
	inputs := sc.InputPaths(InputKind)
	var files []string
	for _, f := range sc.Files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInput, err)
		}
		files = append(files, abs)
	}
	inputs = append(inputs, files...)
	if err := writeMeta(sc, env.meta); err != nil {
		return err
	}
	lw, err := engine.StageWriter[LengthRow](sc, KindPackLengths)
	if err != nil {
		return err
	}
	if len(inputs) == 0 {
		// an empty part is fine: another part holds the data
		sc.Log.Info("pack_lengths: no inputs in this part")
		return nil
	}
	isFile := map[string]bool{}
	for _, f := range files {
		isFile[f] = true
	}
	c, err := loadCorpus(ctx, inputs, env.r, cfg.SeqLen, cfg.workers())
	if err != nil {
		return err
	}
	var rejected []engine.Rejection
	var kept, dropped int64
	for i := range c.samples {
		s := &c.samples[i]
		if s.reject != nil {
			rejected = append(rejected, engine.Rejection{ItemID: s.id, Stage: "pack", Gate: "render", Reason: s.reject.Reason, Detail: s.source + ": " + s.reject.Detail})
			continue
		}
		path, row, err := splitSource(s.source)
		if err != nil {
			return err
		}
		fromFile := isFile[path]
		if !fromFile {
			if rel, err := filepath.Rel(work, path); err == nil {
				path = rel
			}
		}
		if s.stored {
			kept++
		} else {
			dropped++
		}
		if err := lw.Write(LengthRow{DocID: s.id, Source: path, FromFile: fromFile, Row: row, Tokens: int64(s.tokens),
			TrainedTokens: int64(s.trained), Domain: s.domain, Family: s.family, Dropped: !s.stored}); err != nil {
			return err
		}
	}
	if len(rejected) > 0 {
		rw, err := engine.StageWriter[engine.Rejection](sc, KindRejections)
		if err != nil {
			return err
		}
		if err := rw.Write(rejected...); err != nil {
			return err
		}
	}
	sc.Count("samples_in", int64(len(c.samples)))
	sc.Count("rejected", int64(len(rejected)))
	sc.Count("within_seq_len", kept)
	sc.Count("dropped_too_long", dropped)
	return nil
}

// resolveSource turns a length row's source into a path to open.
func resolveSource(work, src string, fromFile bool) string {
	if fromFile || filepath.IsAbs(src) {
		return src
	}
	return filepath.Join(work, src)
}

// sourceOrder orders samples as a single-process "pack" stage reads them:
// upstream shards (by path: parts in index order, shards in name order
// within a part) before raw files, then row. With several upstream stages
// this is their order only when `from` lists them alphabetically, and raw
// files follow their lexical path order.
func sourceOrder(a, b *LengthRow) int {
	if a.FromFile != b.FromFile {
		if a.FromFile {
			return 1
		}
		return -1
	}
	return cmp.Or(strings.Compare(a.Source, b.Source), cmp.Compare(a.Row, b.Row))
}
