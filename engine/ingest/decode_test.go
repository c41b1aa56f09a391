package ingest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// checkDecodeMatches decodes line with the ingest decoder and with
// encoding/json (the reference) and fails on any difference: the same
// accept/reject decision, the same error text, the same Item. It returns
// whether the fast path took the line.
func checkDecodeMatches(t *testing.T, line string) (fast bool) {
	t.Helper()
	raw := []byte(line)
	var want engine.Item
	werr := json.Unmarshal(raw, &want)
	var d lineDecoder
	var probe engine.Item
	fast = d.fast(raw, &probe)
	if fast && werr != nil {
		t.Fatalf("%q: fast path accepted a line encoding/json rejects (%v)", line, werr)
	}
	got, gerr := d.decode(raw)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", line, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
	}
	if fast && !reflect.DeepEqual(probe, want) {
		t.Fatalf("%q: fast path gave\n %+v\nwant %+v", line, probe, want)
	}
	return fast
}

// decodeCases pin today's (encoding/json's) behaviour on the corners of
// the item line; fast says whether the fast path must take the line
// (false: it must decline, and encoding/json decodes it).
var decodeCases = []struct {
	name string
	line string
	fast bool
}{
	{"good row", goodRow, true},
	{"unicode and escapes", `{"item_id":"é\u00e9\ud83d\ude00\n\t\"\\\/","instruction":"caf\u00e9 ` + "\u2014" + `"}`, true},
	{"lone surrogate becomes U+FFFD", `{"item_id":"\ud83d x"}`, true},
	{"unknown members ignored", `{"item_id":"a","extra":{"x":[1,2,{"y":null}]},"n":1e999}`, true},
	{"repeated key: last wins", `{"item_id":"a","item_id":"b"}`, true},
	{"repeated key: null keeps the earlier value", `{"item_id":"a","item_id":null}`, true},
	{"repeated object merges", `{"verifier":{"kind":"differential","harness":"h"},"verifier":{"top":"t"}}`, true},
	{"repeated ports merge element-wise", `{"interface":{"ports":[{"name":"a","width":2},{"name":"b"}]},"interface":{"ports":[{"direction":"input"}]}}`, true},
	{"case-insensitive member names", `{"ITEM_ID":"a","Domain":"rtl","Verifier":{"KIND":"kernel"},"interface":{"Top":"x"}}`, true},
	{"exact name then folded name: the last wins", `{"item_id":"a","Item_Id":"b"}`, true},
	{"numbers", `{"difficulty":0.25,"cost":-3e2,"interface":{"tolerance":1E-5,"allow_delegation":true}}`, true},
	{"null everywhere", `{"item_id":null,"interface":null,"verifier":null,"difficulty":null,"provenance":null,"verifier_strength":null}`, true},
	{"nested values via encoding/json", `{"provenance":{"source":"s","ingest_time":"2024-01-02T03:04:05Z"},"verifier_strength":{"measured":true,"survivors":["m1"]},"interface":{"args":[{"name":"x","shape":[2,3],"dtype":"float32"}]}}`, true},
	{"whitespace around everything", " \t{ \"item_id\" : \"a\" , \"verifier\" : { \"kind\" : \"x\" } } \r", true},
	{"empty object", `{}`, true},

	{"number into a string field", `{"item_id":1}`, false},
	{"string into a number field", `{"item_id":"a","difficulty":"hard"}`, false},
	{"number out of range", `{"difficulty":1e400}`, false},
	{"width out of int32 range", `{"interface":{"ports":[{"name":"a","width":4294967296}]}}`, false},
	{"bad ingest_time", `{"provenance":{"ingest_time":"yesterday"}}`, false},
	{"object where a string goes", `{"verifier":{"kind":{"a":1}}}`, false},
	{"array where an object goes", `{"verifier":[1]}`, false},
	{"escaped key", `{"item\u005fid":"a"}`, false},
	{"non-ASCII key folding onto a field (Kelvin sign)", "{\"\u212aind\":\"x\"}", false},
	{"syntax error after members", `{"item_id":"a",}`, false},
	{"truncated", `{"item_id":"a"`, false},
	{"trailing data", `{"item_id":"a"} x`, false},
	{"two objects", `{"item_id":"a"}{"item_id":"b"}`, false},
	{"null line", `null`, false},
	{"array line", `[1,2]`, false},
	{"string line", `"x"`, false},
	{"control character in a string", "{\"item_id\":\"a\x01\"}", false},
	{"invalid UTF-8 inside a string", "{\"item_id\":\"caf\xff\"}", true},
}

func TestDecodeItemLineMatchesEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) {
			if fast := checkDecodeMatches(t, c.line); fast != c.fast {
				t.Fatalf("fast path took the line: %v, want %v", fast, c.fast)
			}
		})
	}
}

// The fast path decodes every row of the benchmark corpus's shape itself.
func TestDecodeFastPathTakesItemRows(t *testing.T) {
	row := `{"domain":"rtl","family":"fam3","instruction":"Task 3. ` + strings.Repeat("The counter increments. ", 50) +
		`","interface":{"top":"TopModule"},"item_id":"item-0000003","reference":"module RefModule(input clk);\n  always @(posedge clk) q \u003c= q + 1;\nendmodule\n","verifier":{"harness":"module tb; endmodule","kind":"differential","top":"tb"}}`
	if !checkDecodeMatches(t, row) {
		t.Fatal("the fast path declined a plain item row")
	}
}

// FuzzDecodeItemLine: for any line, the ingest decoder makes the same
// accept/reject decision as encoding/json, with the same error, and the
// same Item for an accepted line. `go test` runs the seeds.
func FuzzDecodeItemLine(f *testing.F) {
	for _, c := range decodeCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkDecodeMatches(t, line)
	})
}
