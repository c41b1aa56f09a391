package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzJSONScan: the scanner accepts exactly what encoding/json accepts,
// finds the same members (the last of a repeated key) and unquotes
// strings the same way. `go test` runs the seeds.
func FuzzJSONScan(f *testing.F) {
	f.Add(`{"item_id":"a","domain":"rtl","verifier":{"kind":"differential","harness":"h"},"interface":{"ports":[{"name":"clk","width":1}]}}`)
	f.Add(`{"a":"caf\u00e9 \ud83d\ude00","a":null,"b":[true,false,-1.5e3]}`)
	f.Add(`{"plain":"` + strings.Repeat("sixteen bytes ok", 5) + `x","esc":"` + strings.Repeat("sixteen bytes ok", 3) + `\n","hi":"` + strings.Repeat("abcdefghijklmno", 2) + "\u00e9" + `"}`)
	for _, l := range []string{`{}`, `{"a":[1,2,{"b":null}]}`, `{"a":"\ud83d"}`, `{"a":"\ud83d\u0041"}`, `{"a":1e}`, `{"a":-}`, `{"a":.5}`,
		`{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":[1,]}`, `{"a":"\xff"}`, "{\"a\":\"\xff\xfe\"}", `{"a":1}}`, `{"a":tRue}`, `{"":0}`,
		strings.Repeat("[", 20) + strings.Repeat("]", 20), `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(s)
		var want map[string]json.RawMessage
		werr := json.Unmarshal(raw, &want)
		got := map[string][]byte{}
		gerr := Members(raw, func(key []byte, slow bool, v []byte) error {
			got[Key(key, slow)] = v
			return nil
		})
		qerr := MembersQuoted(raw, func(key []byte, slow bool, v []byte, vslow bool) error {
			// valueSlow is exactly "Contents would not return the raw bytes".
			if v[0] == '"' {
				in, _ := Contents(v, nil)
				if raw := len(in) == 0 || &in[0] == &v[1]; raw == vslow {
					t.Fatalf("%q: member %q: valueSlow %v, Contents copies: %v", s, key, vslow, !raw)
				}
			} else if vslow {
				t.Fatalf("%q: member %q: valueSlow for a non-string", s, key)
			}
			return nil
		})
		if (qerr == nil) != (gerr == nil) {
			t.Fatalf("%q: MembersQuoted %v, Members %v", s, qerr, gerr)
		}
		isObj := bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
		if !isObj {
			if gerr == nil {
				t.Fatalf("%q: a non-object accepted", s)
			}
			if err := Valid(raw); (err == nil) != json.Valid(raw) {
				t.Fatalf("%q: validJSON %v, json.Valid %v", s, err, json.Valid(raw))
			}
			return
		}
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: scanner error %v, encoding/json error %v", s, gerr, werr)
		}
		if gerr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, want %d", s, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%q: member %q = %q, want %q", s, k, got[k], v)
			}
			var ws string
			if v[0] == '"' && json.Unmarshal(v, &ws) == nil {
				gs, ok := String(got[k])
				if !ok || gs != ws {
					t.Fatalf("%q: member %q unquoted %q, want %q", s, k, gs, ws)
				}
			}
		}
	})
}

// plainRun, which tests eight bytes at a time, stops at the first
// backslash or non-ASCII byte wherever it falls in a word, and Contents
// then copies exactly when there is one.
func TestPlainRunFindsTheFirstByteToUnquote(t *testing.T) {
	for n := 0; n < 40; n++ {
		base := strings.Repeat("abcdefgh", 5)[:n]
		if got := plainRun([]byte(base)); got != n {
			t.Fatalf("plain %q: %d, want %d", base, got, n)
		}
		for at := 0; at < n; at++ {
			for _, c := range []byte{'\\', 0x80, 0xC3, 0xFF} {
				s := []byte(base)
				s[at] = c
				if got := plainRun(s); got != at {
					t.Fatalf("%q: %d, want %d", s, got, at)
				}
				if c == '\\' { // valid JSON only with an escape after it
					if at+1 == n {
						continue
					}
					s[at+1] = 'n'
				}
				v := append(append([]byte{'"'}, s...), '"')
				got, _ := Contents(v, nil)
				if &got[0] == &v[1] {
					t.Fatalf("%q: Contents returned the raw bytes, which need unquoting", s)
				}
			}
		}
	}
}
