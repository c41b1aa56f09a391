package decontam

import (
	"slices"

	"github.com/crucible-data/crucible/dedup"
)

// prepared is one query text's analysis: its tokens, its grams of every
// window length asked for (sorted by hash) and its MinHash signature. A
// check against several benchmarks (CheckRecordsAll) prepares each corpus
// text once and every benchmark's matcher reads it — tokenising, hashing
// the n-grams and sorting them is most of a lexical match's cost.
type prepared struct {
	text  string
	ti    tokenInfo
	grams []gram
	shing []uint64
	sig   []uint64
}

func (p *prepared) prepare(text string, cfg Config, lens []int) {
	p.text = text
	p.ti.analyse(text, cfg.lang())
	p.grams = textGrams(&p.ti, cfg, lens, p.grams[:0])
	slices.SortFunc(p.grams, func(x, y gram) int { return cmpU64(x.hash, y.hash) })
	p.shing = p.ti.structuralShingles(p.shing[:0], cfg.ShingleN)
	p.sig = dedup.Signer{K: cfg.NumPerm, Seed: cfg.Seed}.Sign(p.shing, p.sig)
}

// analysisKey is the part of a Config a query's preparation depends on.
type analysisKey struct {
	ngram, minTokens, shingleN, numPerm int
	structMinFixed                      float64
	seed                                uint64
	lang                                string
}

func (c Config) analysisKey() analysisKey {
	return analysisKey{c.NGram, c.MinTokens, c.ShingleN, c.NumPerm, c.StructMinFixed, c.Seed, c.Lang}
}

// sharesAnalysis reports whether one prepared query serves every index:
// several benchmark indexes (forward direction) with the same analysis
// settings.
func sharesAnalysis(ixs []*Index) bool {
	if len(ixs) < 2 {
		return false
	}
	for _, ix := range ixs {
		if ix.Meta.Side == SideCorpus || ix.Meta.Config.analysisKey() != ixs[0].Meta.Config.analysisKey() {
			return false
		}
	}
	return true
}

// unionLens is every window length any of ixs matches, NGram first.
func unionLens(ixs []*Index) []int {
	var out []int
	for _, ix := range ixs {
		for _, L := range ix.Meta.Lens {
			if !slices.Contains(out, L) {
				out = append(out, L)
			}
		}
	}
	return out
}
