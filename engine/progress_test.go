package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 16.9: a read bar counts rows and bytes, not files.
func TestReadBarRowsAndBytes(t *testing.T) {
	var buf bytes.Buffer
	b := &Bars{out: &buf}
	m, done := b.Reader("ingest", 3<<20)
	m.Add(1000, 1<<20)
	m.Add(2000, 2<<20)
	done()
	out := buf.String()
	for _, want := range []string{"ingest", "3000 rows", "3.0 MiB / 3.0 MiB", "100 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output lacks %q:\n%q", want, out)
		}
	}
}

type recMeter struct{ rows, bytes int64 }

func (r *recMeter) Add(rows, bytes int64) { r.rows += rows; r.bytes += bytes }

func TestFileMeter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.jsonl")
	os.WriteFile(p, []byte("{}\n{}\n{}\n"), 0o644)
	rec := &recMeter{}
	fm := MeterFile(WithReadMeter(context.Background(), rec), p)
	fm.Row(3)
	fm.Row(300) // capped at the file's size
	fm.Done()
	if rec.rows != 2 || rec.bytes != 9 {
		t.Errorf("meter %+v, want 2 rows, 9 bytes", rec)
	}
	MeterFile(context.Background(), p).Row(3) // no meter: a no-op
}
