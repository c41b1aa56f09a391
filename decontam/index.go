package decontam

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// Error categories, wrapping the engine's so the CLI maps exit codes.
var (
	ErrConfig = fmt.Errorf("decontam: %w", engine.ErrConfig)
	ErrInput  = fmt.Errorf("decontam: %w", engine.ErrInput)
	ErrIO     = fmt.Errorf("decontam: %w", engine.ErrIO)
)

// Config configures indexing and matching. Both sides of a check must use
// the same NGram, ShingleN, NumPerm and Seed; Open checks it.
type Config struct {
	NGram            int     `yaml:"ngram" json:"ngram"`                             // n-gram length in tokens (13)
	MinTokens        int     `yaml:"min_tokens" json:"min_tokens"`                   // shorter texts: whole text is one gram; below this, no n-gram matching
	StructMinFixed   float64 `yaml:"struct_min_fixed" json:"struct_min_fixed"`       // structural grams need this fraction of non-placeholder tokens
	Threshold        float64 `yaml:"threshold" json:"threshold"`                     // score at or above → contaminated
	ReportMin        float64 `yaml:"report_min" json:"report_min"`                   // matches below this score are not reported
	MinHashThreshold float64 `yaml:"minhash_threshold" json:"minhash_threshold"`     // banding target for the MinHash channel
	ShingleN         int     `yaml:"shingle_n" json:"shingle_n"`                     // structural shingle length for MinHash
	NumPerm          int     `yaml:"num_perm" json:"num_perm"`                       // MinHash slots
	Seed             uint64  `yaml:"seed" json:"seed"`                               // MinHash seed
	Lang             string  `yaml:"lang" json:"lang"`                               // auto | verilog | c | python | text
	MemoryBudget     int64   `yaml:"memory_budget_bytes" json:"memory_budget_bytes"` // sort buffer for index builds
	// MaxDocFreq suppresses boilerplate: an n-gram found in at least three
	// items and in more than this share of the indexed items (the benchmark's
	// items; a corpus index's items) does not count towards a match, in
	// neither the matched count nor the benchmark text's denominator. It is
	// applied when the index is built and persisted with it. A text whose
	// grams are all common keeps them all (a copy of a pure-boilerplate item
	// is still that item). The MinHash channel is not affected. 1 disables.
	MaxDocFreq float64 `yaml:"max_doc_freq" json:"max_doc_freq"`
}

// DefaultMaxDocFreq: an n-gram in more than 10% of the indexed items is
// boilerplate (VerilogEval spec-to-rtl, 156 items: in 16 or more; 90 of its
// n-gram keys). With it the VerilogEval self-check still flags all 156
// references as their own item at score 1, and references flagged against
// another item drop from 131 matches to 106. Lower shares suppress more
// (0.05: 94) but shrink small items' denominators so far that a few
// structural grams score high (a 2-to-1 mux written differently scores 0.57
// against Prob022_mux2to1 at 0.05, 0.36 at 0.1, 0.29 unsuppressed).
const DefaultMaxDocFreq = 0.1

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{NGram: 13, MinTokens: 8, StructMinFixed: 0.5, Threshold: 0.5, ReportMin: 0.2,
		MinHashThreshold: 0.7, ShingleN: 5, NumPerm: 128, Seed: 1, Lang: "auto", MemoryBudget: 128 << 20,
		MaxDocFreq: DefaultMaxDocFreq}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var bad []string
	if c.NGram < 2 || c.NGram > 64 {
		bad = append(bad, fmt.Sprintf("ngram=%d (want 2..64)", c.NGram))
	}
	if c.MinTokens < 1 || c.MinTokens > c.NGram {
		bad = append(bad, fmt.Sprintf("min_tokens=%d (want 1..ngram)", c.MinTokens))
	}
	if c.StructMinFixed < 0 || c.StructMinFixed > 1 {
		bad = append(bad, fmt.Sprintf("struct_min_fixed=%v (want 0..1)", c.StructMinFixed))
	}
	if !(c.Threshold > 0 && c.Threshold <= 1) {
		bad = append(bad, fmt.Sprintf("threshold=%v (want 0<t≤1)", c.Threshold))
	}
	if c.ReportMin < 0 || c.ReportMin > c.Threshold {
		bad = append(bad, fmt.Sprintf("report_min=%v (want 0..threshold)", c.ReportMin))
	}
	if !(c.MinHashThreshold > 0 && c.MinHashThreshold < 1) {
		bad = append(bad, fmt.Sprintf("minhash_threshold=%v (want 0<t<1)", c.MinHashThreshold))
	}
	if c.ShingleN < 1 || c.ShingleN > 32 {
		bad = append(bad, fmt.Sprintf("shingle_n=%d (want 1..32)", c.ShingleN))
	}
	if c.NumPerm < 8 || c.NumPerm > 1024 {
		bad = append(bad, fmt.Sprintf("num_perm=%d (want 8..1024)", c.NumPerm))
	}
	if _, ok := dedup.ParseLang(c.Lang); !ok {
		bad = append(bad, fmt.Sprintf("lang=%q (want auto|verilog|c|python|text)", c.Lang))
	}
	if !(c.MaxDocFreq > 0 && c.MaxDocFreq <= 1) {
		bad = append(bad, fmt.Sprintf("max_doc_freq=%v (want a share 0<f≤1; 1 disables document-frequency suppression)", c.MaxDocFreq))
	}
	if c.MemoryBudget < 1<<20 {
		bad = append(bad, fmt.Sprintf("memory_budget_bytes=%d (want ≥ 1 MiB)", c.MemoryBudget))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

func (c Config) lang() dedup.Lang { l, _ := dedup.ParseLang(c.Lang); return l }

// tagBand0 is the record tag of band 0 of the MinHash channel; n-gram
// records use their channel as tag.
const tagBand0 = 2

// minCommonDF: a gram held by fewer items is never common. Benchmarks hold
// duplicated pairs (two items with one text); with a lower floor their
// every gram would be common in a small benchmark.
const minCommonDF = 3

// isCommon decides document-frequency suppression: df items hold the gram,
// limit is MaxDocFreq times the number of items.
func isCommon(df int, limit float64) bool { return df >= minCommonDF && float64(df) > limit }

// tagCommon marks, in grams.bin, an n-gram record whose gram is too common
// in the index (Config.MaxDocFreq). Only written records carry it (the
// external sort's tags stay below 0xFFFF).
const tagCommon = 1 << 31

// Entry describes one indexed text: an item's field.
type Entry struct {
	ID     string   `json:"id"`
	Field  string   `json:"field"`
	Grams  [2]int32 `json:"grams"` // distinct grams per channel
	Tokens int32    `json:"tokens"`
	Common [2]int32 `json:"common"` // of Grams, those too common in the index (Config.MaxDocFreq)
}

// counted is the entry's number of grams on channel ch that count towards
// a match: the grams that are not common, or all of them when all are.
func (e Entry) counted(ch int) int32 {
	if e.allCommon(ch) {
		return e.Grams[ch]
	}
	return e.Grams[ch] - e.Common[ch]
}

func (e Entry) allCommon(ch int) bool { return e.Common[ch] >= e.Grams[ch] }

// IndexMeta is the persisted header of an index directory.
type IndexMeta struct {
	Version int         `json:"version"`
	Name    string      `json:"name"` // e.g. the benchmark file name
	Side    string      `json:"side"` // benchmark | corpus
	Config  Config      `json:"config"`
	Bands   dedup.Bands `json:"bands"`
	Entries int         `json:"entries"`
	Lens    []int       `json:"lens"` // gram window lengths present (NGram plus short whole-text lengths)
	Records int64       `json:"records"`
	Items   int         `json:"items"`  // distinct items (consecutive entries with one id are one item)
	Common  int64       `json:"common"` // n-gram keys suppressed as too common
	// Behavioural (version 3, corpus side): the index holds its interface
	// index (designs.jsonl, behavioural_index.go), so a benchmark checked
	// against it is matched behaviourally too. Designs counts the designs
	// in it, DesignErrors those whose interface could not be read,
	// DesignRows the corpus rows scanned for them.
	Behavioural  bool  `json:"behavioural,omitempty"`
	Designs      int64 `json:"designs,omitempty"`
	DesignErrors int64 `json:"design_errors,omitempty"`
	DesignRows   int64 `json:"design_rows,omitempty"`
	// KernelIndex (version 4, corpus side): the index holds its kernel
	// index (kernels.jsonl, behavioural_kernel_index.go), the corpus's CPU
	// kernel items with their arguments, so a benchmark's kernel problems
	// checked against it are matched behaviourally too. Kernels counts
	// them; KernelRows and KernelItems are the corpus rows read as items
	// and those that were items; KernelFirstRejection is the first row
	// that was not, KernelReadError why the files could not be read as
	// items at all (the index then holds no kernels): the check's notes.
	KernelIndex          bool   `json:"kernel_index,omitempty"`
	Kernels              int64  `json:"kernels,omitempty"`
	KernelRows           int64  `json:"kernel_rows,omitempty"`
	KernelItems          int64  `json:"kernel_items,omitempty"`
	KernelFirstRejection string `json:"kernel_first_rejection,omitempty"`
	KernelReadError      string `json:"kernel_read_error,omitempty"`
}

// indexVersion 2 added document-frequency suppression (tagCommon,
// Entry.Common); 3 the interface index of corpus indexes (Behavioural);
// 4 their kernel index (KernelIndex). A version 1 index is read without
// suppression, versions 1 and 2 as lexical-only (DesignIndex.Unavailable
// says so), version 3 without kernels (DesignIndex.KernelsUnavailable).
const indexVersion = 4

// Index file names inside an index directory.
const (
	metaFile    = "meta.json"
	entriesFile = "entries.jsonl"
	sigsFile    = "signatures.bin"
	gramsFile   = "grams.bin"
)

// Builder streams texts into a persisted index. Records go through an
// external sort, so a corpus index is built in bounded memory.
type Builder struct {
	cfg     Config
	meta    IndexMeta
	dir     string
	tmp     string
	runs    *dedup.SortedRuns
	entries *bufio.Writer
	entF    *os.File
	sigs    *bufio.Writer
	sigF    *os.File
	signer  dedup.Signer
	ti      tokenInfo
	grams   []gram
	shing   []uint64
	sig     []uint64
	keys    []uint64
	lens    map[int]bool
	// entryItem maps an entry to its item ordinal, for document frequency
	// counted in items (a benchmark item's prompt and ref are one item).
	entryItem []int32
	lastID    string
	designs   *designWriter // the interface index, when built (IndexOptions.Designs)
}

// RemoveIndex removes the index in dir, meta.json first (so a crash in
// between leaves a directory that is no index, never a torn one), then its
// data files. Other files are left alone; what dead builds left goes when
// the next build starts (NewBuilder).
func RemoveIndex(dir string) error {
	for _, name := range indexFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	return nil
}

// IndexFile reports whether name is one of an index directory's own files.
func IndexFile(name string) bool { return slices.Contains(indexFiles, name) }

// indexFiles are an index directory's own files, meta.json (what makes it
// an index) first.
var indexFiles = []string{metaFile, entriesFile, sigsFile, gramsFile, designsFile, kernelsFile}

// NewBuilder starts an index in dir (created; must not already hold an index).
func NewBuilder(cfg Config, dir, name, side string) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bands, err := dedup.ChooseBands(cfg.NumPerm, cfg.MinHashThreshold, dedup.DefaultFPWeight, dedup.DefaultFNWeight)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
		return nil, fmt.Errorf("%w: %s already holds an index", ErrConfig, dir)
	}
	// A .build-* directory is what a killed build left: nothing of it was
	// published (every file is renamed into dir only once complete).
	stale, _ := filepath.Glob(filepath.Join(dir, ".build-*"))
	for _, d := range stale {
		os.RemoveAll(d)
	}
	tmp, err := os.MkdirTemp(dir, ".build-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	b := &Builder{cfg: cfg, dir: dir, tmp: tmp, runs: dedup.NewSortedRuns(tmp, cfg.MemoryBudget),
		signer: dedup.Signer{K: cfg.NumPerm, Seed: cfg.Seed}, lens: map[int]bool{cfg.NGram: true},
		meta: IndexMeta{Version: indexVersion, Name: name, Side: side, Config: cfg, Bands: bands}}
	// Entries go to the temporary directory first: Finish rewrites them
	// with their common-gram counts, known only once every item is in.
	if b.entF, err = os.Create(filepath.Join(tmp, entriesFile)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	if b.sigF, err = os.Create(filepath.Join(tmp, sigsFile)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	b.entries = bufio.NewWriterSize(b.entF, 1<<20)
	b.sigs = bufio.NewWriterSize(b.sigF, 1<<20)
	return b, nil
}

// textGrams computes the distinct grams of an analysed text: NGram windows,
// or the whole text as one gram when it has MinTokens..NGram-1 tokens.
func textGrams(ti *tokenInfo, cfg Config, lens []int, dst []gram) []gram {
	n := len(ti.lex)
	for _, L := range lens {
		dst = ti.appendGrams(dst, L, cfg.StructMinFixed)
	}
	if n >= cfg.MinTokens && n < cfg.NGram && !slices.Contains(lens, n) {
		dst = ti.appendGrams(dst, n, cfg.StructMinFixed)
	}
	return dst
}

// Add indexes one field of one item.
func (b *Builder) Add(id, field, text string) error {
	entry := int32(b.meta.Entries)
	if b.meta.Entries >= 1<<31-1 {
		return fmt.Errorf("%w: too many index entries", ErrInput)
	}
	if b.meta.Entries == 0 || id != b.lastID {
		b.meta.Items++
		b.lastID = id
	}
	b.entryItem = append(b.entryItem, int32(b.meta.Items-1))
	b.ti.analyse(text, b.cfg.lang())
	n := len(b.ti.lex)
	if n >= b.cfg.MinTokens && n < b.cfg.NGram {
		b.lens[n] = true
	}
	b.grams = textGrams(&b.ti, b.cfg, []int{b.cfg.NGram}, b.grams[:0])
	slices.SortFunc(b.grams, func(x, y gram) int { return cmpU64(x.hash, y.hash) })
	e := Entry{ID: id, Field: field, Tokens: int32(n)}
	for i, g := range b.grams {
		if i > 0 && g.hash == b.grams[i-1].hash {
			continue
		}
		e.Grams[g.chann]++
		if err := b.runs.Add(g.hash, uint32(g.chann), entry); err != nil {
			return err
		}
	}
	b.shing = b.ti.structuralShingles(b.shing[:0], b.cfg.ShingleN)
	b.sig = b.signer.Sign(b.shing, b.sig)
	var buf [8]byte
	for i := range b.cfg.NumPerm {
		var v uint64
		if b.sig != nil {
			v = b.sig[i]
		}
		binary.LittleEndian.PutUint64(buf[:], v)
		b.sigs.Write(buf[:])
	}
	if b.sig != nil {
		b.keys = dedup.BandKeys(b.sig, b.meta.Bands.B, b.meta.Bands.R, b.keys)
		for band, k := range b.keys {
			if err := b.runs.Add(k, uint32(tagBand0+band), entry); err != nil {
				return err
			}
		}
	}
	line, _ := json.Marshal(e)
	b.entries.Write(append(line, '\n'))
	b.meta.Entries++
	return nil
}

// Finish merges the sorted runs into grams.bin and publishes the index:
// every file is built in the builder's temporary directory, fsynced and
// renamed into the index directory, and meta.json is written last
// (atomically), so a directory with meta.json is a complete index and a
// killed build leaves none of its files behind as if they were one.
func (b *Builder) Finish() error {
	defer os.RemoveAll(b.tmp)
	defer b.runs.Cleanup()
	if err := errors.Join(b.entries.Flush(), b.entF.Close(), b.sigs.Flush(), b.sigF.Close()); err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	f, err := os.Create(filepath.Join(b.tmp, gramsFile))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var rec [16]byte
	common := make([][2]int32, b.meta.Entries)
	limit := b.cfg.MaxDocFreq * float64(b.meta.Items)
	err = b.runs.Merge(func(key uint64, tag uint32, docs []int32) error {
		wtag := tag
		if tag < tagBand0 && b.cfg.MaxDocFreq < 1 {
			// docs ascend and item ordinals ascend with entries, so items
			// change only between neighbours.
			df := 0
			for i, d := range docs {
				if i == 0 || b.entryItem[d] != b.entryItem[docs[i-1]] {
					df++
				}
			}
			if isCommon(df, limit) {
				wtag |= tagCommon
				b.meta.Common++
			}
		}
		for i, d := range docs {
			if i > 0 && d == docs[i-1] {
				continue
			}
			if wtag&tagCommon != 0 {
				common[d][tag]++
			}
			binary.LittleEndian.PutUint64(rec[:8], key)
			binary.LittleEndian.PutUint32(rec[8:12], uint32(d))
			binary.LittleEndian.PutUint32(rec[12:], wtag)
			if _, err := w.Write(rec[:]); err != nil {
				return fmt.Errorf("%w: %v", ErrIO, err)
			}
			b.meta.Records++
		}
		return nil
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: %v", ErrIO, cerr)
	}
	if err != nil {
		return err
	}
	if err := b.rewriteEntries(common); err != nil {
		return err
	}
	for l := range b.lens {
		b.meta.Lens = append(b.meta.Lens, l)
	}
	slices.Sort(b.meta.Lens)
	published := []string{sigsFile, gramsFile, entriesFile}
	if b.meta.Behavioural {
		published = append(published, designsFile)
	}
	if b.meta.KernelIndex {
		published = append(published, kernelsFile)
	}
	for _, name := range published {
		if err := engine.PublishFile(filepath.Join(b.tmp, finalName(name)), filepath.Join(b.dir, name)); err != nil {
			return err
		}
	}
	meta, _ := json.MarshalIndent(b.meta, "", "  ")
	return engine.WriteFileAtomic(filepath.Join(b.dir, metaFile), meta)
}

// finalName is a file's name in the build directory: entries.jsonl is
// there twice, first without its common-gram counts.
func finalName(name string) string {
	if name == entriesFile {
		return "final-" + name
	}
	return name
}

// rewriteEntries copies the entries from the temporary directory into the
// index with their common-gram counts.
func (b *Builder) rewriteEntries(common [][2]int32) error {
	src := filepath.Join(b.tmp, entriesFile)
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	defer in.Close()
	f, err := os.Create(filepath.Join(b.tmp, finalName(entriesFile)))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	i := 0
	for ; sc.Scan(); i++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || i >= len(common) {
			f.Close()
			return fmt.Errorf("%w: %s:%d: %v", ErrIO, src, i+1, err)
		}
		e.Common = common[i]
		line, _ := json.Marshal(e)
		w.Write(append(line, '\n'))
	}
	err = errors.Join(sc.Err(), w.Flush(), f.Close())
	if err == nil && i != len(common) {
		err = fmt.Errorf("%d entries written, %d indexed", i, len(common))
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIO, src, err)
	}
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
