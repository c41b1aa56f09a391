package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// Issue 16.5: an interrupt stops ingest inside a file (standalone and in a
// build's ingest stage, which both read through IngestFile), instead of
// reading the file to its end.
func TestIngestFileStopsOnCancel(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, `{"item_id":"i%d"}`+"\n", i)
	}
	p := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := New(PresetItems, Sink{
		Item: func(engine.Item) error { return nil },
		// The first row is rejected (it lacks fields): the interrupt arrives.
		Reject: func(engine.Rejection) error { cancel(); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	err = g.IngestFile(ctx, p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("IngestFile after cancel: %v, want context.Canceled", err)
	}
	if g.Stats.Rows >= 5000 || g.Stats.Rows == 0 {
		t.Errorf("read %d of 5000 rows after the interrupt at row 1", g.Stats.Rows)
	}
}
