package pack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// InputKind is the upstream shard kind the pack stage reads.
const InputKind = "trajectories"

// RegisterStages registers the "pack" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "pack", Config: Config{}, Parallelism: engine.Global, Outputs: []string{KindPacked, KindDropped, KindRejections},
		Factory: newStage,
		Doc:     "render trajectories with a chat template, tokenise exactly, drop samples over seq_len, pack (bfd|ffs|none) into megatron or trl Parquet rows"})
}

func newStage(sc engine.StageConfig) (engine.Stage, error) {
	cfg := DefaultConfig()
	if err := sc.Decode(&cfg); err != nil {
		return nil, err
	}
	if cfg.Tokenizer != tokenizer.CL100KBase && cfg.Tokenizer != tokenizer.O200KBase && cfg.Tokenizer != "" {
		cfg.Tokenizer = sc.Path(cfg.Tokenizer) // tokenizer.json relative to the pipeline file
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("stage %s: %w", sc.Name, err)
	}
	return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
		inputs := append(st.InputPaths(InputKind), st.Files...)
		// An earlier run's pack manifest goes with its shards (which the
		// runner cleared): a run that fails leaves no manifest that
		// `pack audit` would read as describing this directory.
		if err := os.Remove(filepath.Join(st.Dir, ManifestFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", engine.ErrIO, err)
		}
		opts := engine.DefaultWriterOptions()
		m, err := run(ctx, cfg, inputs, target{sc: st, opts: opts}, st.Log)
		if err != nil {
			return err
		}
		st.Count("samples_in", m.Counts.SamplesIn)
		st.Count("packed", m.Counts.Packed)
		st.Count("dropped_too_long", m.Counts.Dropped)
		st.Count("rejected", m.Counts.Rejected)
		st.Count("rows", m.Counts.Rows)
		st.Count("tokens_packed", m.Counts.TokensPacked)
		st.Count("fill_ppm", int64(m.FillRatio*1e6))
		st.PassedOn(m.Counts.Packed) // samples, not rows of packed samples
		return nil
	}), nil
}
