package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// The columns `decontam check --purify` adds to removed-*.parquet, after
// the input's.
const (
	decontamPrefix   = "_decontam_"
	colDecBenchmark  = decontamPrefix + "benchmark" // distinct benchmark ids matched, comma-separated
	colDecMethod     = decontamPrefix + "method"    // method of the highest-scoring match
	colDecScore      = decontamPrefix + "score"     // highest score
	purifyKept       = "kept"
	purifyRemoved    = "removed"
	purifyManifest   = "manifest.json"
	purifyManifestTy = "decontam_purify"
)

// contamHit is what the matching pass learnt about one contaminated corpus
// row (score ≥ threshold against some benchmark item).
type contamHit struct {
	id         string   // the row's id as the matcher saw it
	benchmarks []string // distinct benchmark ids, in the order first matched
	method     string   // of the highest score
	score      float64
}

// contamRows collects contaminated rows by their place in the corpus (all
// files, in order), so rows sharing an id stay apart. Memory: one entry per
// contaminated row.
type contamRows map[int64]*contamHit

func (c contamRows) add(r contamRow) {
	h := c[r.Row]
	if h == nil {
		h = &contamHit{id: r.CorpusID, method: r.Method, score: r.Score}
		c[r.Row] = h
	} else if r.Score > h.score {
		h.method, h.score = r.Method, r.Score
	}
	if !slices.Contains(h.benchmarks, r.BenchmarkID) {
		h.benchmarks = append(h.benchmarks, r.BenchmarkID)
	}
}

// decontamPurifyConfig is what the flags set that decides the purified
// corpus beyond its inputs (the corpus files, the check's committed
// output): its fingerprint.
type decontamPurifyConfig struct {
	Corpus        []string `yaml:"corpus"`
	CorpusIDField string   `yaml:"corpus_id_field"`
	Compression   string   `yaml:"compression"`
	Level         int      `yaml:"compression_level"`
}

// runPurify writes --purify PDIR as a one-stage run of its own: it reads
// the check's committed output in --out (the contaminated rows by place;
// its manifest is the fingerprint of the matching) and the corpus files,
// so a rerun with the check and the corpus unchanged skips, and a changed
// check (another threshold, benchmark or corpus) writes it again. pin is
// the corpus the check opened when it ran (nil: opened here).
func runPurify(ctx context.Context, o DecontamCheckOptions, pin *dedup.Input) error {
	cfg := decontamPurifyConfig{Corpus: o.Corpus, CorpusIDField: o.CorpusIDField, Compression: o.Writer.Compression, Level: o.Writer.CompressionLevel}
	var kept, removed int64
	run := func(ctx context.Context, sc *engine.StageContext) error {
		in := pin
		if in == nil {
			var err error
			if in, err = openPurifyInput(ctx, o); err != nil {
				return err
			}
		}
		rows, err := engine.ReadInputs[contamRow](sc, kindContamRows)
		if err != nil {
			return err
		}
		hits := contamRows{}
		for _, r := range rows {
			hits.add(r)
		}
		// The second read of the corpus is not metered: the bar drew the
		// matching pass.
		if kept, removed, err = writePurified(engine.WithReadMeter(ctx, nil), sc, in, hits, o); err != nil {
			return err
		}
		sc.Count("rows", kept+removed)
		sc.Count("kept", kept)
		sc.Count("removed", removed)
		return nil
	}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Name: "decontam_purify", Type: purifyManifestTy, Config: &cfg,
		Inputs: o.Corpus, From: []string{o.Out}, Out: o.Purify, Force: o.Force, Writer: o.Writer, Run: run,
		Outputs: []string{purifyKept, purifyRemoved}})
	if err != nil || res.Status == "skipped" {
		return err
	}
	fmt.Fprintf(o.Stdout, "purified corpus: %s (kept %d rows, removed %d contaminated)\n", o.Purify, kept, removed)
	return nil
}

// openPurifyInput reads the corpus schema (before matching, so a bad input
// fails early) and refuses input columns named with the _decontam_ prefix.
func openPurifyInput(ctx context.Context, o DecontamCheckOptions) (*dedup.Input, error) {
	in, err := dedup.OpenInput(ctx, o.Corpus, o.CorpusIDField)
	if err != nil {
		return nil, err
	}
	for _, f := range in.Schema.Fields() {
		if strings.HasPrefix(f.Name, decontamPrefix) {
			return nil, fmt.Errorf("%w: corpus column %q of %s: the %s prefix is reserved for the columns --purify adds; rename it",
				errUsage, f.Name, in.Paths[0], decontamPrefix)
		}
	}
	return in, nil
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// writePurified streams the corpus again and writes the stage's
// kept-*.parquet (the rows not in hits, unchanged) and removed-*.parquet
// (the rows in hits, unchanged, then the _decontam_ columns); the runner
// commits them and writes PDIR/manifest.json last.
func writePurified(ctx context.Context, sc *engine.StageContext, in *dedup.Input, hits contamRows, o DecontamCheckOptions) (kept, removed int64, err error) {
	mem := o.Writer.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	extra := []arrow.Field{
		{Name: colDecBenchmark, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: colDecMethod, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: colDecScore, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	remSchema := arrow.NewSchema(append(slices.Clone(in.Schema.Fields()), extra...), nil)
	kw, err := engine.StageRecordWriter(sc, purifyKept, in.Schema)
	if err != nil {
		return 0, 0, err
	}
	rw, err := engine.StageRecordWriter(sc, purifyRemoved, remSchema)
	if err != nil {
		return 0, 0, err
	}
	eb := array.NewRecordBuilder(mem, arrow.NewSchema(extra, nil))
	defer eb.Release()
	var row int64 // place among all corpus rows
	seen := 0     // hits met
	lastPath, fileRow := "", int64(0)
	err = in.ScanBatches(ctx, func(path string, rec arrow.RecordBatch, ids []string) error {
		if path != lastPath {
			lastPath, fileRow = path, 0
		}
		var keepRows, remRows []int
		for r, id := range ids {
			fileRow++
			h := hits[row]
			row++
			if h == nil {
				keepRows = append(keepRows, r)
				continue
			}
			if h.id != id {
				return fmt.Errorf("%w: %s: row %d has id %q, the matching pass read %q there (input changed between passes)",
					engine.ErrInput, path, fileRow, id, h.id)
			}
			seen++
			remRows = append(remRows, r)
			eb.Field(0).(*array.StringBuilder).Append(strings.Join(h.benchmarks, ","))
			eb.Field(1).(*array.StringBuilder).Append(h.method)
			eb.Field(2).(*array.Float64Builder).Append(h.score)
		}
		if err := writeRowsOf(mem, kw, in.Schema, rec, keepRows, nil); err != nil {
			return err
		}
		ex := eb.NewRecordBatch()
		defer ex.Release()
		return writeRowsOf(mem, rw, remSchema, rec, remRows, ex)
	})
	if err == nil && seen != len(hits) {
		err = fmt.Errorf("%w: corpus has %d rows on the second read; the matching pass flagged rows up to %d (input changed between passes)",
			engine.ErrInput, row, maxKey(hits)+1)
	}
	if err != nil {
		return 0, 0, err
	}
	removed = int64(len(hits))
	return row - removed, removed, nil
}

func maxKey(h contamRows) int64 {
	var m int64 = -1
	for k := range h {
		m = max(m, k)
	}
	return m
}

// writeRowsOf writes rows of rec (every column) followed by extra's columns
// (nil: none) as one batch of schema.
func writeRowsOf(mem memory.Allocator, w *engine.ShardWriter[arrow.RecordBatch], schema *arrow.Schema, rec arrow.RecordBatch, rows []int, extra arrow.RecordBatch) error {
	if len(rows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range int(rec.NumCols()) {
		c, err := takeRows(mem, rec.Column(i), rows)
		if err != nil {
			return fmt.Errorf("%w: select rows of column %q: %v", engine.ErrIO, rec.ColumnName(i), err)
		}
		cols = append(cols, c)
	}
	if extra != nil {
		for _, c := range extra.Columns() {
			c.Retain()
			cols = append(cols, c)
		}
	}
	out := array.NewRecordBatch(schema, cols, int64(len(rows)))
	defer out.Release()
	return w.WriteRecord(out)
}
