package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/engine"
)

// defaultCorpusFields are the corpus text fields tried when --corpus-field
// is not given (those present in each row are used).
var defaultCorpusFields = []string{"instruction", "reference", "text", "content", "code", "prompt", "ref"}

// DecontamIndexOptions are `crucible decontam index`'s flags.
type DecontamIndexOptions struct {
	In      []string
	Side    string // benchmark | corpus
	Name    string
	IDField string
	Fields  []string
	Out     string
	Config  decontam.Config
	Stdout  io.Writer
}

// DecontamCheckOptions are `crucible decontam check`'s flags.
type DecontamCheckOptions struct {
	Corpus        []string // corpus files (forward direction)
	CorpusIndex   string   // persisted corpus index (reverse direction)
	CorpusIDField string
	CorpusFields  []string
	Benchmarks    []string // files or benchmark index directories
	IDField       string
	Fields        []string
	Out           string
	Workers       int
	Config        decontam.Config
	Writer        engine.WriterOptions
	Stdout        io.Writer
}

func newDecontamCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "decontam",
		Short: "Benchmark decontamination: index a benchmark or a corpus, check one against the other",
		Long: `Finds corpus items that overlap benchmark items by long token n-grams (13 by
default; a lexical channel and a structural one where identifiers become a
placeholder, so renamed signals still match) and by MinHash similarity.

Exit codes of 'check': 0 no contamination at or above --threshold,
6 contamination found (matches written and summarised), 2 bad flags,
3 unreadable input or a row missing the id/text fields, 4 output not writable.`,
	}
	c.AddCommand(newDecontamIndexCmd(), newDecontamCheckCmd(), newDecontamRescoreCmd())
	return c
}

func addDecontamConfigFlags(c *cobra.Command, cfg *decontam.Config) {
	f := c.Flags()
	f.IntVar(&cfg.NGram, "ngram", cfg.NGram, "n-gram length in tokens")
	f.IntVar(&cfg.MinTokens, "min-tokens", cfg.MinTokens, "texts shorter than --ngram but at least this long match as one whole-text gram")
	f.Float64Var(&cfg.Threshold, "threshold", cfg.Threshold, "score at or above which a match is contamination")
	f.Float64Var(&cfg.ReportMin, "report-min", cfg.ReportMin, "lowest score written to the matches")
	f.Float64Var(&cfg.MinHashThreshold, "minhash-threshold", cfg.MinHashThreshold, "Jaccard target of the MinHash banding")
	f.IntVar(&cfg.NumPerm, "num-perm", cfg.NumPerm, "MinHash signature slots")
	f.Float64Var(&cfg.MaxDocFreq, "max-doc-freq", cfg.MaxDocFreq, "n-grams in more than this share of the indexed items (and in at least 3) are boilerplate and do not count; kept in a persisted index; 1 disables")
	f.StringVar(&cfg.Lang, "lang", cfg.Lang, "comment syntax: auto|verilog|c|python|text")
}

func newDecontamIndexCmd() *cobra.Command {
	o := DecontamIndexOptions{Config: decontam.DefaultConfig()}
	c := &cobra.Command{
		Use:   "index --in PATH [--in PATH...] --side benchmark|corpus [--id-field id] [--field F ...] --out DIR",
		Short: "Build a persisted n-gram/MinHash index of a benchmark or of a training corpus",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runDecontamIndex(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.In, "in", nil, "JSONL or Parquet file (repeatable; required)")
	f.StringVar(&o.Side, "side", decontam.SideBenchmark, "what the files are: benchmark (entries per field) | corpus (entries per row)")
	f.StringVar(&o.Name, "name", "", "index name shown in reports (default: first file name)")
	f.StringVar(&o.IDField, "id-field", "", "id column (default: id for a benchmark, item_id|id for a corpus)")
	f.StringArrayVar(&o.Fields, "field", nil, "text column (repeatable; default: prompt, ref, code, ... for a benchmark; instruction, reference, text, ... for a corpus)")
	f.StringVar(&o.Out, "out", "", "index directory to create (required)")
	addDecontamConfigFlags(c, &o.Config)
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("out")
	return c
}

func runDecontamIndex(ctx context.Context, o DecontamIndexOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if len(o.In) == 0 || o.Out == "" {
		return fmt.Errorf("%w: --in and --out are required", errUsage)
	}
	if o.Side != decontam.SideBenchmark && o.Side != decontam.SideCorpus {
		return fmt.Errorf("%w: --side %q (want benchmark|corpus)", errUsage, o.Side)
	}
	if o.Name == "" {
		o.Name = strings.TrimSuffix(filepath.Base(o.In[0]), filepath.Ext(o.In[0]))
	}
	idf, fields := o.IDField, o.Fields
	if o.Side == decontam.SideBenchmark {
		idf = cmpOr(idf, "id")
		if len(fields) == 0 {
			fields = decontam.DefaultBenchmarkFields
		}
	} else {
		idf = cmpOr(idf, "item_id|id")
		if len(fields) == 0 {
			fields = defaultCorpusFields
		}
	}
	meta, err := decontam.BuildIndex(ctx, o.Config, o.Out, o.Name, o.Side, decontam.FileRecords{Paths: o.In, IDField: idf, Fields: fields})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "decontam index %s (%s): %d entries, %d postings, %d-grams, MinHash %s; %d n-grams common to more than %v of %d items not counted\n  written to %s\n",
		meta.Name, meta.Side, meta.Entries, meta.Records, meta.Config.NGram, meta.Bands, meta.Common, meta.Config.MaxDocFreq, meta.Items, o.Out)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func newDecontamCheckCmd() *cobra.Command {
	o := DecontamCheckOptions{Config: decontam.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Workers: runtime.GOMAXPROCS(0)}
	c := &cobra.Command{
		Use:   "check (--corpus PATH... | --corpus-index DIR) --benchmark PATH|DIR [--field F ...] --out DIR",
		Short: "Report corpus items overlapping benchmark items; exit code 6 when contamination ≥ --threshold is found",
		Long: `Writes DIR/matches-*.parquet (corpus id, benchmark id and field, method,
matched spans, overlap ratios, MinHash similarity, score, shared_with: the
other benchmark items holding every matched n-gram, so the match is not
specific to its benchmark id) and DIR/manifest.json, and prints a summary.
Matches from --report-min up are written, so 'decontam rescore' can apply
another threshold later.

N-grams in more than --max-doc-freq of the indexed items (boilerplate) do
not count; a persisted index keeps the share it was built with.

--benchmark takes a JSONL/Parquet file (indexed on the fly; --field and
--id-field map its columns) or an index directory from 'decontam index'.
With --corpus-index, a persisted corpus index is checked by the benchmark
files instead of re-reading the corpus.

Exit codes: 0 clean, 6 contamination found, 2 bad flags, 3 bad input, 4 output not writable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runDecontamCheck(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Corpus, "corpus", nil, "corpus JSONL or Parquet file (repeatable)")
	f.StringVar(&o.CorpusIndex, "corpus-index", "", "persisted corpus index directory (instead of --corpus)")
	f.StringVar(&o.CorpusIDField, "corpus-id-field", "item_id|id", "corpus id column (alternatives separated by |)")
	f.StringArrayVar(&o.CorpusFields, "corpus-field", nil, "corpus text column (repeatable; default: instruction, reference, text, content, code, prompt, ref)")
	f.StringArrayVar(&o.Benchmarks, "benchmark", nil, "benchmark file or index directory (repeatable; required)")
	f.StringVar(&o.IDField, "id-field", "id", "benchmark id column")
	f.StringArrayVar(&o.Fields, "field", nil, "benchmark text column (repeatable; default: prompt, ref, code, instruction, reference, text)")
	f.StringVar(&o.Out, "out", "", "output directory for matches (required)")
	f.IntVar(&o.Workers, "workers", o.Workers, "matching workers")
	addDecontamConfigFlags(c, &o.Config)
	_ = c.MarkFlagRequired("benchmark")
	_ = c.MarkFlagRequired("out")
	return c
}

// errContaminated is returned (with exit code 6) when a check finds
// contamination at or above the threshold.
var errContaminated = fmt.Errorf("contamination found")

func runDecontamCheck(ctx context.Context, o DecontamCheckOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if len(o.Benchmarks) == 0 || o.Out == "" {
		return fmt.Errorf("%w: --benchmark and --out are required", errUsage)
	}
	if (len(o.Corpus) == 0) == (o.CorpusIndex == "") {
		return fmt.Errorf("%w: give exactly one of --corpus and --corpus-index", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	fields := o.Fields
	if len(fields) == 0 {
		fields = decontam.DefaultBenchmarkFields
	}
	cfields := o.CorpusFields
	if len(cfields) == 0 {
		cfields = defaultCorpusFields
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	if err := clearOutputs(o.Out, "matches"); err != nil {
		return err
	}
	w, err := engine.NewShardWriter[decontam.Match](o.Out, "matches", "matches", o.Writer)
	if err != nil {
		return err
	}
	write := func(m decontam.Match) error { return w.Write(m) }
	var sums []decontam.Summary
	// One bar over every pass: each benchmark, and the corpus once per benchmark.
	total := engine.InputBytes(o.Benchmarks) + int64(len(o.Benchmarks))*engine.InputBytes(o.Corpus)
	ctx, done := readProgress(ctx, "decontam check", total)
	defer done()
	if o.CorpusIndex != "" {
		ix, err := decontam.Open(o.CorpusIndex)
		if err != nil {
			w.Abort()
			return err
		}
		defer ix.Close()
		if ix.Meta.Side != decontam.SideCorpus {
			w.Abort()
			return fmt.Errorf("%w: --corpus-index %s is a %s index", errUsage, o.CorpusIndex, ix.Meta.Side)
		}
		for _, b := range o.Benchmarks {
			s, err := decontam.Check(ctx, ix, decontam.FileRecords{Paths: []string{b}, IDField: o.IDField, Fields: fields}, o.Workers, write)
			if err != nil {
				w.Abort()
				return err
			}
			s.Benchmark = filepath.Base(b)
			sums = append(sums, s)
		}
	} else {
		corpus := decontam.FileRecords{Paths: o.Corpus, IDField: o.CorpusIDField, Fields: cfields}
		for _, b := range o.Benchmarks {
			ix, cleanup, err := decontam.OpenBenchmark(ctx, o.Config, decontam.BenchmarkSpec{Path: b, IDField: o.IDField, Fields: fields}, "")
			if err != nil {
				w.Abort()
				return err
			}
			s, err := decontam.Check(ctx, ix, corpus, o.Workers, write)
			cleanup()
			if err != nil {
				w.Abort()
				return err
			}
			sums = append(sums, s)
		}
	}
	infos, err := w.Close()
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "decontam", Type: "decontam_check", Inputs: []engine.InputRef{},
		Shards: infos, Counts: map[string]int64{}}
	var contaminated int64
	for _, s := range sums {
		fmt.Fprint(o.Stdout, s.String())
		m.Counts["matches."+s.Benchmark] = s.Matches
		m.Counts["contaminated."+s.Benchmark] = s.Contaminated
		contaminated += s.Contaminated
	}
	if err := decontam.WriteRunRecord(o.Out, decontam.NewRunRecord(sums)); err != nil { // for decontam rescore
		return err
	}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "matches: %s\n", o.Out)
	if contaminated > 0 {
		return withCode(exitFindings, fmt.Errorf("%w: %d matches with score ≥ %.2f", errContaminated, contaminated, o.Config.Threshold))
	}
	return nil
}
