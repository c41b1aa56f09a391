package decontam

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

func scanFileRecords(path string) ([]dedup.Record, error) {
	var out []dedup.Record
	err := FileRecords{Paths: []string{path}, IDField: "id", Fields: []string{"prompt", "ref"}}.Scan(context.Background(), func(r dedup.Record) error {
		r.Path = ""
		out = append(out, r)
		return nil
	})
	return out, err
}

// TestDecontamReadsCompressedJSONL: benchmark and corpus files given as
// .jsonl.gz / .jsonl.zst (or gzip named .jsonl) give decontam the same
// records as plain JSONL; other compressions are one input error.
func TestDecontamReadsCompressedJSONL(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "bench.jsonl")
	rows := `{"id": "p1", "prompt": "Implement a 4-bit counter.", "ref": "module TopModule(input clk); endmodule"}
{"id": "p2", "prompt": "Implement a mux.", "ref": "module TopModule(input a, b, s, output y); assign y = s ? b : a; endmodule"}
`
	if err := os.WriteFile(plain, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := scanFileRecords(plain)
	if err != nil || len(want) != 2 {
		t.Fatalf("plain: %d records, %v", len(want), err)
	}
	for kind, p := range testenv.CompressedCopies(t, plain) {
		got, err := scanFileRecords(p)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, %v; want %+v", kind, got, err, want)
		}
	}
	for what, p := range testenv.BadInputs(t, dir) {
		if _, err := scanFileRecords(p); !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: want an input error naming the file, got %v", what, err)
		}
	}
}
