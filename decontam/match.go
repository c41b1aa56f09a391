package decontam

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/dedup"
)

// inMemoryGramBytes: gram and signature files up to this size are loaded;
// larger ones are read by offset (grams through a sparse in-memory fence
// index). A variable so tests can force the disk path.
var inMemoryGramBytes int64 = 256 << 20

const fenceEvery = 1024 // records per fence block (16 KiB)

// Index is an opened index directory.
type Index struct {
	Dir     string // the index directory
	Meta    IndexMeta
	Entries []Entry
	sigs    []uint64 // loaded signatures (small indexes)
	sigF    *os.File // large indexes: read by offset
	recs    []byte   // loaded gram records
	gramF   *os.File
	fences  []uint64 // first key of every fenceEvery-th record (disk mode)
	prefix  []int32  // loaded mode: first record whose key's top 16 bits ≥ p, p = 0..65536
	nrec    int64
}

// buildPrefix indexes loaded records by the top 16 bits of their key, so a
// lookup binary-searches a handful of records instead of the whole file.
func (ix *Index) buildPrefix() {
	n := len(ix.recs) / 16
	ix.prefix = make([]int32, 1<<16+1)
	r := 0
	for p := 0; p <= 1<<16; p++ {
		for r < n && binary.LittleEndian.Uint64(ix.recs[16*r:])>>48 < uint64(p) {
			r++
		}
		ix.prefix[p] = int32(r)
	}
}

// readMeta reads an index directory's meta.json, upgrading older versions
// in memory: 1 has no document-frequency suppression, 1 and 2 no interface
// index.
func readMeta(dir string) (IndexMeta, error) {
	var meta IndexMeta
	raw, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return meta, fmt.Errorf("%w: %s is not an index (no %s): %v", ErrInput, dir, metaFile, err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return meta, fmt.Errorf("%w: %s: %v", ErrInput, filepath.Join(dir, metaFile), err)
	}
	switch meta.Version {
	case indexVersion, 3:
	case 2:
		meta.Behavioural = false
	case 1:
		meta.Config.MaxDocFreq, meta.Behavioural = 1, false
	default:
		return meta, fmt.Errorf("%w: %s: index version %d, want %d", ErrInput, dir, meta.Version, indexVersion)
	}
	return meta, nil
}

// Open loads an index directory written by Builder.
func Open(dir string) (*Index, error) {
	meta, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	ix := &Index{Dir: dir, Meta: meta}
	ef, err := os.Open(filepath.Join(dir, entriesFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer ef.Close()
	sc := bufio.NewScanner(ef)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrInput, entriesFile, line, err)
		}
		ix.Entries = append(ix.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, entriesFile, err)
	}
	if len(ix.Entries) != ix.Meta.Entries {
		return nil, fmt.Errorf("%w: %s: %d entries, meta says %d", ErrInput, dir, len(ix.Entries), ix.Meta.Entries)
	}
	k := ix.Meta.Config.NumPerm
	sigPath := filepath.Join(dir, sigsFile)
	if int64(len(ix.Entries))*int64(k)*8 <= inMemoryGramBytes {
		b, err := os.ReadFile(sigPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInput, err)
		}
		if len(b) != len(ix.Entries)*k*8 {
			return nil, fmt.Errorf("%w: %s: %d bytes, want %d", ErrInput, sigPath, len(b), len(ix.Entries)*k*8)
		}
		ix.sigs = make([]uint64, len(b)/8)
		for i := range ix.sigs {
			ix.sigs[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	} else if ix.sigF, err = os.Open(sigPath); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	gp := filepath.Join(dir, gramsFile)
	st, err := os.Stat(gp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if st.Size()%16 != 0 || st.Size()/16 != ix.Meta.Records {
		return nil, fmt.Errorf("%w: %s: %d bytes for %d records", ErrInput, gp, st.Size(), ix.Meta.Records)
	}
	ix.nrec = ix.Meta.Records
	if st.Size() <= inMemoryGramBytes {
		if ix.recs, err = os.ReadFile(gp); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInput, err)
		}
		for i := int64(0); i < ix.nrec; i++ {
			if err := ix.checkRecord(gp, i, ix.recs[16*i:16*i+16]); err != nil {
				return nil, err
			}
		}
		ix.buildPrefix()
		return ix, nil
	}
	if ix.gramF, err = os.Open(gp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	br := bufio.NewReaderSize(ix.gramF, 1<<20)
	var rec [16]byte
	for i := int64(0); i < ix.nrec; i++ {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInput, gp, err)
		}
		if err := ix.checkRecord(gp, i, rec[:]); err != nil {
			return nil, err
		}
		if i%fenceEvery == 0 {
			ix.fences = append(ix.fences, binary.LittleEndian.Uint64(rec[:8]))
		}
	}
	return ix, nil
}

// checkRecord refuses a gram record naming an entry the index does not
// have (a damaged grams.bin), so matching never indexes past Entries.
func (ix *Index) checkRecord(path string, i int64, rec []byte) error {
	if e := binary.LittleEndian.Uint32(rec[8:12]); int64(e) >= int64(len(ix.Entries)) {
		return fmt.Errorf("%w: %s: record %d names entry %d of %d", ErrInput, path, i+1, e, len(ix.Entries))
	}
	return nil
}

// Close releases files.
func (ix *Index) Close() error {
	if ix.sigF != nil {
		ix.sigF.Close()
	}
	if ix.gramF != nil {
		ix.gramF.Close()
	}
	return nil
}

// lookup calls fn for every record with the key.
func (ix *Index) lookup(key uint64, buf *[]byte, fn func(entry int32, tag uint32)) error {
	scan := func(b []byte) bool { // returns false once past the key
		for off := 0; off+16 <= len(b); off += 16 {
			k := binary.LittleEndian.Uint64(b[off:])
			if k > key {
				return false
			}
			if k == key {
				fn(int32(binary.LittleEndian.Uint32(b[off+8:])), binary.LittleEndian.Uint32(b[off+12:]))
			}
		}
		return true
	}
	if ix.recs != nil {
		lo, hi := int(ix.prefix[key>>48]), int(ix.prefix[key>>48+1])
		i := lo + sort.Search(hi-lo, func(i int) bool { return binary.LittleEndian.Uint64(ix.recs[16*(lo+i):]) >= key })
		scan(ix.recs[16*i:])
		return nil
	}
	// The first block that may hold the key is the last whose fence is < key
	// (equal keys can straddle a fence).
	blk := sort.Search(len(ix.fences), func(i int) bool { return ix.fences[i] >= key }) - 1
	blk = max(blk, 0)
	if cap(*buf) < 16*fenceEvery {
		*buf = make([]byte, 16*fenceEvery)
	}
	for ; int64(blk)*fenceEvery < ix.nrec; blk++ {
		start := int64(blk) * fenceEvery
		nr := min(int64(fenceEvery), ix.nrec-start)
		b := (*buf)[:16*nr]
		if _, err := ix.gramF.ReadAt(b, start*16); err != nil {
			return fmt.Errorf("%w: read grams: %v", ErrIO, err)
		}
		if !scan(b) {
			return nil
		}
	}
	return nil
}

func (ix *Index) signature(entry int32, dst []uint64) ([]uint64, error) {
	k := ix.Meta.Config.NumPerm
	if ix.sigs != nil {
		return append(dst[:0], ix.sigs[int(entry)*k:int(entry+1)*k]...), nil
	}
	b := make([]byte, 8*k)
	if _, err := ix.sigF.ReadAt(b, int64(entry)*int64(8*k)); err != nil {
		return nil, fmt.Errorf("%w: read signature: %v", ErrIO, err)
	}
	dst = dst[:0]
	for i := range k {
		dst = append(dst, binary.LittleEndian.Uint64(b[8*i:]))
	}
	return dst, nil
}

// Span is a byte range [Start, End) of a text.
type Span struct {
	Start int64 `json:"start" arrow:"start"`
	End   int64 `json:"end" arrow:"end"`
}

// Match is one (corpus item, benchmark item field) overlap.
type Match struct {
	CorpusID          string  `json:"corpus_id" arrow:"corpus_id"`
	CorpusField       string  `json:"corpus_field" arrow:"corpus_field"`
	Benchmark         string  `json:"benchmark" arrow:"benchmark"` // benchmark name (file)
	BenchmarkID       string  `json:"benchmark_id" arrow:"benchmark_id"`
	BenchmarkField    string  `json:"benchmark_field" arrow:"benchmark_field"`
	Method            string  `json:"method" arrow:"method"` // lexical | structural | minhash: the channel that gave the score; behavioural: passed the benchmark's harness
	MatchedNgrams     int32   `json:"matched_ngrams" arrow:"matched_ngrams"`
	BenchmarkNgrams   int32   `json:"benchmark_ngrams" arrow:"benchmark_ngrams"`     // the benchmark text's n-grams that count (common ones excluded, Config.MaxDocFreq)
	LexicalOverlap    float64 `json:"lexical_overlap" arrow:"lexical_overlap"`       // share of the benchmark text's lexical n-grams found
	StructuralOverlap float64 `json:"structural_overlap" arrow:"structural_overlap"` // same, identifiers as placeholders
	OverlapRatio      float64 `json:"overlap_ratio" arrow:"overlap_ratio"`           // max of the two
	MinhashSimilarity float64 `json:"minhash_similarity" arrow:"minhash_similarity"` // estimated Jaccard of structural shingles
	Score             float64 `json:"score" arrow:"score"`                           // max(overlap_ratio, minhash_similarity)
	Contaminated      bool    `json:"contaminated" arrow:"contaminated"`             // score ≥ threshold
	SpansIn           string  `json:"spans_in" arrow:"spans_in"`                     // corpus | benchmark: whose text the spans index
	Spans             []Span  `json:"spans" arrow:"spans"`
	Excerpt           string  `json:"excerpt" arrow:"excerpt"` // longest span, truncated
	// SharedWith lists, sorted, the other benchmark items that hold every
	// n-gram this match counted: the matched text is not specific to
	// BenchmarkID, and a copy of any of them would match it alike. Empty
	// when the matched text is BenchmarkID's own (or the match is MinHash
	// only). Each of those items has a match of its own when it scores high
	// enough.
	SharedWith []string `json:"shared_with" arrow:"shared_with"`
	// PortMapping (behavioural matches only) is the mapping under which the
	// corpus design passed the benchmark's harness: "bench=corpus" port
	// pairs in the benchmark's port order. Empty for lexical methods.
	PortMapping string `json:"port_mapping" arrow:"port_mapping"`
	// Evidence (behavioural matches only) is the passing verdict's evidence
	// row as JSON (BehaviouralEvidence: status, attempts, toolchain, input
	// hashes, measurements, the design's top, mappings tried).
	Evidence string `json:"evidence" arrow:"evidence"`
}

// Matcher queries one index with texts; not safe for concurrent use (one
// per goroutine).
type Matcher struct {
	ix    *Index
	cfg   Config
	own   prepared  // the query as Match prepares it
	q     *prepared // the query being matched (own, or one shared by several matchers)
	lens  []bool    // window lengths of the index (Meta.Lens), by length
	grams []gram
	runs  []gramRun
	found []posting
	esig  []uint64
	keys  []uint64
	buf   []byte
	hits  map[int32]*hit
	bench *benchGrams // reverse direction: the benchmark's own postings (Check sets it)
}

// gramRun is one distinct gram of the query: grams[lo:hi] share its hash.
type gramRun struct {
	lo, hi int32
	chann  uint8
	common bool // too common in the index or in the benchmark (Config.MaxDocFreq)
}

// posting is one index entry holding a query gram run.
type posting struct {
	entry, run int32
}

type hit struct {
	count   [2]int32
	windows [][2]int32 // matched token windows in the query
	runs    []int32    // counted gram runs, ascending
}

// NewMatcher returns a matcher for ix.
func (ix *Index) NewMatcher() *Matcher {
	return &Matcher{ix: ix, cfg: ix.Meta.Config, hits: map[int32]*hit{}}
}

const maxWindows = 4096

// Match compares one query text against every indexed entry. When the index
// holds the benchmark (Meta.Side == "benchmark") the query is a corpus item;
// otherwise the query is a benchmark item checked against a corpus index.
// Overlap ratios are always relative to the benchmark text's n-grams that
// count: grams too common (Config.MaxDocFreq) count on neither side.
func (m *Matcher) Match(queryID, queryField, text string) ([]Match, error) {
	m.own.prepare(text, m.cfg, m.ix.Meta.Lens)
	return m.matchPrepared(&m.own, queryID, queryField, false)
}

// matchPrepared matches a prepared query. With filter, p holds grams of
// window lengths other indexes asked for (CheckRecordsAll): only the
// lengths of this index, and the whole-text gram of a short query, count.
func (m *Matcher) matchPrepared(p *prepared, queryID, queryField string, filter bool) ([]Match, error) {
	cfg := m.cfg
	m.q = p
	if !filter {
		m.grams = p.grams
	} else {
		if m.lens == nil {
			for _, L := range m.ix.Meta.Lens {
				for len(m.lens) <= L {
					m.lens = append(m.lens, false)
				}
				m.lens[L] = true
			}
		}
		n := len(p.ti.lex)
		whole := n >= cfg.MinTokens && n < cfg.NGram
		m.grams = m.grams[:0]
		for _, g := range p.grams {
			if L := int(g.len); L < len(m.lens) && m.lens[L] || whole && L == n {
				m.grams = append(m.grams, g)
			}
		}
	}
	clear(m.hits)
	forward := m.ix.Meta.Side != SideCorpus
	// Look every distinct gram up once, noting whether it is common: the
	// index marks grams common among its entries, the benchmark postings
	// (reverse) those common among the benchmark's items.
	m.runs, m.found = m.runs[:0], m.found[:0]
	var total, common [2]int32
	for i := 0; i < len(m.grams); {
		g := m.grams[i]
		j := i + 1
		for j < len(m.grams) && m.grams[j].hash == g.hash {
			j++
		}
		r := gramRun{lo: int32(i), hi: int32(j), chann: g.chann, common: !forward && m.bench != nil && m.bench.common(g.hash)}
		err := m.ix.lookup(g.hash, &m.buf, func(entry int32, tag uint32) {
			if tag&^tagCommon != uint32(g.chann) {
				return
			}
			r.common = r.common || tag&tagCommon != 0
			m.found = append(m.found, posting{entry: entry, run: int32(len(m.runs))})
		})
		if err != nil {
			return nil, err
		}
		total[g.chann]++
		if r.common {
			common[g.chann]++
		}
		m.runs = append(m.runs, r)
		i = j
	}
	// Reverse: the query is the benchmark text; its common grams leave its
	// denominator, unless all of a channel's are common.
	var qGrams [2]int32
	var suppress [2]bool
	for ch := range 2 {
		suppress[ch] = common[ch] < total[ch]
		qGrams[ch] = total[ch]
		if suppress[ch] {
			qGrams[ch] -= common[ch]
		}
	}
	for _, p := range m.found {
		r := &m.runs[p.run]
		ch := int(r.chann)
		if r.common && (forward && !m.ix.Entries[p.entry].allCommon(ch) || !forward && suppress[ch]) {
			continue
		}
		h := m.hits[p.entry]
		if h == nil {
			h = &hit{}
			m.hits[p.entry] = h
		}
		h.count[ch]++
		h.runs = append(h.runs, p.run)
		for k := r.lo; k < r.hi; k++ {
			m.addWindow(p.entry, m.grams[k])
		}
	}
	// MinHash channel: band-key postings give candidates, signatures the estimate.
	sims := map[int32]float64{}
	if p.sig != nil {
		m.keys = dedup.BandKeys(p.sig, m.ix.Meta.Bands.B, m.ix.Meta.Bands.R, m.keys)
		for band, k := range m.keys {
			err := m.ix.lookup(k, &m.buf, func(entry int32, tag uint32) {
				if tag == uint32(tagBand0+band) {
					sims[entry] = -1
				}
			})
			if err != nil {
				return nil, err
			}
		}
		for e := range sims {
			var err error
			if m.esig, err = m.ix.signature(e, m.esig); err != nil {
				return nil, err
			}
			sims[e] = dedup.Estimate(p.sig, m.esig)
		}
	}
	var out []Match
	emit := func(e int32, h *hit, sim float64) {
		ent := m.ix.Entries[e]
		var bench [2]int32
		mt := Match{Benchmark: m.ix.Meta.Name, MinhashSimilarity: sim}
		if forward {
			bench = [2]int32{ent.counted(ChanLexical), ent.counted(ChanStructural)}
			mt.CorpusID, mt.CorpusField, mt.BenchmarkID, mt.BenchmarkField, mt.SpansIn = queryID, queryField, ent.ID, ent.Field, SideCorpus
		} else {
			bench = qGrams
			mt.CorpusID, mt.CorpusField, mt.BenchmarkID, mt.BenchmarkField, mt.SpansIn = ent.ID, ent.Field, queryID, queryField, SideBenchmark
		}
		var count [2]int32
		if h != nil {
			count = h.count
		}
		if bench[ChanLexical] > 0 {
			mt.LexicalOverlap = float64(count[ChanLexical]) / float64(bench[ChanLexical])
		}
		if bench[ChanStructural] > 0 {
			mt.StructuralOverlap = float64(count[ChanStructural]) / float64(bench[ChanStructural])
		}
		mt.Method, mt.MatchedNgrams, mt.BenchmarkNgrams, mt.OverlapRatio = "lexical", count[0], bench[0], mt.LexicalOverlap
		if mt.StructuralOverlap > mt.OverlapRatio {
			mt.Method, mt.MatchedNgrams, mt.BenchmarkNgrams, mt.OverlapRatio = "structural", count[1], bench[1], mt.StructuralOverlap
		}
		mt.Score = mt.OverlapRatio
		// MinHash similarity counts once it reaches its own threshold: below
		// it, structurally similar programs of one benchmark family (same
		// boilerplate, different operator) would score as contamination.
		if sim >= cfg.MinHashThreshold && sim > mt.Score {
			mt.Score, mt.Method = sim, "minhash"
		}
		if mt.Score < cfg.ReportMin {
			return
		}
		mt.Contaminated = mt.Score >= cfg.Threshold
		if h != nil {
			mt.Spans, mt.Excerpt = m.spans(h, p.text)
			mt.SharedWith = m.sharedWith(e, h, queryID, forward)
		}
		out = append(out, mt)
	}
	for e, h := range m.hits {
		emit(e, h, max(sims[e], 0))
	}
	for e, sim := range sims {
		if m.hits[e] == nil {
			emit(e, nil, sim)
		}
	}
	slices.SortFunc(out, func(a, b Match) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if a.BenchmarkID != b.BenchmarkID {
			if a.BenchmarkID < b.BenchmarkID {
				return -1
			}
			return 1
		}
		if a.CorpusID < b.CorpusID {
			return -1
		}
		if a.CorpusID > b.CorpusID {
			return 1
		}
		return strings.Compare(a.BenchmarkField+"\x00"+a.CorpusField, b.BenchmarkField+"\x00"+b.CorpusField)
	})
	return out, nil
}

// Index sides.
const (
	SideBenchmark = "benchmark"
	SideCorpus    = "corpus"
)

func (m *Matcher) addWindow(e int32, g gram) {
	h := m.hits[e]
	if h == nil || len(h.windows) >= maxWindows {
		return
	}
	h.windows = append(h.windows, [2]int32{g.pos, g.pos + g.len})
}

// spans merges matched token windows into byte spans of the query text.
func (m *Matcher) spans(h *hit, text string) ([]Span, string) {
	if len(h.windows) == 0 {
		return nil, ""
	}
	w := slices.Clone(h.windows)
	slices.SortFunc(w, func(a, b [2]int32) int { return int(a[0] - b[0]) })
	var toks [][2]int32
	cur := w[0]
	for _, x := range w[1:] {
		if x[0] <= cur[1] {
			cur[1] = max(cur[1], x[1])
			continue
		}
		toks = append(toks, cur)
		cur = x
	}
	toks = append(toks, cur)
	out := make([]Span, 0, len(toks))
	best := 0
	for i, t := range toks {
		s := Span{Start: int64(m.q.ti.tok.SrcStart[t[0]]), End: int64(m.q.ti.tok.SrcEnd[t[1]-1])}
		out = append(out, s)
		if s.End-s.Start > out[best].End-out[best].Start {
			best = i
		}
	}
	ex := text[out[best].Start:out[best].End]
	if len(ex) > 300 {
		ex = ex[:300] + "…"
	}
	return out, strings.ToValidUTF8(ex, "")
}
