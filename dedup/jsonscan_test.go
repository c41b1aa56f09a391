package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/crucible-data/crucible/engine"
)

// The encoding/json read path the scanner replaced, kept here as the
// reference the scanner must match.

func refEachMember(raw []byte, fn func(key string, v []byte) error) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		k, ok := t.(string)
		if !ok {
			return fmt.Errorf("object key %v is not a string", t)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	if _, err := d.Token(); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

func refObjectMembers(raw []byte) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	err := refEachMember(raw, func(k string, v []byte) error { m[k] = v; return nil })
	return m, err
}

func refEachElem(raw []byte, fn func([]byte) error) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("not a JSON array")
	}
	for d.More() {
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	_, err := d.Token()
	return err
}

func refAppendJSON(b array.Builder, t *jtype, raw []byte) error {
	if len(raw) == 0 || string(raw) == "null" {
		b.AppendNull()
		return nil
	}
	switch t.kind {
	case jBool:
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		b.(*array.BooleanBuilder).Append(v)
	case jInt:
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return err
		}
		b.(*array.Int64Builder).Append(v)
	case jFloat:
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return err
		}
		b.(*array.Float64Builder).Append(v)
	case jRaw:
		b.(*array.StringBuilder).Append(string(raw))
	case jString:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		b.(*array.StringBuilder).Append(v)
	case jList:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		return refEachElem(raw, func(e []byte) error { return refAppendJSON(lb.ValueBuilder(), t.elem, e) })
	case jObject:
		m, err := refObjectMembers(raw)
		if err != nil {
			return err
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, name := range t.names {
			if err := refAppendJSON(sb.FieldBuilder(i), t.fields[name], m[name]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("value %.40s where the first pass saw only nulls", raw)
	}
	return nil
}

// refRows decodes path's rows the old way into one record batch.
func refRows(t *testing.T, path string, root *jtype, schema *arrow.Schema) (arrow.RecordBatch, []string) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var ids []string
	err := engine.ScanJSONL(path, func(line int64, raw []byte) error {
		m, err := refObjectMembers(raw)
		if err != nil {
			return err
		}
		v := m["id"]
		var s string
		if json.Unmarshal(v, &s) == nil {
			ids = append(ids, s)
		} else {
			ids = append(ids, string(v))
		}
		for i, name := range root.names {
			if err := refAppendJSON(b.Field(i), root.fields[name], m[name]); err != nil {
				return fmt.Errorf("line %d field %s: %v", line, name, err)
			}
		}
		return nil
	}, func(e *engine.JSONLError) { t.Fatal(e) })
	if err != nil {
		t.Fatal(err)
	}
	return b.NewRecordBatch(), ids
}

// mixedLines are rows exercising every inferred type and the string and
// key forms the scanner decodes itself: escapes, \u escapes with valid and
// unpaired surrogates, non-ASCII text, repeated keys (the last counts),
// escaped keys, whitespace, integers beyond int64, exponents.
var mixedLines = []string{
	`{"id":"a","n":1,"f":1.5,"b":true,"s":"plain","l":["x","y"],"o":{"k":1,"z":"q"},"mix":"a","e":{},"raw":[1,{"a":2}],"big":1,"ls":[{"p":1},{"p":null}]}`,
	` { "id" : "b\u00e9\n" , "n" : -42 , "f" : 2 , "b" : false , "s" : "tab\there \"quoted\" back\\slash \/ \b\f\r" , "l" : [ ] , "o" : { "k" : null , "w" : [ 1 , 2 ] } , "mix" : 3 , "e" : { } , "big" : 99999999999999999999 } `,
	`{"id":7,"n":9223372036854775807,"f":-1e3,"s":"snow ☃ \ud83d\ude00 lone \ud800 end \udc00x","o":null,"mix":{"a":[1]},"raw":"str","ls":[]}`,
	`{"id":"d","n":-9223372036854775808,"f":0.0,"s":"dup-1","s":"dup-2 wins","o":{"k":5,"k":6},"l":null,"b":null,"ls":null}`,
	`{"\u0069d":"e","n":0,"f":1E+2,"s":"é ü 中文","o":{"z":"\u0000nul"},"mix":null,"raw":true}`,
	`{"id":"f","n":123456789012345678,"f":-0.5e-3,"s":"","l":["\u2028","\\u"],"o":{"w":[]},"raw":null,"e":null}`,
}

func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The scanner's batches equal the encoding/json path's cell by cell (and
// the ids), on rows of every inferred type.
func TestScanBatchesMatchesEncodingJSON(t *testing.T) {
	p := writeLines(t, mixedLines)
	in, err := OpenInput(context.Background(), []string{p}, "id")
	if err != nil {
		t.Fatal(err)
	}
	want, wantIDs := refRows(t, p, in.json, in.Schema)
	defer want.Release()
	var got []arrow.RecordBatch
	var ids []string
	err = in.ScanBatches(context.Background(), func(_ string, rec arrow.RecordBatch, rowIDs []string) error {
		rec.Retain()
		got = append(got, rec)
		ids = append(ids, rowIDs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d batches", len(got))
	}
	defer got[0].Release()
	if !array.RecordEqual(got[0], want) {
		for c := 0; c < int(want.NumCols()); c++ {
			if !array.Equal(got[0].Column(c), want.Column(c)) {
				t.Errorf("column %q:\n got  %v\n want %v", want.ColumnName(c), got[0].Column(c), want.Column(c))
			}
		}
		t.Fatal("batches differ")
	}
	if strings.Join(ids, "|") != strings.Join(wantIDs, "|") {
		t.Errorf("ids %q, want %q", ids, wantIDs)
	}
	// The id spelled with an escape (\u0069d) is the id field.
	if ids[4] != "e" {
		t.Errorf("row 5 id %q", ids[4])
	}
}

// parseJSONLRow (the first pass and Fetch) decodes the id and text fields
// as encoding/json does.
func TestParseJSONLRowMatchesEncodingJSON(t *testing.T) {
	for i, l := range mixedLines {
		rec, err := parseJSONLRow("x.jsonl", int64(i+1), []byte(l), "id", []string{"s"}, nil, nil)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		var text string
		if err := json.Unmarshal(m["s"], &text); err != nil {
			t.Fatal(err)
		}
		if len(rec.Fields) != 1 || rec.Fields[0].Text != text {
			t.Errorf("line %d: text %q, want %q", i+1, rec.Fields, text)
		}
		id := string(m["id"])
		var s string
		if json.Unmarshal(m["id"], &s) == nil {
			id = s
		}
		if rec.ID != id {
			t.Errorf("line %d: id %q, want %q", i+1, rec.ID, id)
		}
	}
	// Errors name file and line, and say what is wrong.
	for _, c := range []struct{ line, want string }{
		{`{"id":"a","s":"x",}`, `x.jsonl:3: not a JSON object: invalid character '}'`},
		{`{"id":"a","s":"x"} trailing`, `x.jsonl:3: not a JSON object: invalid character 't' after top-level value`},
		{`{"id":"a","s":"x\q"}`, `x.jsonl:3: not a JSON object: invalid character 'q' in string escape code`},
		{`{"id":"a","s":"x","n":01}`, `x.jsonl:3: not a JSON object: invalid character '1' after object key:value pair`},
		{`{"id":"a","s":"x","o":{"k":tru}}`, `x.jsonl:3: not a JSON object: invalid character '}' in literal true`},
		{`{"id":"a","s":"x`, `x.jsonl:3: not a JSON object: unexpected end of JSON input`},
		{`["id"]`, `x.jsonl:3: not a JSON object`},
		{`{"s":"x"}`, `x.jsonl:3: missing id field "id"`},
		{`null`, `x.jsonl:3: missing id field "id"`},
		{`{"id":1,"s":2}`, `x.jsonl:3: field "s" is not a string`},
	} {
		_, err := parseJSONLRow("x.jsonl", 3, []byte(c.line), "id", []string{"s"}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.line, err, c.want)
		}
	}
}

// Batches decoded ahead reach fn in input order; an error from fn stops
// the scan and is what ScanBatches returns.
func TestScanBatchesOrderAndStop(t *testing.T) {
	var lines []string
	for i := range 2*BatchRows + 100 {
		lines = append(lines, fmt.Sprintf(`{"id":"r%d","text":"t %d"}`, i, i))
	}
	p := writeLines(t, lines)
	in, err := OpenInput(context.Background(), []string{p}, "id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var sizes []int64
	err = in.ScanBatches(context.Background(), func(_ string, rec arrow.RecordBatch, rowIDs []string) error {
		ids = append(ids, rowIDs...)
		sizes = append(sizes, rec.NumRows())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int64{BatchRows, BatchRows, 100}) {
		t.Errorf("batch sizes %v", sizes)
	}
	for i, id := range ids {
		if id != fmt.Sprintf("r%d", i) {
			t.Fatalf("row %d: id %q", i, id)
		}
	}
	stop := fmt.Errorf("stop here")
	calls := 0
	err = in.ScanBatches(context.Background(), func(string, arrow.RecordBatch, []string) error {
		calls++
		return stop
	})
	if err != stop || calls != 1 {
		t.Errorf("error %v after %d calls, want %v after 1", err, calls, stop)
	}
	// A decode error after good batches: those reach fn, then the error
	// names the file and line.
	bad := writeLines(t, append(lines[:BatchRows+5:BatchRows+5], `{"id":"x","text":"y"`))
	in2, err := OpenInput(context.Background(), []string{p}, "id")
	if err != nil {
		t.Fatal(err)
	}
	in2.Paths = []string{bad}
	calls = 0
	err = in2.ScanBatches(context.Background(), func(string, arrow.RecordBatch, []string) error { calls++; return nil })
	if want := fmt.Sprintf("%s:%d: not a JSON object", bad, BatchRows+6); err == nil || !strings.Contains(err.Error(), want) || calls != 1 {
		t.Errorf("error %v after %d calls, want %q after 1", err, calls, want)
	}
}
