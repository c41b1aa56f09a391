package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type scanned struct {
	line int64
	raw  string
}

func scanWhole(t testing.TB, path string) []scanned {
	t.Helper()
	var out []scanned
	err := ScanJSONL(path, func(line int64, raw []byte) error {
		out = append(out, scanned{line, string(raw)})
		return nil
	}, func(e *JSONLError) { out = append(out, scanned{e.Line, "BAD"}) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scanParts reads a file through its planned parts, in order.
func scanParts(t testing.TB, parts [][]FileRange) (all []scanned, perPart []int) {
	t.Helper()
	for _, p := range parts {
		n := 0
		for _, r := range p {
			if r.Unit != RangeBytes {
				t.Fatalf("range %+v: want bytes", r)
			}
			err := ScanJSONLRange(r.Path, r.Start, r.End, func(line int64, raw []byte) error {
				all = append(all, scanned{line, string(raw)})
				n++
				return nil
			}, func(e *JSONLError) { all = append(all, scanned{e.Line, "BAD"}); n++ })
			if err != nil {
				t.Fatal(err)
			}
		}
		perPart = append(perPart, n)
	}
	return all, perPart
}

// One big JSONL file split in 4 (issue 17: parts were 200000, 0, 0, 0):
// parts hold 25% ± 1% of the rows each, and read in order they are the
// file, with the file's own line numbers.
func TestPlanFilePartsBalancesOneJSONLFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.jsonl")
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	const rows = 40000
	for i := range rows {
		fmt.Fprintf(&b, "{\"item_id\":\"it%07d\",\"text\":%q}\n", i, strings.Repeat("x", 40+rng.IntN(120)))
		if i%997 == 0 {
			b.WriteString("\n") // blank lines count as lines, hold no row
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := scanWhole(t, path)
	for _, n := range []int{1, 2, 3, 4, 7} {
		parts, err := PlanFileParts([]string{path}, n)
		if err != nil {
			t.Fatal(err)
		}
		got, per := scanParts(t, parts)
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: the parts in order are not the file (%d rows vs %d)", n, len(got), len(want))
		}
		for k, c := range per {
			if d := float64(c) - float64(rows)/float64(n); d > 0.01*rows || -d > 0.01*rows {
				t.Errorf("n=%d part %d: %d rows, want %d ± 1%%", n, k, c, rows/n)
			}
		}
	}
}

// Cut points anywhere, lines longer than the reader's buffer, no final
// newline, CRLF, invalid UTF-8: every line is read by exactly one part.
func FuzzScanJSONLRange(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}"), uint16(5), uint16(9))
	f.Add([]byte("x\r\ny\r\n\xff\xfe\nz"), uint16(1), uint16(2))
	f.Add([]byte(strings.Repeat("a", 3<<20)+"\nb\n"+strings.Repeat("c", 1<<20)), uint16(100), uint16(60000))
	f.Fuzz(func(t *testing.T, data []byte, c1, c2 uint16) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := ScanJSONL(path, func(int64, []byte) error { return nil }, func(*JSONLError) {}); err != nil {
			// Not JSONL text at all: the ranged reader must refuse it the same way.
			rerr := ScanJSONLRange(path, 0, int64(len(data)), func(int64, []byte) error { return nil }, func(*JSONLError) {})
			if !errors.Is(rerr, ErrInput) {
				t.Fatalf("ScanJSONL refused the file (%v), ScanJSONLRange did not: %v", err, rerr)
			}
			return
		}
		want := scanWhole(t, path)
		size := int64(len(data))
		cuts := []int64{0, min(int64(c1)*int64(c1)%max(size, 1), size), min(int64(c2)*997%max(size, 1), size), size}
		slices.Sort(cuts)
		var parts [][]FileRange
		for i := 0; i+1 < len(cuts); i++ {
			parts = append(parts, []FileRange{{Path: path, Unit: RangeBytes, Start: cuts[i], End: cuts[i+1]}})
		}
		got, _ := scanParts(t, parts)
		if !slices.Equal(got, want) {
			t.Fatalf("cuts %v: got %v, want %v", cuts, got, want)
		}
	})
}

// Parquet splits by row group (parts differ by at most one), task folders
// and compressed files stay whole, and every unit lands in exactly one part,
// in input order.
func TestPlanFilePartsUnits(t *testing.T) {
	dir := t.TempDir()
	// A Parquet file of many small row groups.
	// One column: the planner reads only row-group metadata, and each
	// column chunk of each row group costs a compressor (slow under -race).
	w, err := NewShardWriter[rgRow](dir, "items", "items", WriterOptions{RowGroupBytes: 512, ShardBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if err := w.Write(rgRow{ItemID: fmt.Sprintf("it%05d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := w.Close()
	if err != nil || len(infos) != 1 {
		t.Fatalf("%v %v", infos, err)
	}
	pq := filepath.Join(dir, infos[0].Path)
	groups, err := rowGroupSizes(pq)
	if err != nil || len(groups) < 20 {
		t.Fatalf("%d row groups (%v): the fixture needs many", len(groups), err)
	}
	parts, err := PlanFileParts([]string{pq}, 4)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	var counts []int64
	for k, p := range parts {
		if len(p) != 1 || p[0].Unit != RangeRowGroups || p[0].Start != next {
			t.Fatalf("part %d: %+v, want one row-group range from %d", k, p, next)
		}
		next = p[0].End
		counts = append(counts, p[0].End-p[0].Start)
	}
	if next != int64(len(groups)) || slices.Max(counts)-slices.Min(counts) > 1 {
		t.Fatalf("row groups per part %v of %d", counts, len(groups))
	}
	// Reading part 2's row groups gives exactly those rows, numbered as in the file.
	r, err := OpenParquetRowGroups[rgRow](context.Background(), pq, nil, []int{int(parts[2][0].Start)})
	if err != nil {
		t.Fatal(err)
	}
	first := r.Offset()
	rows, err := r.Next()
	if err != nil || len(rows) == 0 || rows[0].ItemID != fmt.Sprintf("it%05d", first) {
		t.Fatalf("first row of part 2: offset %d, %v %v", first, len(rows), err)
	}
	r.Close()

	// Task folders (with nested files) and a gzip file: whole units.
	var files []string
	for i := range 9 {
		td := filepath.Join(dir, "tasks", fmt.Sprintf("t%d", i))
		os.MkdirAll(filepath.Join(td, "tb"), 0o755)
		for _, f := range []string{"reference.sv", "task.json", "tb/testbench.sv"} {
			os.WriteFile(filepath.Join(td, f), bytes.Repeat([]byte("z"), 100+i), 0o644)
			files = append(files, filepath.Join(td, f))
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("{\"item_id\":\"g\"}\n"), 200))
	zw.Close()
	gzPath := filepath.Join(dir, "c.jsonl.gz")
	os.WriteFile(gzPath, gz.Bytes(), 0o644)
	files = append(files, gzPath)
	parts, err = PlanFileParts(files, 4)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	owner := map[string]int{}
	for k, p := range parts {
		for _, r := range p {
			if r.Unit != RangeWhole {
				t.Fatalf("%s: %+v, want whole", r.Path, r)
			}
			order = append(order, r.Path)
			owner[r.Path] = k
		}
	}
	if !slices.Equal(order, files) {
		t.Fatalf("parts in order are not the inputs in order:\n%v\n%v", order, files)
	}
	for i := range 9 {
		td := filepath.Join(dir, "tasks", fmt.Sprintf("t%d", i))
		if a, b, c := owner[filepath.Join(td, "task.json")], owner[filepath.Join(td, "reference.sv")], owner[filepath.Join(td, "tb/testbench.sv")]; a != b || b != c {
			t.Fatalf("task folder %s split across parts %d %d %d", td, a, b, c)
		}
	}
	per := make([]int, 4)
	for i := range 9 {
		per[owner[filepath.Join(dir, "tasks", fmt.Sprintf("t%d", i), "task.json")]]++
	}
	if slices.Max(per)-slices.Min(per) > 2 {
		t.Fatalf("task folders per part %v", per)
	}
}

type rgRow struct {
	ItemID string `arrow:"item_id"`
}

func TestScanJSONLRangeErrors(t *testing.T) {
	err := ScanJSONLRange(filepath.Join(t.TempDir(), "missing.jsonl"), 0, 10, func(int64, []byte) error { return nil }, func(*JSONLError) {})
	if !errors.Is(err, ErrInput) {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "a.jsonl")
	os.WriteFile(path, []byte("{}\n{}\n"), 0o644)
	stop := errors.New("stop")
	if err := ScanJSONLRange(path, 0, 6, func(int64, []byte) error { return stop }, func(*JSONLError) {}); !errors.Is(err, stop) {
		t.Fatalf("callback error not returned: %v", err)
	}
	_ = io.EOF
}
