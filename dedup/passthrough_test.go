package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/crucible-data/crucible/engine"
)

func TestInferJSONLSchema(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rows.jsonl")
	os.WriteFile(p, []byte(`{"id":1,"f":1,"b":true,"s":"x","l":["a"],"o":{"k":1,"z":"q"},"mix":"a","e":{},"nul":null,"big":1}
{"id":2,"f":2.5,"b":null,"s":null,"l":[],"o":{"k":null,"w":[1,2]},"mix":3,"e":{},"big":99999999999999999999}

{"o":null,"id":3,"l":null,"mix":{"a":[1]},"late":false}
`), 0o644)
	s, err := InferJSONLSchema(context.Background(), []string{p})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"id: int64", "f: float64", "b: bool", "s: utf8", "l: list<item: utf8, nullable>",
		"o: struct<k: int64 nullable, z: utf8 nullable, w: list<item: int64, nullable> nullable>", "mix: utf8", "e: utf8", "nul: utf8", "big: float64", "late: bool",
	}
	if len(s.Fields()) != len(want) {
		t.Fatalf("schema %s, want %d columns", s, len(want))
	}
	for i, f := range s.Fields() {
		if got := f.Name + ": " + f.Type.String(); got != want[i] {
			t.Errorf("column %d: %s, want %s", i, got, want[i])
		}
	}
	in, err := OpenInput(context.Background(), []string{p}, "id")
	if err != nil {
		t.Fatal(err)
	}
	var mix, ids []string
	err = in.ScanBatches(context.Background(), func(_ string, rec arrow.RecordBatch, rowIDs []string) error {
		ids = append(ids, rowIDs...)
		c := rec.Column(6)
		for i := 0; i < c.Len(); i++ {
			mix = append(mix, c.ValueStr(i))
		}
		if rec.Column(5).IsNull(0) || !rec.Column(5).IsNull(2) {
			t.Errorf("struct nulls: %v", rec.Column(5))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A mixed column holds each value's raw JSON text, strings quoted.
	if got := strings.Join(mix, "|"); got != `"a"|3|{"a":[1]}` {
		t.Errorf("mixed column %s", got)
	}
	if got := strings.Join(ids, ","); got != "1,2,3" {
		t.Errorf("ids %s", got)
	}

	// Files of different columns are an input error naming both.
	q := filepath.Join(dir, "other.jsonl")
	os.WriteFile(q, []byte(`{"id":"a","text":"x"}`+"\n"), 0o644)
	pq := filepath.Join(dir, "t.parquet")
	type row struct {
		ID string `arrow:"id"`
	}
	if _, err := engine.WriteAll(context.Background(), dir, "t", "t", engine.DefaultWriterOptions(), []row{{"a"}}); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir, "t-00000.parquet"), pq)
	_, err = OpenInput(context.Background(), []string{pq, q}, "id")
	if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), pq) || !strings.Contains(err.Error(), q) {
		t.Errorf("different schemas: %v", err)
	}
}

// TestSignaturePassInfersJSONLSchema: the schema a FileSource Scan infers
// (JSONLSchema) is OpenInput's own, over several JSONL files with keys
// that appear late, widen (int to float, to raw) or never get a key, with
// a Parquet file among them; a second Scan (verification, counting) does
// not infer again, a failed Scan leaves nothing usable, and a line that is
// not an object is inferJSONL's error.
func TestSignaturePassInfersJSONLSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(`{"id":"1","text":"x y","n":1,"o":{"k":1},"e":{},"m":"s"}
{"id":"2","text":"y z","n":2,"o":{"k":null,"w":[1]},"e":{}}
`), 0o644)
	os.WriteFile(b, []byte(`{"text":"z w","id":"3","n":2.5,"late":true,"m":3,"o":null,"e":{}}
`), 0o644)
	want, err := OpenInput(ctx, []string{a, b}, "id")
	if err != nil {
		t.Fatal(err)
	}
	js := NewJSONLSchema()
	if _, err := OpenInputInferred(ctx, []string{a, b}, "id", js); err == nil {
		t.Fatal("OpenInputInferred before a scan gave no error")
	}
	src := FileSource{Paths: []string{a, b}, IDField: "id", TextFields: []string{"text"}, Schema: js}
	rows := 0
	for range 2 { // the second Scan must not merge the rows again
		if err := src.Scan(ctx, func(Doc) error { rows++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	got, err := OpenInputInferred(ctx, []string{a, b}, "id", js)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 6 || !got.Schema.Equal(want.Schema) {
		t.Fatalf("%d rows; inferred in the scan:\n%s\nOpenInput:\n%s", rows, got.Schema, want.Schema)
	}
	// The inferred input decodes the rows as OpenInput's does.
	var n int64
	if err := got.ScanBatches(ctx, func(_ string, rec arrow.RecordBatch, _ []string) error { n += rec.NumRows(); return nil }); err != nil || n != 3 {
		t.Fatalf("ScanBatches: %d rows, %v", n, err)
	}

	// A stopped scan leaves the schema unfinished.
	stop := errors.New("stop")
	js2 := NewJSONLSchema()
	src.Schema = js2
	if err := src.Scan(ctx, func(Doc) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("stopped scan: %v", err)
	}
	if _, err := OpenInputInferred(ctx, []string{a, b}, "id", js2); err == nil {
		t.Error("OpenInputInferred after a stopped scan gave no error")
	}

	// A line that is not an object: the schema pass's error, naming the line.
	c := filepath.Join(dir, "c.jsonl")
	os.WriteFile(c, []byte(`{"id":"1","text":"x"}`+"\n"+`["id"]`+"\n"), 0o644)
	src = FileSource{Paths: []string{c}, IDField: "id", TextFields: []string{"text"}, Schema: NewJSONLSchema()}
	err = src.Scan(ctx, func(Doc) error { return nil })
	if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), c+":2: not a JSON object") {
		t.Errorf("non-object line: %v", err)
	}
}
