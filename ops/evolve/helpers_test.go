package evolve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/rtl"
)

func loadItems(t testing.TB, preset string, paths ...string) []engine.Item {
	t.Helper()
	var items []engine.Item
	g, err := ingest.New(preset, ingest.Sink{
		Item: func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error {
			t.Errorf("ingest rejected %s: %s %s", r.ItemID, r.Reason, r.Detail)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.IngestPaths(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	return items
}

func bundledSeeds(t testing.TB) []engine.Item {
	return loadItems(t, ingest.PresetTaskDir, filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl"))
}

func testVerifier(t testing.TB) *rtl.Verifier {
	t.Helper()
	cfg := rtl.DefaultConfig()
	cfg.TempDir = t.TempDir()
	v, err := rtl.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// judgesOf is the set of the given judges.
func judgesOf(t testing.TB, js ...engine.Judge) *engine.Judges {
	t.Helper()
	s, err := engine.NewJudges(0, js...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
