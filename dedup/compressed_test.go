package dedup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

func dedupDecisions(t *testing.T, path string) []Decision {
	t.Helper()
	res, err := Run(context.Background(), FileSource{Paths: []string{path}, IDField: "id", TextFields: []string{"text"}}, DefaultConfig(), nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer res.Close()
	out := make([]Decision, res.Len())
	for i := range out {
		out[i] = res.Decision(i)
	}
	return out
}

// TestDedupReadsCompressedJSONL: gzip and zstd corpora dedup exactly like
// the plain file (before: "line 1: invalid UTF-8", exit 3).
func TestDedupReadsCompressedJSONL(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 60; i++ {
		text := fmt.Sprintf("module counter_%d counts clock edges and resets on rst; width %d bits", i%20, i%20)
		fmt.Fprintf(&b, "{\"id\": \"doc-%d\", \"text\": %q}\n", i, text)
	}
	plain := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(plain, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := dedupDecisions(t, plain)
	removed := 0
	for _, d := range want {
		if !d.Kept {
			removed++
		}
	}
	if removed != 40 {
		t.Fatalf("plain corpus: %d removed, want the 40 exact copies", removed)
	}
	for kind, p := range testenv.CompressedCopies(t, plain) {
		if got := dedupDecisions(t, p); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decisions differ from the plain file", kind)
		}
	}
	for what, p := range testenv.BadInputs(t, dir) {
		_, err := Run(context.Background(), FileSource{Paths: []string{p}, IDField: "id", TextFields: []string{"text"}}, DefaultConfig(), nil)
		if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: want an input error naming the file, got %v", what, err)
		}
	}
}
