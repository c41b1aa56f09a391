package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/internal/testenv"
)

func writePlainJSONL(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < 300; i++ {
		b.WriteString(`{"n": ` + strings.Repeat("1", 1+i%5) + `, "text": "row é 漢 ` + strings.Repeat("x", i) + `"}` + "\n")
		if i%50 == 0 {
			b.WriteString("\n") // blank lines are skipped, line numbers still count them
		}
	}
	p := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompressedJSONLReadsLikePlain: gzip and zstd input, by extension or
// by magic bytes alone, gives the same rows and line numbers as plain JSONL.
func TestCompressedJSONLReadsLikePlain(t *testing.T) {
	dir := t.TempDir()
	plain := writePlainJSONL(t, dir)
	want, err := ReadRows[numRow](plain)
	if err != nil {
		t.Fatal(err)
	}
	wantLines := scanLines(t, plain)
	if len(want) != 300 {
		t.Fatalf("plain file read %d rows, want 300", len(want))
	}
	for kind, p := range testenv.CompressedCopies(t, plain) {
		got, err := ReadRows[numRow](p)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: rows differ from the plain file (%d vs %d rows)", kind, len(got), len(want))
		}
		if lines := scanLines(t, p); !reflect.DeepEqual(lines, wantLines) {
			t.Fatalf("%s: line numbers differ from the plain file", kind)
		}
		_, format, err := OpenInput(p)
		if err != nil || format.Kind != FormatJSONL || format.Compression == "" {
			t.Fatalf("%s: OpenInput detected %+v, %v", kind, format, err)
		}
	}
}

func scanLines(t *testing.T, p string) []int64 {
	var lines []int64
	if err := ScanJSONL(p, func(line int64, raw []byte) error { lines = append(lines, line); return nil }, func(e *JSONLError) { t.Fatalf("bad line %v", e) }); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestUnsupportedInputIsOneInputError: other compressions, binary data,
// truncated gzip and Parquet under a JSONL name each fail once with
// ErrInput naming the file and what was detected — never as bad lines.
func TestUnsupportedInputIsOneInputError(t *testing.T) {
	dir := t.TempDir()
	bad := testenv.BadInputs(t, dir)
	plain := writePlainJSONL(t, dir)
	gz, err := os.ReadFile(testenv.CompressedCopies(t, plain)["gz"])
	if err != nil {
		t.Fatal(err)
	}
	bad["gzip truncated"] = filepath.Join(dir, "trunc.jsonl.gz")
	if err := os.WriteFile(bad["gzip truncated"], gz[:len(gz)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	shards, err := WriteAll(t.Context(), dir, "pq", "nums", DefaultWriterOptions(), []numRow{{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	bad["Parquet"] = filepath.Join(dir, "really-parquet.jsonl")
	if err := os.Rename(filepath.Join(dir, shards[0].Path), bad["Parquet"]); err != nil {
		t.Fatal(err)
	}
	for what, p := range bad {
		badLines := 0
		err := ScanJSONL(p, func(int64, []byte) error { return nil }, func(*JSONLError) { badLines++ })
		if !errors.Is(err, ErrInput) {
			t.Fatalf("%s: want ErrInput, got %v (after %d bad lines)", what, err, badLines)
		}
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error does not name the file: %v", what, err)
		}
		word := strings.Fields(what)[0]
		if word == "garbage" {
			word = "binary"
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(word)) {
			t.Fatalf("%s: error does not say what was detected: %v", what, err)
		}
		if _, err := ReadRows[numRow](p); !errors.Is(err, ErrInput) {
			t.Fatalf("%s: ReadRows: want ErrInput, got %v", what, err)
		}
	}
}

// TestOneBadLineStaysALineRejection: a text file with a damaged line is
// still read line by line; only the damaged line is reported.
func TestOneBadLineStaysALineRejection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "one-bad.jsonl")
	if err := os.WriteFile(p, []byte("{\"n\":1}\n{\"n\":\xff}\n{\"n\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var good, badLines []int64
	err := ScanJSONL(p, func(line int64, _ []byte) error { good = append(good, line); return nil },
		func(e *JSONLError) { badLines = append(badLines, e.Line) })
	if err != nil || !reflect.DeepEqual(good, []int64{1, 3}) || !reflect.DeepEqual(badLines, []int64{2}) {
		t.Fatalf("good %v bad %v err %v", good, badLines, err)
	}
}
