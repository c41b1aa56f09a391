package ingest

import (
	"context"
	"fmt"

	"github.com/crucible-data/crucible/engine"
)

// StageConfig configures the ingest stage.
type StageConfig struct {
	Preset string `yaml:"preset"`
}

// RegisterStages adds the "ingest" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "ingest", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "rejections"}, SplitsFiles: true,
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			cfg := StageConfig{Preset: PresetItems}
			if err := c.Decode(&cfg); err != nil {
				return nil, err
			}
			if _, err := New(cfg.Preset, Sink{}); err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
				return runStage(ctx, sc, cfg)
			}), nil
		}, Doc: "reads the stage's input files (item JSONL/Parquet, verilog-eval, task folders) into validated item shards and rejection rows"})
}

func runStage(ctx context.Context, sc *engine.StageContext, cfg StageConfig) error {
	items, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	items.KeepEmpty() // an empty input is an empty, readable shard, not no file
	rejects, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	// Write's variadic slice, reused: a fresh one per row was a heap
	// object (Write takes its rows' addresses).
	var item [1]engine.Item
	var reject [1]engine.Rejection
	g, err := New(cfg.Preset, Sink{
		Item:   func(it engine.Item) error { item[0] = it; return items.Write(item[:]...) },
		Reject: func(r engine.Rejection) error { reject[0] = r; return rejects.Write(reject[:]...) },
	})
	if err != nil {
		return err
	}
	g.SinkCopies = true // ShardWriter.Write copies rows into Arrow builders
	// A split run reads this part's pieces of the files (contiguous rows,
	// balanced across parts); an unsplit one reads them whole.
	ranges := sc.FileRanges
	if ranges == nil {
		for _, f := range sc.Files {
			ranges = append(ranges, engine.FileRange{Path: f})
		}
	}
	var keep []engine.FileRange
	var files []string
	for _, r := range ranges {
		// A directory input reaches the stage as its files; ingest reads
		// the ones its preset understands.
		if (cfg.Preset == PresetTaskDir && isTaskJSON(r.Path)) || (cfg.Preset != PresetTaskDir && isDataFile(r.Path)) {
			keep = append(keep, r)
			if len(files) == 0 || files[len(files)-1] != r.Path { // a file's ranges are adjacent
				files = append(files, r.Path)
			}
		}
	}
	// Progress in input bytes, as they are read (one big file moves too).
	p := sc.Progress(engine.InputBytes(files))
	defer p.Done()
	ctx = engine.AlsoMeter(ctx, engine.MeterProgress(p))
	for _, r := range keep {
		if err := g.IngestRange(ctx, r); err != nil {
			return fmt.Errorf("ingest %s %s: %w", r.Path, r.String(), err)
		}
	}
	sc.Count("rows", g.Stats.Rows)
	sc.Count("items", g.Stats.Items)
	sc.Count("rejected", g.Stats.Rejected)
	for r, n := range g.Stats.Reasons {
		sc.Count("rejected."+r, n)
	}
	sc.Log.Info("ingest done", "files", g.Stats.Files, "items", g.Stats.Items, "rejected", g.Stats.Rejected)
	return nil
}
