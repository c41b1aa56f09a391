package decontam

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/dedup"
)

// Source yields records (id + named text fields).
type Source interface {
	Scan(ctx context.Context, fn func(dedup.Record) error) error
}

// FileRecords reads JSONL/Parquet files with a field mapping. Fields lists
// candidate text fields; each record uses those it has.
type FileRecords struct {
	Paths   []string
	IDField string
	Fields  []string
}

// Scan implements Source.
func (f FileRecords) Scan(ctx context.Context, fn func(dedup.Record) error) error {
	for _, p := range f.Paths {
		if err := dedup.ScanRecords(ctx, p, f.IDField, f.Fields, fn); err != nil {
			return fmt.Errorf("decontam: %w", err)
		}
	}
	return nil
}

// RecordSlice is an in-memory Source.
type RecordSlice []dedup.Record

// Scan implements Source.
func (s RecordSlice) Scan(ctx context.Context, fn func(dedup.Record) error) error {
	for _, r := range s {
		if err := fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// BuildIndex writes an index of src to dir. A benchmark index has one entry
// per (item, field), so a match names the field (prompt or reference); a
// corpus index has one entry per item with its fields joined, as corpus
// items are checked whole.
func BuildIndex(ctx context.Context, cfg Config, dir, name, side string, src Source) (IndexMeta, error) {
	return BuildIndexWith(ctx, cfg, dir, name, side, src, IndexOptions{})
}

// BuildIndexWith is BuildIndex with options: a corpus index with its
// interface index (IndexOptions.Designs) for behavioural matching.
func BuildIndexWith(ctx context.Context, cfg Config, dir, name, side string, src Source, opt IndexOptions) (IndexMeta, error) {
	if side != SideBenchmark && side != SideCorpus {
		return IndexMeta{}, fmt.Errorf("%w: side %q (want benchmark|corpus)", ErrConfig, side)
	}
	if (opt.Designs != nil || opt.KernelPaths != nil) && side != SideCorpus {
		return IndexMeta{}, fmt.Errorf("%w: an interface index is built for a corpus index only (a benchmark's harnesses are read from its file)", ErrConfig)
	}
	b, err := NewBuilder(cfg, dir, name, side)
	if err != nil {
		return IndexMeta{}, err
	}
	if opt.Designs != nil {
		if b.designs, err = newDesignWriter(b.tmp, *opt.Designs, &b.meta); err != nil {
			os.RemoveAll(b.tmp)
			return IndexMeta{}, err
		}
	}
	err = src.Scan(ctx, func(r dedup.Record) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if side == SideCorpus {
			if b.designs != nil {
				if err := b.designs.add(ctx, r); err != nil {
					return err
				}
			}
			return b.Add(r.ID, fieldNames(r), r.Text())
		}
		for _, f := range r.Fields {
			if err := b.Add(r.ID, f.Name, f.Text); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && b.designs != nil {
		err = b.designs.close(ctx)
	} else if b.designs != nil {
		b.designs.f.Close()
	}
	if err == nil && opt.KernelPaths != nil {
		err = writeKernelIndex(ctx, b.tmp, opt.KernelPaths, &b.meta)
	}
	if err != nil {
		os.RemoveAll(b.tmp)
		return IndexMeta{}, err
	}
	if err := b.Finish(); err != nil {
		return IndexMeta{}, err
	}
	return b.meta, nil
}

// BuildTempIndex builds an index in a fresh temporary directory and opens
// it; the caller removes the directory with the returned cleanup.
func BuildTempIndex(ctx context.Context, cfg Config, tmpRoot, name, side string, src Source) (*Index, func(), error) {
	dir, err := os.MkdirTemp(tmpRoot, "crucible-decontam-*")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	if _, err := BuildIndex(ctx, cfg, dir, name, side, src); err != nil {
		cleanup()
		return nil, nil, err
	}
	ix, err := Open(dir)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return ix, func() { ix.Close(); cleanup() }, nil
}

func fieldNames(r dedup.Record) string {
	n := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		n[i] = f.Name
	}
	return strings.Join(n, "+")
}

// Summary is the readable outcome of a check.
type Summary struct {
	Benchmark           string  // benchmark name
	Direction           string  // corpus→benchmark-index | benchmark→corpus-index
	Queries             int64   // texts checked
	Matches             int64   // reported matches (score ≥ report_min)
	Contaminated        int64   // matches with score ≥ threshold
	CorpusItems         int     // distinct contaminated corpus items
	BenchmarkItems      int     // distinct contaminated benchmark items
	BenchmarkEntries    int     // benchmark items·fields in the index (forward) or checked (reverse)
	MaxScore            float64 // highest score seen
	Threshold           float64
	ReportMin           float64 // matches below it were not reported (the floor for Rescore)
	Top                 []Match // highest-scoring contaminated matches (≤ 10)
	corpusSet, benchSet map[string]bool
}

// String renders the summary for a terminal or CI log.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "decontam %s (%s): %d texts checked, %d matches reported, %d contaminated (score ≥ %.2f)\n",
		s.Benchmark, s.Direction, s.Queries, s.Matches, s.Contaminated, s.Threshold)
	fmt.Fprintf(&b, "  contaminated corpus items: %d; benchmark items hit: %d; max score %.3f\n", s.CorpusItems, s.BenchmarkItems, s.MaxScore)
	for _, m := range s.Top {
		shared := ""
		if len(m.SharedWith) > 0 {
			noun := "item"
			if len(m.SharedWith) > 1 {
				noun = "items"
			}
			shared = fmt.Sprintf(" span also in %d other benchmark %s (%s)", len(m.SharedWith), noun, strings.Join(m.SharedWith[:min(3, len(m.SharedWith))], ", "))
			if len(m.SharedWith) > 3 {
				shared = shared[:len(shared)-1] + ", …)"
			}
		}
		fmt.Fprintf(&b, "  %-30s ← %-30s %-10s score %.3f (lexical %.2f, structural %.2f, minhash %.2f)%s\n",
			m.BenchmarkID+"/"+m.BenchmarkField, m.CorpusID, m.Method, m.Score, m.LexicalOverlap, m.StructuralOverlap, m.MinhashSimilarity, shared)
	}
	return b.String()
}

type query struct {
	id, field, text string
	record          int64 // position of the query's record in src's scan order
}

// Check matches every record of src against ix and calls fn for each
// reported match in input order (deterministic for any worker count).
// Forward (benchmark index): each corpus record is one query, fields joined.
// Reverse (corpus index): each benchmark field is one query; the benchmark
// is read into memory first for its own gram postings (see benchGrams).
func Check(ctx context.Context, ix *Index, src Source, workers int, fn func(Match) error) (Summary, error) {
	return CheckRecords(ctx, ix, src, workers, func(_ int64, m Match) error { return fn(m) })
}

// CheckRecords is Check that also tells fn which record of src the match's
// query came from: its 0-based position in src's scan order (for a file
// source, the row's place among all rows of all files). Rows are told apart
// by place, not by id, so two corpus rows sharing an id are not confused.
func CheckRecords(ctx context.Context, ix *Index, src Source, workers int, fn func(record int64, m Match) error) (Summary, error) {
	sums, err := checkRecords(ctx, []*Index{ix}, src, workers, func(_ int, record int64, m Match) error { return fn(record, m) })
	return sums[0], err
}

// CheckRecordsAll checks src against several benchmark indexes in one pass:
// each corpus text is read, tokenised, hashed into n-grams and signed once
// (every index's window lengths at once) and matched against every index
// in turn; fn gets the index's position in ixs. Matches come record by
// record, each record's in ixs order — the same set, with the same
// summaries, as one CheckRecords per index, in another order. Indexes whose
// analysis settings differ (a persisted index keeps its own) or a corpus
// index (reverse direction) are checked one at a time, in ixs order.
func CheckRecordsAll(ctx context.Context, ixs []*Index, src Source, workers int, fn func(i int, record int64, m Match) error) ([]Summary, error) {
	if sharesAnalysis(ixs) {
		return checkRecords(ctx, ixs, src, workers, fn)
	}
	sums := make([]Summary, 0, len(ixs))
	for i, ix := range ixs {
		s, err := checkRecords(ctx, []*Index{ix}, src, workers, func(_ int, record int64, m Match) error { return fn(i, record, m) })
		sums = append(sums, s[0])
		if err != nil {
			return sums, err
		}
	}
	return sums, nil
}

// checkRecords matches every query of src against every index of ixs (one
// corpus index alone for the reverse direction, several benchmark indexes
// sharing their analysis settings), a batch of queries at a time spread
// over the workers, fn called in input order.
func checkRecords(ctx context.Context, ixs []*Index, src Source, workers int, fn func(i int, record int64, m Match) error) ([]Summary, error) {
	workers = max(workers, 1)
	forward := ixs[0].Meta.Side != SideCorpus
	sums := make([]Summary, len(ixs))
	for i, ix := range ixs {
		sums[i] = Summary{Benchmark: ix.Meta.Name, Threshold: ix.Meta.Config.Threshold, ReportMin: ix.Meta.Config.ReportMin,
			corpusSet: map[string]bool{}, benchSet: map[string]bool{}}
		if forward {
			sums[i].Direction = "corpus→benchmark-index"
			sums[i].BenchmarkEntries = len(ix.Entries)
		} else {
			sums[i].Direction = "benchmark→corpus-index"
		}
	}
	var bench *benchGrams
	if !forward {
		var err error
		if bench, src, err = collectBenchGrams(ctx, ixs[0], src); err != nil {
			return sums, err
		}
	}
	// One matcher per worker and index; with several indexes a worker's
	// query is prepared once for all of them, with every index's lengths.
	matchers := make([][]*Matcher, workers)
	prep := make([]prepared, workers)
	lens := unionLens(ixs)
	for w := range matchers {
		for _, ix := range ixs {
			m := ix.NewMatcher()
			m.bench = bench
			matchers[w] = append(matchers[w], m)
		}
	}
	const batchSize = 256
	batch := make([]query, 0, batchSize)
	results := make([][][]Match, batchSize)
	flush := func() error {
		g, gctx := errgroup.WithContext(ctx)
		chunk := (len(batch) + workers - 1) / workers
		for w := range workers {
			lo, hi := w*chunk, min((w+1)*chunk, len(batch))
			if lo >= hi {
				break
			}
			g.Go(func() error {
				for i := lo; i < hi; i++ {
					if gctx.Err() != nil {
						return gctx.Err()
					}
					results[i] = results[i][:0]
					if len(ixs) == 1 {
						ms, err := matchers[w][0].Match(batch[i].id, batch[i].field, batch[i].text)
						if err != nil {
							return err
						}
						results[i] = append(results[i], ms)
						continue
					}
					prep[w].prepare(batch[i].text, ixs[0].Meta.Config, lens)
					for _, m := range matchers[w] {
						ms, err := m.matchPrepared(&prep[w], batch[i].id, batch[i].field, true)
						if err != nil {
							return err
						}
						results[i] = append(results[i], ms)
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for i := range batch {
			for k, ms := range results[i] {
				for _, m := range ms {
					sums[k].add(m)
					if err := fn(k, batch[i].record, m); err != nil {
						return err
					}
				}
			}
		}
		batch = batch[:0]
		return nil
	}
	push := func(q query) error {
		for k := range sums {
			sums[k].Queries++
		}
		batch = append(batch, q)
		if len(batch) == batchSize {
			return flush()
		}
		return nil
	}
	var record int64
	err := src.Scan(ctx, func(r dedup.Record) error {
		defer func() { record++ }()
		if forward {
			return push(query{r.ID, fieldNames(r), r.Text(), record})
		}
		for _, f := range r.Fields {
			sums[0].BenchmarkEntries++
			if err := push(query{r.ID, f.Name, f.Text, record}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	for k := range sums {
		sums[k].CorpusItems, sums[k].BenchmarkItems = len(sums[k].corpusSet), len(sums[k].benchSet)
	}
	return sums, err
}

func (s *Summary) add(m Match) {
	s.Matches++
	s.MaxScore = max(s.MaxScore, m.Score)
	if !m.Contaminated {
		return
	}
	s.Contaminated++
	s.corpusSet[m.CorpusID] = true
	s.benchSet[m.BenchmarkID] = true
	s.Top = append(s.Top, m)
	slices.SortStableFunc(s.Top, func(a, b Match) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(s.Top) > 10 {
		s.Top = s.Top[:10]
	}
}
