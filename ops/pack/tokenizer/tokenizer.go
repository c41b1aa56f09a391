// Package tokenizer implements exact byte-level BPE tokenisers for packing:
// tiktoken's cl100k_base and o200k_base (rank files shipped offline inside the
// github.com/pkoukk/tiktoken-go-loader module) and Hugging Face tokenizer.json
// byte-level BPE vocabularies (Qwen, Llama 3 style). Ids match tiktoken-go and
// the Hugging Face reference exactly; speed comes from hand-written
// pre-tokenisers instead of a regex engine, a per-goroutine piece cache and a
// pair-table BPE merge.
package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrTokenizer is wrapped by every error about loading or using a tokeniser.
var ErrTokenizer = errors.New("tokenizer")

// Tokenizer is immutable after loading and safe for concurrent use; each
// goroutine encodes through its own Encoder (NewEncoder) for a private cache.
type Tokenizer struct {
	id       string // "cl100k_base", "o200k_base" or "tokenizer.json:<name>"
	fileHash string // sha256 of the rank file or tokenizer.json
	model    bpeModel
	split    splitter
	// normalize is applied to ordinary text before splitting (NFC for Qwen).
	normalize func(string) string
	normName  string
	specials  map[string]uint32 // special and added tokens, by text
	// added are template tokens the vocabulary lacks; they get fresh ids
	// after the largest existing id (see AddSpecial).
	added map[string]uint32
	mu    sync.Mutex
	pool  sync.Pool
}

// ID names the tokeniser (recorded in manifests).
func (t *Tokenizer) ID() string { return t.id }

// FileHash is the sha256 of the vocabulary file the tokeniser was built from.
func (t *Tokenizer) FileHash() string { return t.fileHash }

// Describe summarises the pipeline for logs and manifests.
func (t *Tokenizer) Describe() string {
	return fmt.Sprintf("%s (pre-tokeniser %s, normaliser %s, %d tokens)", t.id, t.split.name(), t.normName, len(t.model.vocab))
}

// VocabSize is one more than the largest id in use, added tokens included.
func (t *Tokenizer) VocabSize() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.model.decoder)
	for _, id := range t.specials {
		if int(id) >= n {
			n = int(id) + 1
		}
	}
	for _, id := range t.added {
		if int(id) >= n {
			n = int(id) + 1
		}
	}
	return n
}

// SpecialID returns the id of a special or added token of the vocabulary.
func (t *Tokenizer) SpecialID(text string) (uint32, bool) {
	if id, ok := t.specials[text]; ok {
		return id, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.added[text]
	return id, ok
}

// AddSpecial returns the id of a template token: the vocabulary's own id when
// it has one (Qwen's <|im_start|>, <think>), otherwise a new id after the
// largest existing one, allocated once and deterministically for a fixed call
// order. The bool says whether the id is new (the training job must then grow
// its embedding table).
func (t *Tokenizer) AddSpecial(text string) (uint32, bool) {
	if id, ok := t.specials[text]; ok {
		return id, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.added[text]; ok {
		return id, true
	}
	next := uint32(len(t.model.decoder))
	for _, id := range t.specials {
		if id >= next {
			next = id + 1
		}
	}
	for _, id := range t.added {
		if id >= next {
			next = id + 1
		}
	}
	if t.added == nil {
		t.added = map[string]uint32{}
	}
	t.added[text] = next
	return next, true
}

// AddedTokens lists the ids allocated by AddSpecial, sorted by id.
func (t *Tokenizer) AddedTokens() []SpecialToken {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]SpecialToken, 0, len(t.added))
	for s, id := range t.added {
		out = append(out, SpecialToken{Text: s, ID: id})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SpecialToken is a token text and its id.
type SpecialToken struct {
	Text string `json:"text"`
	ID   uint32 `json:"id"`
}

// Encode tokenises ordinary text (special-token text is not interpreted) with
// a pooled Encoder. Hot loops should hold their own Encoder instead.
func (t *Tokenizer) Encode(text string) []uint32 {
	e := t.getEncoder()
	defer t.pool.Put(e)
	return e.Encode(nil, text)
}

func (t *Tokenizer) getEncoder() *Encoder {
	if e, ok := t.pool.Get().(*Encoder); ok {
		return e
	}
	return t.NewEncoder()
}

// Decode maps ids back to bytes (special and added tokens to their text).
func (t *Tokenizer) Decode(ids []uint32) (string, error) {
	var b strings.Builder
	var rev map[uint32]string
	for _, id := range ids {
		if int(id) < len(t.model.decoder) && t.model.decoder[id] != nil {
			b.Write(t.model.decoder[id])
			continue
		}
		if rev == nil {
			rev = map[uint32]string{}
			for s, i := range t.specials {
				rev[i] = s
			}
			t.mu.Lock()
			for s, i := range t.added {
				rev[i] = s
			}
			t.mu.Unlock()
		}
		s, ok := rev[id]
		if !ok {
			return "", fmt.Errorf("%w: unknown token id %d", ErrTokenizer, id)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// maxCacheEntries bounds each Encoder's piece cache; when full it is
// cleared, which keeps memory flat on adversarial text at little cost.
const maxCacheEntries = 1 << 18

// maxCachedPiece is the longest piece worth caching; longer ones are rare
// and would only bloat the cache.
const maxCachedPiece = 64

// Encoder tokenises on one goroutine with private piece → ids caches: a
// direct-mapped table for pieces of up to 8 bytes (most of them; a lookup is
// one multiply and one compare) in front of a map for longer pieces.
type Encoder struct {
	t       *Tokenizer
	small   []smallEntry
	cache   map[string]uint64 // piece -> offset<<8 | count into arena
	arena   []uint32
	scratch mergeScratch
	out     []uint32
	emit    func(string)
}

// smallEntry caches one piece of 1..8 bytes whose ids fit inline.
type smallEntry struct {
	key  uint64 // the piece's bytes, little-endian
	meta uint32 // len<<8 | count; 0 = empty
	ids  [4]uint32
}

const smallBits = 16

// NewEncoder returns an Encoder for one goroutine.
func (t *Tokenizer) NewEncoder() *Encoder {
	e := &Encoder{t: t, cache: make(map[string]uint64, 1<<12), small: make([]smallEntry, 1<<smallBits)}
	e.emit = e.piece
	return e
}

func smallKey(p string) uint64 {
	var k uint64
	for i := len(p) - 1; i >= 0; i-- {
		k = k<<8 | uint64(p[i])
	}
	return k
}

// Encode appends the ids of ordinary text to dst.
func (e *Encoder) Encode(dst []uint32, text string) []uint32 {
	if e.t.normalize != nil {
		text = e.t.normalize(text)
	}
	e.out = dst
	e.t.split.split(text, e.emit)
	dst = e.out
	e.out = nil
	return dst
}

func (e *Encoder) piece(p string) {
	if len(p) == 1 {
		e.out = append(e.out, e.t.model.byteIDs[p[0]])
		return
	}
	if len(p) <= 8 {
		k := smallKey(p)
		ent := &e.small[(k*0x9E3779B97F4A7C15+uint64(len(p)))>>(64-smallBits)]
		if ent.key == k && ent.meta>>8 == uint32(len(p)) {
			e.out = append(e.out, ent.ids[:ent.meta&0xff]...)
			return
		}
		start := len(e.out)
		e.out = e.t.model.encodePiece(e.out, p, &e.scratch)
		if n := len(e.out) - start; n <= 4 {
			ent.key, ent.meta = k, uint32(len(p))<<8|uint32(n)
			copy(ent.ids[:], e.out[start:])
		}
		return
	}
	if v, ok := e.cache[p]; ok {
		off, n := v>>8, v&0xff
		e.out = append(e.out, e.arena[off:off+n]...)
		return
	}
	start := len(e.out)
	e.out = e.t.model.encodePiece(e.out, p, &e.scratch)
	n := len(e.out) - start
	if len(p) > maxCachedPiece || n > 0xff {
		return
	}
	if len(e.cache) >= maxCacheEntries {
		clear(e.cache)
		e.arena = e.arena[:0]
	}
	off := len(e.arena)
	e.arena = append(e.arena, e.out[start:]...)
	e.cache[strings.Clone(p)] = uint64(off)<<8 | uint64(n)
}

// Load resolves a tokeniser spec: "cl100k_base", "o200k_base" or the path of
// a Hugging Face tokenizer.json.
func Load(spec string) (*Tokenizer, error) {
	switch spec {
	case CL100KBase, O200KBase:
		return LoadTiktoken(spec)
	case "":
		return nil, fmt.Errorf("%w: empty tokenizer spec (want %s, %s or a tokenizer.json path)", ErrTokenizer, CL100KBase, O200KBase)
	}
	return LoadHFJSON(spec)
}
