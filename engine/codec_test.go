package engine

import (
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// roundTrip writes rows through the shard writer and reads them back, with
// checked allocators on both sides to prove every Arrow buffer is released.
func roundTrip[T any](t *testing.T, rows []T, opts WriterOptions) ([]T, []ShardInfo) {
	t.Helper()
	dir := t.TempDir()
	wmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer wmem.AssertSize(t, 0)
	opts.Allocator = wmem
	w, err := NewShardWriter[T](dir, "rows", "rows", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows...); err != nil {
		t.Fatal(err)
	}
	infos, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	rmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer rmem.AssertSize(t, 0)
	var got []T
	for _, si := range infos {
		r, err := OpenParquet[T](context.Background(), filepath.Join(dir, si.Path), rmem)
		if err != nil {
			t.Fatal(err)
		}
		for {
			batch, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, batch...)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		h, err := HashFile(filepath.Join(dir, si.Path))
		if err != nil || h != si.SHA256 {
			t.Fatalf("shard %s: sha256 %s, manifest says %s (%v)", si.Path, h, si.SHA256, err)
		}
		if st, _ := os.Stat(filepath.Join(dir, si.Path)); st.Size() != si.Bytes {
			t.Fatalf("shard %s: %d bytes, manifest says %d", si.Path, st.Size(), si.Bytes)
		}
	}
	return got, infos
}

func TestRoundTripEveryRecordType(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	items := make([]Item, 300)
	evs := make([]Evidence, 300)
	for i := range items {
		items[i] = randomItem(r, i)
		evs[i] = randomEvidence(r, i)
	}
	rejs := []Rejection{{ItemID: "a", Stage: "ingest", Gate: "schema", Reason: "missing_field", Detail: "x:1: instruction: required"}, {}}
	cands := []Candidate{{ItemID: "a", CandidateID: "c1", Code: "module TopModule; endmodule"}}

	check := func(name string, want, got any) {
		t.Helper()
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: round trip differs", name)
		}
	}
	small := WriterOptions{RowGroupBytes: 16 << 10, ShardBytes: 64 << 10}
	gotItems, infos := roundTrip(t, items, small)
	normalizeEmpty(items)
	check("items", items, gotItems)
	if len(infos) < 2 {
		t.Errorf("small shard size should have produced several shards, got %d", len(infos))
	}
	gotEv, _ := roundTrip(t, evs, DefaultWriterOptions())
	check("evidence", evs, gotEv)
	gotRej, _ := roundTrip(t, rejs, DefaultWriterOptions())
	check("rejections", rejs, gotRej)
	gotC, _ := roundTrip(t, cands, DefaultWriterOptions())
	check("candidates", cands, gotC)
}

// normalizeEmpty maps nil slices to empty ones: Parquet stores an empty list
// either way, and the reader returns empty slices.
func normalizeEmpty(items []Item) {
	for i := range items {
		if items[i].Interface.Ports == nil {
			items[i].Interface.Ports = []Port{}
		}
		if items[i].Interface.Args == nil {
			items[i].Interface.Args = []KernelArg{}
		}
		if items[i].VerifierStrength.Survivors == nil {
			items[i].VerifierStrength.Survivors = []string{}
		}
	}
}

func TestPackedRowsRoundTrip(t *testing.T) {
	type packed struct {
		InputIDs []int32  `arrow:"input_ids"`
		LossMask []int8   `arrow:"loss_mask"`
		DocIDs   []string `arrow:"doc_ids"`
		Blob     []byte   `arrow:"blob"`
		F32      float32  `arrow:"f32"`
	}
	rows := []packed{{InputIDs: []int32{1, 2, 3}, LossMask: []int8{0, 1, 1}, DocIDs: []string{"a"}, Blob: []byte{0, 255}, F32: 1.5},
		{InputIDs: []int32{}, LossMask: []int8{}, DocIDs: []string{}, Blob: []byte{}}}
	got, _ := roundTrip(t, rows, DefaultWriterOptions())
	if !reflect.DeepEqual(rows, got) {
		t.Fatalf("got %+v want %+v", got, rows)
	}
}

func TestEmptyWriterCommitsNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := NewShardWriter[Item](dir, "items", "items", DefaultWriterOptions())
	if err != nil {
		t.Fatal(err)
	}
	infos, err := w.Close()
	if err != nil || len(infos) != 0 {
		t.Fatalf("infos %v err %v", infos, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("empty writer left files: %v", ents)
	}
}

func TestCodecRejectsUnsupportedTypes(t *testing.T) {
	type bad struct {
		M map[string]int `arrow:"m"`
	}
	if _, err := NewCodec[bad](); !errors.Is(err, ErrSchema) {
		t.Fatalf("want ErrSchema, got %v", err)
	}
}

func TestReadWrongColumnTypeIsError(t *testing.T) {
	type a struct {
		X string `arrow:"x"`
	}
	type b struct {
		X int64 `arrow:"x"`
	}
	dir := t.TempDir()
	infos, err := WriteAll(context.Background(), dir, "a", "a", DefaultWriterOptions(), []a{{"hello"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadRows[b](filepath.Join(dir, infos[0].Path))
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("want ErrSchema naming the column, got %v", err)
	}
}

func TestScanRowsStreamsInOrderAndStopsOnError(t *testing.T) {
	dir := t.TempDir()
	type row struct {
		N int64 `arrow:"n"`
	}
	var rows []row
	for i := 0; i < 5000; i++ {
		rows = append(rows, row{int64(i)})
	}
	infos, err := WriteAll(context.Background(), dir, "r", "r", WriterOptions{RowGroupBytes: 4 << 10, ShardBytes: 8 << 10}, rows)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, si := range infos {
		paths = append(paths, filepath.Join(dir, si.Path))
	}
	var next int64
	if err := ScanRows(context.Background(), paths, func(r *row) error {
		if r.N != next {
			t.Fatalf("row %d arrived as %d", next, r.N)
		}
		next++
		return nil
	}); err != nil || next != 5000 {
		t.Fatalf("scanned %d rows, err %v", next, err)
	}
	stop := errors.New("stop")
	seen := 0
	err = ScanRows(context.Background(), paths, func(r *row) error {
		if seen++; seen == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 10 {
		t.Fatalf("want the callback's error after 10 rows, got %v after %d", err, seen)
	}
}
