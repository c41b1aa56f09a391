package dedup

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/internal/jsonscan"
)

// TestJSONStringMatchesJSONScan: jsonString decodes every kind of JSON
// string (plain, escaped, \u escapes and surrogate pairs, non-ASCII,
// invalid UTF-8, empty, long) to exactly what jsonscan.String gives, and
// refuses what is not a string.
func TestJSONStringMatchesJSONScan(t *testing.T) {
	long := strings.Repeat(`word word\nline \"q\" `, 200)
	for _, v := range []string{
		`""`, `"plain text"`, `"a\nb\tc\\d\/e\"f"`, `"\u00e9t\u00E9"`, `"\ud83d\ude00 smile"`, `"\ud83d alone"`,
		`"caf` + "\xc3\xa9" + `"`, `"12345678\n12345678\\12345678\u0041bc\/"`, `"tab\there\r\b\f end"`, `"\'q"`, `"bad ` + "\xff\xfe" + ` bytes"`, `"bad ` + "\xff" + `\n escaped"`, `"\\"`, `"` + long + `"`,
	} {
		want, wok := jsonscan.String([]byte(v))
		got, ok := jsonString([]byte(v))
		if got != want || ok != wok || !ok {
			t.Errorf("%.40q: got %.40q %v, jsonscan.String %.40q %v", v, got, ok, want, wok)
		}
	}
	// Random strings of every byte class, escaped by encoding/json and by
	// hand (escapes encoding/json does not write, at 8-byte boundaries and
	// between).
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", `\n`, `\t`, `\\`, `\"`, `\/`, `\u00e9`, `\ud83d\ude00`, "é", "日本", `\r`, `\b`, `\f`, "12345678"}
	var scratch []byte
	for k := range 2000 {
		var b strings.Builder
		if k%2 == 0 {
			raw := make([]rune, r.IntN(40))
			for i := range raw {
				raw[i] = []rune("ab\n\t\"\\/é日\x01 \u2028")[r.IntN(12)]
			}
			j, _ := json.Marshal(string(raw))
			b.Write(j)
		} else {
			b.WriteByte('"')
			for range r.IntN(30) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			b.WriteByte('"')
		}
		v := []byte(b.String())
		want, _ := jsonscan.String(v)
		if got, ok := jsonString(v); got != want || !ok {
			t.Fatalf("%q: got %q, jsonscan.String %q", v, got, want)
		}
		wantC, _ := jsonscan.Contents(v, nil)
		var gotC []byte
		gotC, scratch = jsonContents(v, scratch)
		if !bytes.Equal(gotC, wantC) {
			t.Fatalf("%q: contents %q, jsonscan.Contents %q", v, gotC, wantC)
		}
	}
	for _, v := range []string{`12`, `null`, `{"a":1}`, `[]`, `"`, ``} {
		if _, ok := jsonString([]byte(v)); ok {
			t.Errorf("%q decoded as a string", v)
		}
	}
	// The decoded string owns its bytes: reusing the input leaves it alone.
	raw := []byte(`"x\ny"`)
	s, _ := jsonString(raw)
	copy(raw, `"zzzz"`)
	if s != "x\ny" {
		t.Errorf("decoded string changed with its input: %q", s)
	}
}
