package pack

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// TestPackReadsCompressedJSONL: a .jsonl.gz, a .jsonl.zst and gzip under a
// .jsonl name pack to the same shard and counts as the plain file (before,
// pack read the compressed bytes as lines and rejected every one).
func TestPackReadsCompressedJSONL(t *testing.T) {
	dir := t.TempDir()
	plain := writeTestCorpus(t, dir, 40)
	cfg := testConfig(LayoutMegatron, AlgoBestFitDecreasing)
	want, err := Run(context.Background(), cfg, []string{plain}, filepath.Join(dir, "plain"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if want.Counts.Packed == 0 {
		t.Fatal("the plain corpus packed nothing")
	}
	for kind, p := range testenv.CompressedCopies(t, plain) {
		got, err := Run(context.Background(), cfg, []string{p}, filepath.Join(dir, kind), quiet)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !reflect.DeepEqual(got.Counts, want.Counts) || got.Shards[0].SHA256 != want.Shards[0].SHA256 {
			t.Fatalf("%s: counts %+v, want %+v (or the packed shard differs)", kind, got.Counts, want.Counts)
		}
	}
}

// TestPackRejectsUnsupportedCompression: one input error, not a packed run
// of bad_line rejections.
func TestPackRejectsUnsupportedCompression(t *testing.T) {
	dir := t.TempDir()
	for what, p := range testenv.BadInputs(t, dir) {
		_, err := Run(context.Background(), testConfig(LayoutMegatron, AlgoBestFitDecreasing), []string{p}, filepath.Join(dir, what), quiet)
		if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: want an input error naming the file, got %v", what, err)
		}
	}
}
