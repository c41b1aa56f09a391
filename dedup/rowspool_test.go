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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/crucible-data/crucible/engine"
)

// spoolInput has what the spool must reproduce exactly: a repeated key
// (the last counts, a repeated text key too), an escaped key, escapes and
// \u sequences in text, an empty text, a null text beside a present one,
// an integer id and a string id through the "item_id|id" alternatives,
// nested values, a blank line (line numbers move on) and a column whose
// type widens after the first rows.
const spoolInput = `{"id":1,"title":"a\tb","body":"x y z w","n":1,"o":{"k":[1,2]}}
{"id":2,"title":null,"body":"caf\u00e9 \"q\" \\ end","n":2,"n":3}

{"item_id":"s3","id":9,"title":"","body":"first","body":"second \ud83d\ude00","o":null}
{"id":4,"t\u0069tle":"escaped key","body":"p q r s","n":4.5,"extra":{"deep":{"x":true}}}
`

// spoolRead is what the three passes of a dedup over a JSONL file read.
type spoolRead struct {
	batches []string
	ids     [][]string
	docs    []Doc
}

// readThreeWays runs the passes over in with js: the first scan
// (FileSource.Scan, which spools when js does), ScanBatches for the output
// and Fetch of every other row for verification.
func readThreeWays(ctx context.Context, in string, js *JSONLSchema) (spoolRead, error) {
	var r spoolRead
	src := FileSource{Paths: []string{in}, IDField: "item_id|id", TextFields: []string{"title", "body"}, Schema: js}
	var first []Doc
	if err := src.Scan(ctx, func(d Doc) error { first = append(first, d); return nil }); err != nil {
		return r, err
	}
	input, err := OpenInputInferred(ctx, []string{in}, "item_id|id", js)
	if err != nil {
		return r, err
	}
	err = input.ScanBatches(ctx, func(_ string, rec arrow.RecordBatch, ids []string) error {
		var j strings.Builder
		err := array.RecordToJSON(rec, &j)
		r.batches = append(r.batches, rec.Schema().String()+"\n"+j.String())
		r.ids = append(r.ids, append([]string(nil), ids...))
		return err
	})
	if err != nil {
		return r, err
	}
	var idx []int32
	for i := 0; i < len(first); i += 2 {
		idx = append(idx, int32(i))
	}
	err = src.Fetch(ctx, idx, func(i int32, d Doc) error {
		if !reflect.DeepEqual(d, first[i]) {
			return fmt.Errorf("fetched row %d %+v, the scan gave %+v", i, d, first[i])
		}
		r.docs = append(r.docs, d)
		return nil
	})
	return r, err
}

// TestSpooledRowsMatchTheFile checks that the second and third readings of
// a spooled scan (ScanBatches for the output, Fetch for verification) give
// exactly what reading the JSONL file again gives: the same Arrow batches,
// ids, documents and rows.
func TestSpooledRowsMatchTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(spoolInput), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(js *JSONLSchema) spoolRead {
		t.Helper()
		r, err := readThreeWays(ctx, in, js)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := run(NewJSONLSchema())
	if want := []string{"1", "2", "s3", "4"}; !reflect.DeepEqual(plain.ids, [][]string{want}) {
		t.Fatalf("ids %v, want %v", plain.ids, want)
	}
	if d := plain.docs[1]; d.ID != "s3" || d.Text != "\n\nsecond \U0001F600" { // row 3: fetched second
		t.Fatalf("row 3 read as %+v", d)
	}
	for _, c := range []struct {
		name            string
		memLimit, chunk int64
		onDisk          bool
	}{
		{"in memory", spoolMemBytes, spoolChunk, false},
		{"in memory, rows across chunks", spoolMemBytes, 7, false},
		{"moved to a file mid-scan", 100, 7, true},
		{"on disk", 0, spoolChunk, true},
	} {
		js := NewSpooledJSONLSchema(dir)
		js.spool.memLimit, js.spool.chunk = c.memLimit, c.chunk
		spooled := run(js)
		if len(js.spool.segs) != 1 || (js.spool.f != nil) != c.onDisk || (len(js.spool.mem) > 0) == c.onDisk {
			t.Fatalf("%s: the spool has %d files' rows, file %v, %d memory chunks", c.name, len(js.spool.segs), js.spool.f != nil, len(js.spool.mem))
		}
		if !reflect.DeepEqual(plain, spooled) {
			t.Fatalf("%s: spooled reads differ from the file's:\nfile:    %+v\nspooled: %+v", c.name, plain, spooled)
		}
		js.Close()
	}

	js := NewSpooledJSONLSchema(dir)
	js.spool.memLimit = 0
	run(js)
	// A spool cut short is an I/O error naming the spool, never fewer rows.
	name := js.spool.f.Name()
	st, _ := os.Stat(name)
	if err := os.Truncate(name, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	input, _ := OpenInputInferred(ctx, []string{in}, "item_id|id", js)
	err := input.ScanBatches(ctx, func(string, arrow.RecordBatch, []string) error { return nil })
	if !errors.Is(err, engine.ErrIO) {
		t.Fatalf("truncated spool: %v, want an I/O error", err)
	}
	js.Close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("Close left the spool file: %v", err)
	}
}

// FuzzSpooledRows checks on any input that the spooled passes read what
// reading the file again reads (or fail as it does): in memory, with rows
// across 7-byte chunks, and moved to a file mid-scan.
func FuzzSpooledRows(f *testing.F) {
	f.Add([]byte(spoolInput))
	f.Add([]byte(`{"id":1,"body":"a b"}` + "\n" + `{"id":1,"body":"dup id"}`))
	f.Add([]byte(`{"id":"x","title":"\u00e9\ud83d\ude00","body":"\"\\\/\b\f\n\r\t"}`))
	f.Add([]byte(`{"id":2,"body":7}` + "\n"))
	f.Add([]byte(`{"id":3,"body":"ok","body":"again","title":"t","title":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		plain, perr := readThreeWays(ctx, in, NewJSONLSchema())
		for _, c := range []struct{ memLimit, chunk int64 }{{spoolMemBytes, spoolChunk}, {spoolMemBytes, 7}, {60, 7}} {
			js := NewSpooledJSONLSchema(dir)
			js.spool.memLimit, js.spool.chunk = c.memLimit, c.chunk
			got, err := readThreeWays(ctx, in, js)
			js.Close()
			if (err == nil) != (perr == nil) {
				t.Fatalf("limit %d chunk %d: spooled error %v, the file's %v", c.memLimit, c.chunk, err, perr)
			}
			if err == nil && !reflect.DeepEqual(plain, got) {
				t.Fatalf("limit %d chunk %d: spooled reads differ from the file's:\nfile:    %+v\nspooled: %+v", c.memLimit, c.chunk, plain, got)
			}
		}
	})
}
