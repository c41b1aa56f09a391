// Package stagetest runs a stage inside a real pipeline for the tests of
// the packages that register stages (rtl, kernels, verify, ...): the
// pipeline file is loaded strictly and run by engine.Runner with the
// commit protocol, so a stage is tested the way a build runs it. Engine's
// own tests cannot use it (it imports engine and engine/ingest).
package stagetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
)

// Run writes pipeline (YAML, with work_dir "work") to dir/p.yaml, loads it
// with a registry holding ingest's stage types and those register adds,
// and runs it; any error fails t.
func Run(t testing.TB, dir, pipeline string, register ...func(*engine.Registry)) {
	t.Helper()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	for _, r := range register {
		r(reg)
	}
	cfg, err := engine.LoadPipeline(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Output is what a verifying stage committed: its items, rejections and
// evidence rows.
type Output struct {
	Items      []engine.Item
	Rejections []engine.Rejection
	Evidence   []engine.Evidence
}

// Read reads stage's committed output under dir/work; an unreadable shard
// fails t.
func Read(t testing.TB, dir, stage string) Output {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(dir, "work", stage))
	if err != nil {
		t.Fatal(err)
	}
	var o Output
	if o.Items, err = engine.ReadAll[engine.Item](out.Shards("items")...); err != nil {
		t.Fatal(err)
	}
	if o.Rejections, err = engine.ReadAll[engine.Rejection](out.Shards("rejections")...); err != nil {
		t.Fatal(err)
	}
	if o.Evidence, err = engine.ReadAll[engine.Evidence](out.Shards("evidence")...); err != nil {
		t.Fatal(err)
	}
	return o
}

// RegisterItemsSource adds the test source stage type "items_jsonl": it
// writes the items of its input files (JSONL or Parquet rows of
// engine.Item) unvalidated, as a fixture upstream for a stage's test.
func RegisterItemsSource(reg *engine.Registry) {
	reg.Register("items_jsonl", func(engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			rows, err := engine.ReadAll[engine.Item](sc.Files...)
			if err != nil {
				return err
			}
			w, err := engine.StageWriter[engine.Item](sc, "items")
			if err != nil {
				return err
			}
			return w.Write(rows...)
		}), nil
	}, "test source")
}
