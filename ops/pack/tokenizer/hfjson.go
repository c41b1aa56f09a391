package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// hfFile is the subset of a Hugging Face tokenizer.json that byte-level BPE
// needs. Anything this loader cannot reproduce exactly is rejected with an
// error naming the field, never silently approximated.
type hfFile struct {
	AddedTokens []struct {
		ID      uint32 `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   *hfNormalizer   `json:"normalizer"`
	PreTokenizer *hfPreTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type                    string            `json:"type"`
		Vocab                   map[string]uint32 `json:"vocab"`
		Merges                  json.RawMessage   `json:"merges"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		ByteFallback            bool              `json:"byte_fallback"`
		ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
		Dropout                 *float64          `json:"dropout"`
	} `json:"model"`
}

type hfNormalizer struct {
	Type        string          `json:"type"`
	Normalizers []*hfNormalizer `json:"normalizers"`
}

type hfPreTokenizer struct {
	Type           string            `json:"type"`
	Pretokenizers  []*hfPreTokenizer `json:"pretokenizers"`
	Pattern        map[string]string `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       bool              `json:"use_regex"`
}

// LoadHFJSON loads a byte-level BPE tokenizer.json (Qwen2/Qwen3, Llama 3,
// GPT-2 style): ranks from the order of the merges, the pre-tokenizer split
// pattern, the normaliser and the added/special tokens.
func LoadHFJSON(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTokenizer, err)
	}
	t, err := parseHFJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTokenizer, path, err)
	}
	sum := sha256.Sum256(data)
	t.fileHash = hex.EncodeToString(sum[:])
	t.id = "tokenizer.json:" + filepath.Base(filepath.Dir(path))
	return t, nil
}

func parseHFJSON(data []byte) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode: %v", err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("model.type %q: only byte-level BPE is supported", f.Model.Type)
	}
	if f.Model.ByteFallback {
		return nil, fmt.Errorf("model.byte_fallback=true is not supported (SentencePiece-style vocabulary)")
	}
	if f.Model.Dropout != nil && *f.Model.Dropout != 0 {
		return nil, fmt.Errorf("model.dropout=%v is not supported", *f.Model.Dropout)
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix %q is not supported", *p)
	}
	if p := f.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix %q is not supported", *p)
	}
	t := &Tokenizer{specials: map[string]uint32{}}
	norm, name, err := hfNormalize(f.Normalizer)
	if err != nil {
		return nil, err
	}
	t.normalize, t.normName = norm, name
	if t.split, err = hfSplitter(f.PreTokenizer); err != nil {
		return nil, err
	}
	m := &t.model
	m.wholeFirst = f.Model.IgnoreMerges
	m.vocab = make(map[string]uint32, len(f.Model.Vocab))
	for s, id := range f.Model.Vocab {
		raw, err := byteLevelDecode(s)
		if err != nil {
			return nil, fmt.Errorf("model.vocab %q: %v", s, err)
		}
		m.vocab[raw] = id
		for int(id) >= len(m.decoder) {
			m.decoder = append(m.decoder, nil)
		}
		m.decoder[id] = []byte(raw)
	}
	for b := 0; b < 256; b++ {
		id, ok := m.vocab[string([]byte{byte(b)})]
		if !ok {
			return nil, fmt.Errorf("model.vocab: byte 0x%02x (%q) has no token; not a byte-level vocabulary", b, string(byteToRune[b]))
		}
		m.byteIDs[b] = id
	}
	merges, err := parseMerges(f.Model.Merges)
	if err != nil {
		return nil, err
	}
	m.pairs = make(map[uint64]merge, len(merges))
	for i, mg := range merges {
		l, ok1 := f.Model.Vocab[mg[0]]
		r, ok2 := f.Model.Vocab[mg[1]]
		res, ok3 := f.Model.Vocab[mg[0]+mg[1]]
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("model.merges[%d] %q: token not in vocab", i, mg[0]+" "+mg[1])
		}
		if _, dup := m.pairs[pairKey(l, r)]; !dup { // first occurrence wins, as in tokenizers
			m.pairs[pairKey(l, r)] = merge{rank: uint32(i), id: res}
		}
	}
	for _, at := range f.AddedTokens {
		t.specials[at.Content] = at.ID
	}
	return t, nil
}

// parseMerges accepts both the "a b" string form and the ["a","b"] pair form.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, fmt.Errorf("model.merges: want [\"a b\", ...] or [[\"a\",\"b\"], ...]: %v", err)
	}
	pairs = make([][2]string, len(strs))
	for i, s := range strs {
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

func hfNormalize(n *hfNormalizer) (func(string) string, string, error) {
	if n == nil {
		return nil, "none", nil
	}
	forms := map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}
	if f, ok := forms[n.Type]; ok {
		return func(s string) string {
			if f.IsNormalString(s) {
				return s
			}
			return f.String(s)
		}, n.Type, nil
	}
	if n.Type == "Sequence" {
		var fns []func(string) string
		var names []string
		for _, sub := range n.Normalizers {
			fn, name, err := hfNormalize(sub)
			if err != nil {
				return nil, "", err
			}
			if fn != nil {
				fns = append(fns, fn)
				names = append(names, name)
			}
		}
		if len(fns) == 0 {
			return nil, "none", nil
		}
		return func(s string) string {
			for _, fn := range fns {
				s = fn(s)
			}
			return s
		}, strings.Join(names, "+"), nil
	}
	return nil, "", fmt.Errorf("normalizer.type %q is not supported (NFC, NFD, NFKC, NFKD, Sequence)", n.Type)
}

// hfSplitter maps the pre_tokenizer onto a splitter. Supported: a Split with
// an isolated regex followed by a ByteLevel without its own regex (Qwen,
// Llama 3), or a lone ByteLevel with the GPT-2 regex.
func hfSplitter(p *hfPreTokenizer) (splitter, error) {
	if p == nil {
		return nil, fmt.Errorf("pre_tokenizer is missing; byte-level BPE needs one")
	}
	steps := []*hfPreTokenizer{p}
	if p.Type == "Sequence" {
		steps = p.Pretokenizers
	}
	var pattern string
	for i, s := range steps {
		switch s.Type {
		case "Split":
			re, ok := s.Pattern["Regex"]
			if !ok || s.Behavior != "Isolated" || s.Invert || pattern != "" {
				return nil, fmt.Errorf("pre_tokenizer[%d]: only one Split with a Regex pattern, behavior Isolated, invert false is supported", i)
			}
			pattern = re
		case "ByteLevel":
			if s.AddPrefixSpace {
				return nil, fmt.Errorf("pre_tokenizer[%d]: ByteLevel add_prefix_space=true is not supported", i)
			}
			if s.UseRegex {
				if pattern != "" {
					return nil, fmt.Errorf("pre_tokenizer[%d]: ByteLevel use_regex after a Split is not supported", i)
				}
				pattern = PatternGPT2
			}
		default:
			return nil, fmt.Errorf("pre_tokenizer[%d]: type %q is not supported", i, s.Type)
		}
	}
	if pattern == "" {
		return nil, fmt.Errorf("pre_tokenizer: no split pattern")
	}
	return splitterFor(pattern)
}

// byteToRune is GPT-2's bytes_to_unicode table: printable bytes map to
// themselves, the rest to U+0100 upwards, so every byte is a visible rune.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

func byteLevelDecode(s string) (string, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeToByte[r]
		if !ok {
			return "", fmt.Errorf("rune %q is outside the byte-level alphabet", r)
		}
		out = append(out, b)
	}
	return string(out), nil
}
