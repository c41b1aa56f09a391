package cluster

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// PartState says whether one shard part of a stage is committed and
// current, and if not, why.
type PartState struct {
	Stage     string
	Shard     engine.Shard
	Committed bool
	Reason    string // why it is not (empty when committed)
}

// PartStates checks every part of stage s with engine.PartStatus — the
// runner's own skip test — in parallel, since the raw-file fingerprints mean
// reading the inputs.
func PartStates(ctx context.Context, reg *engine.Registry, cfg *engine.PipelineConfig, s StagePlan, writer engine.WriterOptions) ([]PartState, error) {
	out := make([]PartState, s.Shards)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range out {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			sh := s.Shard(i)
			reason, err := engine.PartStatus(reg, cfg, s.Name, sh, writer)
			if err != nil {
				return err
			}
			out[i] = PartState{Stage: s.Name, Shard: sh, Committed: reason == "", Reason: reason}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
