package dedup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
)

// SynthConfig describes a synthetic corpus with planted near-duplicates,
// used by tests and bench/dedup. Documents are generated on demand from
// (Seed, index), so a corpus of any size costs no memory and every scan
// yields identical text.
type SynthConfig struct {
	N         int     // documents
	DocWords  int     // words per original document (~6 bytes each; 340 ≈ 2 KB)
	Vocab     int     // vocabulary size
	DupFrac   float64 // fraction of documents that are near-duplicates of an earlier original
	EditsMin  int     // word edits applied to a near-duplicate (substitute/insert/delete)
	EditsMax  int
	ExactFrac float64 // fraction of duplicates that are exact copies with changed whitespace
	Seed      uint64
}

// DefaultSynthConfig is the benchmark workload: 2 KB documents, 10%
// planted near-duplicates with 1–5 word edits.
func DefaultSynthConfig(n int) SynthConfig {
	return SynthConfig{N: n, DocWords: 340, Vocab: 20000, DupFrac: 0.10, EditsMin: 1, EditsMax: 5, Seed: 42}
}

// Synth generates the corpus of a SynthConfig.
type Synth struct {
	cfg   SynthConfig
	vocab []string
}

// NewSynth builds the vocabulary.
func NewSynth(cfg SynthConfig) *Synth {
	r := rand.New(rand.NewPCG(cfg.Seed, 0xdeadbeef))
	vocab := make([]string, cfg.Vocab)
	var b strings.Builder
	for i := range vocab {
		b.Reset()
		l := 2 + r.IntN(8)
		for range l {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	return &Synth{cfg: cfg, vocab: vocab}
}

// Base returns the original a document derives from, or -1 for originals.
func (s *Synth) Base(i int) int {
	if i == 0 {
		return -1
	}
	r := rand.New(rand.NewPCG(s.cfg.Seed^0x5bd1e995, uint64(i)))
	if r.Float64() >= s.cfg.DupFrac {
		return -1
	}
	b := r.IntN(i)
	if bb := s.Base(b); bb >= 0 {
		b = bb
	}
	return b
}

// ID is the document id.
func (s *Synth) ID(i int) string { return fmt.Sprintf("doc-%08d", i) }

func (s *Synth) words(i int) []string {
	base := s.Base(i)
	if base < 0 {
		r := rand.New(rand.NewPCG(s.cfg.Seed, uint64(i)))
		w := make([]string, s.cfg.DocWords)
		for k := range w {
			w[k] = s.vocab[r.IntN(len(s.vocab))]
		}
		return w
	}
	w := s.words(base)
	r := rand.New(rand.NewPCG(s.cfg.Seed^0xabcdef, uint64(i)))
	if r.Float64() < s.cfg.ExactFrac {
		return w
	}
	edits := s.cfg.EditsMin + r.IntN(s.cfg.EditsMax-s.cfg.EditsMin+1)
	for range edits {
		p := r.IntN(len(w))
		switch r.IntN(3) {
		case 0:
			w[p] = s.vocab[r.IntN(len(s.vocab))]
		case 1:
			w = append(w[:p], append([]string{s.vocab[r.IntN(len(s.vocab))]}, w[p:]...)...)
		default:
			if len(w) > 1 {
				w = append(w[:p], w[p+1:]...)
			}
		}
	}
	return w
}

// Text returns document i. Exact copies get different line breaks so that
// only normalisation makes them identical.
func (s *Synth) Text(i int) string {
	w := s.words(i)
	var b strings.Builder
	b.Grow(len(w) * 7)
	sep := " "
	if s.Base(i) >= 0 && i%2 == 1 {
		sep = "  "
	}
	for k, x := range w {
		if k > 0 {
			if k%12 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteString(sep)
			}
		}
		b.WriteString(x)
	}
	return b.String()
}

// Scan implements Source.
func (s *Synth) Scan(ctx context.Context, fn func(d Doc) error) error {
	for i := range s.cfg.N {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fn(Doc{ID: s.ID(i), Text: s.Text(i), Tier: TierOther}); err != nil {
			return err
		}
	}
	return nil
}

// PlantedPair is a (original, near-duplicate) pair with its true Jaccard
// similarity under the given shingling.
type PlantedPair struct {
	Base, Dup int
	Jaccard   float64
}

// Planted lists every planted pair with its exact Jaccard similarity under
// cfg's tokenisation and shingling.
func (s *Synth) Planted(cfg Config) []PlantedPair {
	var out []PlantedPair
	var w worker
	for i := range s.cfg.N {
		b := s.Base(i)
		if b < 0 {
			continue
		}
		ja := w.shingleSet(&cfg, s.Text(b))
		jb := w.shingleSet(&cfg, s.Text(i))
		out = append(out, PlantedPair{Base: b, Dup: i, Jaccard: ExactJaccard(ja, jb)})
	}
	return out
}

// Fetch implements Fetcher: documents are generated on demand.
func (s *Synth) Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error {
	for k, i := range idx {
		if k%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if int(i) >= s.cfg.N {
			return fmt.Errorf("%w: fetch %d of %d documents", ErrInput, i, s.cfg.N)
		}
		if err := fn(i, Doc{ID: s.ID(int(i)), Text: s.Text(int(i)), Tier: TierOther}); err != nil {
			return err
		}
	}
	return nil
}
