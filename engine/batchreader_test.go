package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// bigItems are items whose reference is 8 KiB of incompressible text, so a
// read that skips the column reads a small fraction of the file (the rest
// is mostly the 64 KiB a Parquet reader reads of each footer).
func bigItems(n int) []Item {
	r := rand.New(rand.NewSource(7))
	out := make([]Item, n)
	for i := range out {
		out[i] = randomItem(r, i)
		b := make([]byte, 8192)
		for k := range b {
			b[k] = byte('a' + r.Intn(26))
		}
		out[i].Reference = string(b)
	}
	normalizeEmpty(out)
	return out
}

// writeShards writes rows as several shards of several row groups each and
// returns their paths, with an empty Parquet file (no row group) spliced in
// second.
func writeShards[T any](t *testing.T, rows []T) []string {
	t.Helper()
	dir := t.TempDir()
	infos, err := WriteAll(context.Background(), dir, "s", "s", WriterOptions{RowGroupBytes: 128 << 10, ShardBytes: 1 << 20}, rows)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, si := range infos {
		paths = append(paths, filepath.Join(dir, si.Path))
	}
	if len(paths) < 3 {
		t.Fatalf("want at least 3 shards, got %d", len(paths))
	}
	if g := numRowGroups(t, paths[0]); g < 2 {
		t.Fatalf("want several row groups per shard, got %d", g)
	}
	empty := filepath.Join(dir, "empty.parquet")
	writeEmptyParquet[T](t, empty)
	return append(paths[:1], append([]string{empty}, paths[1:]...)...)
}

func writeEmptyParquet[T any](t *testing.T, path string) {
	t.Helper()
	c, err := NewCodec[T]()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(c.Schema(), f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func numRowGroups(t *testing.T, path string) int {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	return pf.NumRowGroups()
}

// referenceRead is the simple reader the iterator must agree with: the
// whole file as one Arrow table, every column, through Codec.Read.
func referenceRead[T any](t *testing.T, paths []string) []T {
	t.Helper()
	c, err := NewCodec[T]()
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1<<20)
		for tr.Next() {
			if out, err = c.Read(tr.RecordBatch(), out); err != nil {
				t.Fatal(err)
			}
		}
		tr.Release()
		tbl.Release()
	}
	return out
}

func drain[T any](t *testing.T, b *Batches[T], max int) []T {
	t.Helper()
	var out []T
	for {
		rows, err := b.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || len(rows) > max {
			t.Fatalf("batch of %d rows (bound %d)", len(rows), max)
		}
		out = append(out, rows...)
	}
}

func TestBatchesMatchReferenceOverFilesAndRowGroups(t *testing.T) {
	want := bigItems(600)
	paths := writeShards(t, want)
	ref := referenceRead[Item](t, paths)
	if !reflect.DeepEqual(ref, want) {
		t.Fatal("the reference read does not give back the rows written")
	}
	for _, size := range []int{1, 7, 100, 0} {
		t.Run(fmt.Sprint("batch", size), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := OpenBatches[Item](context.Background(), paths, BatchOptions{BatchSize: size, Mem: mem})
			bound := size
			if bound == 0 {
				bound = DefaultBatchSize
			}
			got := drain(t, b, bound)
			b.Close()
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("batch size %d: %d rows differ from the reference's %d", size, len(got), len(ref))
			}
		})
	}
	rows, err := ReadAll[Item](paths...)
	if err != nil || !reflect.DeepEqual(rows, ref) {
		t.Fatalf("ReadAll: %d rows, err %v", len(rows), err)
	}
}

// itemHead is a projection of Item: a subset of its fields under the same
// column names, one of them nested.
type itemHead struct {
	ItemID    string           `arrow:"item_id"`
	Domain    string           `arrow:"domain"`
	Interface Interface        `arrow:"interface"`
	Strength  VerifierStrength `arrow:"verifier_strength"`
}

func TestBatchesProjectionSkipsColumns(t *testing.T) {
	items := bigItems(600)
	paths := writeShards(t, items)
	full := OpenBatches[Item](context.Background(), paths, BatchOptions{})
	drain(t, full, DefaultBatchSize)
	head := OpenBatches[itemHead](context.Background(), paths, BatchOptions{})
	got := drain(t, head, DefaultBatchSize)
	if len(got) != len(items) {
		t.Fatalf("%d projected rows, want %d", len(got), len(items))
	}
	for i, h := range got {
		it := items[i]
		if h.ItemID != it.ItemID || h.Domain != it.Domain || !reflect.DeepEqual(h.Interface, it.Interface) || !reflect.DeepEqual(h.Strength, it.VerifierStrength) {
			t.Fatalf("row %d: projected %+v, item %+v", i, h, it)
		}
	}
	// The reference column is ~8 KiB a row of the ~8.5 KiB: a reader that
	// fetched it would read about as much as the full one.
	if f, h := full.BytesRead(), head.BytesRead(); h*3 > f {
		t.Fatalf("projected read fetched %d bytes, the full read %d: columns were not skipped", h, f)
	}

	// A declared projection narrows Item itself.
	cols := OpenBatches[Item](context.Background(), paths, BatchOptions{Columns: []string{"item_id", "family"}})
	for i, it := range drain(t, cols, DefaultBatchSize) {
		want := Item{ItemID: items[i].ItemID, Family: items[i].Family}
		if !reflect.DeepEqual(it, want) {
			t.Fatalf("row %d: %+v, want only item_id and family", i, it)
		}
	}
	if cols.BytesRead()*3 > full.BytesRead() {
		t.Fatalf("Columns projection read %d bytes of %d", cols.BytesRead(), full.BytesRead())
	}
}

func TestBatchesMissingColumns(t *testing.T) {
	type idOnly struct {
		ItemID string `arrow:"item_id"`
	}
	dir := t.TempDir()
	infos, err := WriteAll(context.Background(), dir, "s", "s", DefaultWriterOptions(), []idOnly{{"a"}, {"b"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, infos[0].Path)

	// T's own columns: a missing one reads as the zero value (Codec.Read).
	rows, err := OpenBatches[Item](context.Background(), []string{path}, BatchOptions{}).Collect()
	if err != nil || len(rows) != 2 || rows[1].ItemID != "b" || rows[1].Reference != "" {
		t.Fatalf("rows %+v, err %v", rows, err)
	}
	// None of T's columns: the rows are still counted, as zero values.
	type other struct {
		X int64 `arrow:"x"`
	}
	zs, err := OpenBatches[other](context.Background(), []string{path}, BatchOptions{}).Collect()
	if err != nil || len(zs) != 2 {
		t.Fatalf("rows %+v, err %v", zs, err)
	}
	// A declared column the file lacks is an error naming file and column.
	_, err = OpenBatches[Item](context.Background(), []string{path}, BatchOptions{Columns: []string{"item_id", "reference"}}).Collect()
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"reference"`) {
		t.Fatalf("want ErrSchema naming %s and reference, got %v", path, err)
	}
	// A declared column T does not have is an error before any file opens.
	_, err = OpenBatches[Item](context.Background(), []string{path}, BatchOptions{Columns: []string{"nope"}}).Collect()
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("want ErrSchema naming nope, got %v", err)
	}
}

func TestBatchesHonourCancellation(t *testing.T) {
	paths := writeShards(t, bigItems(600))
	ctx, cancel := context.WithCancel(context.Background())
	b := OpenBatches[Item](ctx, paths, BatchOptions{BatchSize: 10})
	defer b.Close()
	if _, err := b.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err := b.Next()
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), paths[0]) {
		t.Fatalf("want context.Canceled naming the file, got %v", err)
	}
	if _, again := b.Next(); !errors.Is(again, context.Canceled) {
		t.Fatalf("the error is not sticky: %v", again)
	}
}

func TestBatchesRejectNonParquet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rows.jsonl")
	os.WriteFile(p, []byte(`{"item_id":"a"}`+"\n"), 0o644)
	_, err := OpenBatches[Item](context.Background(), []string{p}, BatchOptions{}).Collect()
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), p) {
		t.Fatalf("want ErrInput naming %s, got %v", p, err)
	}
}

// readCorrupt reads a corrupted copy of src; it must fail with an engine
// error naming the file, or read without one, never panic.
func readCorrupt(t *testing.T, src []byte, mutate func([]byte) []byte) error {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(p, mutate(append([]byte(nil), src...)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenBatches[Item](context.Background(), []string{p}, BatchOptions{BatchSize: 50}).Collect()
	if err != nil && (!(errors.Is(err, ErrInput) || errors.Is(err, ErrSchema)) || !strings.Contains(err.Error(), p)) {
		t.Fatalf("error is not an ErrInput/ErrSchema naming the file: %v", err)
	}
	return err
}

func oneShard(t testing.TB) []byte {
	dir := t.TempDir()
	infos, err := WriteAll(context.Background(), dir, "s", "s", WriterOptions{RowGroupBytes: 64 << 10, ShardBytes: 1 << 30}, bigItems(40))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, infos[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBatchesCorruptFilesAreErrors(t *testing.T) {
	src := oneShard(t)
	n := len(src)
	for _, cut := range []int{1, 4, 8, n / 3, n / 2, n - 9, n - 1} {
		if err := readCorrupt(t, src, func(b []byte) []byte { return b[:cut] }); err == nil {
			t.Errorf("truncated at %d of %d: no error", cut, n)
		}
	}
	if err := readCorrupt(t, src, func(b []byte) []byte { return append(b[:n-8], "XXXXPAR1"...) }); err == nil {
		t.Error("bad footer length: no error")
	}
	groupErr := false
	for off := 4; off < n*2/3; off += n / 40 {
		err := readCorrupt(t, src, func(b []byte) []byte {
			for k := off; k < off+16 && k < len(b); k++ {
				b[k] ^= 0x5a
			}
			return b
		})
		groupErr = groupErr || (err != nil && strings.Contains(err.Error(), "row group"))
	}
	if !groupErr {
		t.Error("no corruption of the data pages gave an error naming its row group")
	}
}

func FuzzBatchesCorrupt(f *testing.F) {
	src := oneShard(f)
	f.Add(uint32(4), byte(0xff))
	f.Add(uint32(len(src)/2), byte(1))
	f.Add(uint32(len(src)-12), byte(0x80))
	f.Fuzz(func(t *testing.T, off uint32, x byte) {
		readCorrupt(t, src, func(b []byte) []byte {
			b[int(off)%len(b)] ^= x
			return b
		})
	})
}

// The projected schema is what Schema reports (before the first batch).
func TestParquetReaderSchemaIsProjected(t *testing.T) {
	paths := writeShards(t, bigItems(600))
	r, err := OpenParquet[itemHead](context.Background(), paths[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.Schema().Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"item_id", "domain", "interface", "verifier_strength"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("schema %v, want %v", names, want)
	}
	rows, err := r.Next()
	if err != nil || len(rows) == 0 {
		t.Fatalf("rows %d, err %v", len(rows), err)
	}
	if got := r.rr.Schema().NumFields(); got != 4 {
		t.Fatalf("the record reader returns %d columns, want 4", got)
	}
}
