package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Encoding names accepted by Load.
const (
	CL100KBase = "cl100k_base"
	O200KBase  = "o200k_base"
)

// tiktoken's special tokens for each encoding (tiktoken_ext/openai_public.py).
var tiktokenSpecials = map[string]map[string]uint32{
	CL100KBase: {
		"<|endoftext|>":   100257,
		"<|fim_prefix|>":  100258,
		"<|fim_middle|>":  100259,
		"<|fim_suffix|>":  100260,
		"<|endofprompt|>": 100276,
	},
	O200KBase: {
		"<|endoftext|>":   199999,
		"<|endofprompt|>": 200018,
	},
}

var tiktokenPatterns = map[string]string{
	CL100KBase: PatternCL100K,
	O200KBase:  PatternO200K,
}

// Parsed rank files are shared: loading o200k takes a few hundred ms and the
// tables are read-only. Each Load still returns its own Tokenizer so added
// template tokens never leak between users.
var (
	rankMu    sync.Mutex
	rankCache = map[string]*bpeModel{}
	rankHash  = map[string]string{}
)

// LoadTiktoken loads cl100k_base or o200k_base from the rank files embedded in
// the tiktoken-go-loader module (no network access).
func LoadTiktoken(name string) (*Tokenizer, error) {
	pattern, ok := tiktokenPatterns[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown tiktoken encoding %q (want %s or %s)", ErrTokenizer, name, CL100KBase, O200KBase)
	}
	rankMu.Lock()
	model, hash := rankCache[name], rankHash[name]
	if model == nil {
		data, err := assets.Assets.ReadFile(name + ".tiktoken")
		if err != nil {
			rankMu.Unlock()
			return nil, fmt.Errorf("%w: read embedded %s.tiktoken: %v", ErrTokenizer, name, err)
		}
		model, err = parseTiktokenRanks(data)
		if err != nil {
			rankMu.Unlock()
			return nil, fmt.Errorf("%w: %s.tiktoken: %v", ErrTokenizer, name, err)
		}
		sum := sha256.Sum256(data)
		hash = hex.EncodeToString(sum[:])
		rankCache[name], rankHash[name] = model, hash
	}
	rankMu.Unlock()
	split, err := splitterFor(pattern)
	if err != nil {
		return nil, err
	}
	specials := map[string]uint32{}
	for k, v := range tiktokenSpecials[name] {
		specials[k] = v
	}
	return &Tokenizer{id: name, fileHash: hash, model: *model, split: split, normName: "none", specials: specials}, nil
}

// parseTiktokenRanks reads "base64(token) rank" lines. tiktoken merges two
// adjacent parts when their concatenation is a token, lowest rank first, so
// the pair table lists every split of every token into two tokens, with the
// whole token's rank as priority.
func parseTiktokenRanks(data []byte) (*bpeModel, error) {
	m := &bpeModel{vocab: make(map[string]uint32, 200_000), wholeFirst: true}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("line %d: want \"token rank\"", lineNo)
		}
		tok, err := base64.StdEncoding.DecodeString(string(line[:sp]))
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineNo, err)
		}
		rank, err := strconv.ParseUint(string(line[sp+1:]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineNo, err)
		}
		m.vocab[string(tok)] = uint32(rank)
		for int(rank) >= len(m.decoder) {
			m.decoder = append(m.decoder, nil)
		}
		m.decoder[rank] = tok
	}
	for b := 0; b < 256; b++ {
		id, ok := m.vocab[string([]byte{byte(b)})]
		if !ok {
			return nil, fmt.Errorf("byte 0x%02x has no token", b)
		}
		m.byteIDs[b] = id
	}
	m.pairs = make(map[uint64]merge, len(m.vocab)*2)
	for tok, id := range m.vocab {
		for k := 1; k < len(tok); k++ {
			l, ok1 := m.vocab[tok[:k]]
			r, ok2 := m.vocab[tok[k:]]
			if ok1 && ok2 {
				m.pairs[pairKey(l, r)] = merge{rank: id, id: id}
			}
		}
	}
	return m, nil
}
