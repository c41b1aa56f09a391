package ingest

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// comparable strips what legitimately differs between copies of one file:
// the file name (provenance.source) and its mtime (the ingest time).
func comparableItems(items []engine.Item) []engine.Item {
	out := append([]engine.Item(nil), items...)
	for i := range out {
		out[i].Provenance.Source, out[i].Provenance.IngestTime = "", time.Time{}
	}
	return out
}

// TestIngestReadsCompressedJSONL: gzip and zstd corpora (by extension, or
// gzip under a .jsonl name) ingest to the same items as the plain file, both
// named explicitly and found by a directory walk.
func TestIngestReadsCompressedJSONL(t *testing.T) {
	var lines []string
	for _, id := range []string{"a1", "a2", "a3"} {
		lines = append(lines, strings.Replace(goodRow, `"a1"`, `"`+id+`"`, 1))
	}
	plain := write(t, "corpus.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
	want, _, err := ingestAll(t, PresetItems, plain)
	if err != nil || len(want.items) != 3 || len(want.rejs) != 0 {
		t.Fatalf("plain: %d items, %d rejections, %v", len(want.items), len(want.rejs), err)
	}
	copies := testenv.CompressedCopies(t, plain)
	for kind, p := range copies {
		got, _, err := ingestAll(t, PresetItems, p)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if len(got.rejs) != 0 || !reflect.DeepEqual(comparableItems(got.items), comparableItems(want.items)) {
			t.Fatalf("%s: %d items, %d rejections (%+v), want the plain file's 3 items", kind, len(got.items), len(got.rejs), got.rejs)
		}
		if !isDataFile(p) {
			t.Fatalf("%s: the ingest stage would skip %s", kind, p)
		}
	}
	// A directory walk picks up every copy: 4 files, 3 new ids, 9 duplicates.
	got, _, err := ingestAll(t, PresetItems, filepath.Dir(plain))
	if err != nil || len(got.items) != 3 || len(got.rejs) != 9 {
		t.Fatalf("dir walk: %d items, %d rejections, %v", len(got.items), len(got.rejs), err)
	}
}

// TestIngestRejectsUnsupportedCompression: bzip2/xz/zip or binary input is
// one input error naming the file, not rows of invalid_utf8 rejections.
func TestIngestRejectsUnsupportedCompression(t *testing.T) {
	for what, p := range testenv.BadInputs(t, t.TempDir()) {
		c, _, err := ingestAll(t, PresetItems, p)
		if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: want an input error naming %s, got %v", what, p, err)
		}
		if len(c.rejs) != 0 {
			t.Fatalf("%s: %d rejection rows written before the error", what, len(c.rejs))
		}
	}
}
