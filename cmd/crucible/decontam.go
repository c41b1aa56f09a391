package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
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
	// Methods is --method for a corpus index: auto (default: the
	// interface index too where Yosys is here), lexical, behavioural.
	Methods []string
	Workers int
	Force   bool // build even when the manifest in Out is current
	Stdout  io.Writer
	Stderr  io.Writer
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
	Purify        string // --purify DIR: the corpus without its contaminated rows (forward only)
	// Methods is --method: lexical, behavioural, all, auto (repeatable or
	// comma lists). Empty is lexical only; the command's default is auto.
	Methods []string
	Stderr  io.Writer // notes on methods not run (default os.Stderr)
	Workers int
	Config  decontam.Config
	Writer  engine.WriterOptions
	Stdout  io.Writer
	// Force runs the check (and --purify) even when the manifests in
	// --out (and PDIR) are current with the inputs and flags.
	Force bool
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

// decontamConfigFlags are the flags of decontam.Config (the matching
// config of 'decontam index' and 'decontam check', the match block of a
// check's fingerprint) with the names and help texts they had before they
// were derived from it. struct_min_fixed, shingle_n, seed and
// memory_budget_bytes never had a flag: only --set reaches them.
var decontamConfigFlags = map[string]flagDoc{
	"ngram":               {Help: "n-gram length in tokens"},
	"min_tokens":          {Help: "texts shorter than --ngram but at least this long match as one whole-text gram"},
	"threshold":           {Help: "score at or above which a match is contamination"},
	"report_min":          {Help: "lowest score written to the matches"},
	"minhash_threshold":   {Help: "Jaccard target of the MinHash banding"},
	"num_perm":            {Help: "MinHash signature slots"},
	"max_doc_freq":        {Help: "n-grams in more than this share of the indexed items (and in at least 3) are boilerplate and do not count; kept in a persisted index; 1 disables"},
	"lang":                {Help: "comment syntax: auto|verilog|c|python|text"},
	"struct_min_fixed":    {Skip: true},
	"shingle_n":           {Skip: true},
	"seed":                {Skip: true},
	"memory_budget_bytes": {Skip: true},
}

// bindDecontamConfig registers cfg's flags, derived from decontam.Config,
// and --set (any key of it, e.g. --set shingle_n=4); apply layers them
// onto cfg.
func bindDecontamConfig(c *cobra.Command, cfg *decontam.Config) *stageFlags {
	return bindStageFlags(c.Flags(), cfg, decontamConfigFlags)
}

func newDecontamIndexCmd() *cobra.Command {
	o := DecontamIndexOptions{Config: decontam.DefaultConfig(), Workers: runtime.GOMAXPROCS(0)}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "index --in PATH [--in PATH...] --side benchmark|corpus [--id-field id] [--field F ...] --out DIR",
		Short: "Build a persisted n-gram/MinHash index of a benchmark or of a training corpus",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runDecontamIndex(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.In, "in", nil, "JSONL or Parquet file, quoted glob, or directory (every .jsonl, .jsonl.gz, .jsonl.zst, .parquet below it); repeatable; required")
	f.StringVar(&o.Side, "side", decontam.SideBenchmark, "what the files are: benchmark (entries per field) | corpus (entries per row)")
	f.StringVar(&o.Name, "name", "", "index name shown in reports (default: first file name)")
	f.StringVar(&o.IDField, "id-field", "", "id column (default: id for a benchmark, item_id|id for a corpus)")
	f.StringArrayVar(&o.Fields, "field", nil, "text column (repeatable; default: prompt, ref, code, ... for a benchmark; instruction, reference, text, ... for a corpus)")
	f.StringVar(&o.Out, "out", "", "index directory to create (required)")
	f.BoolVar(&o.Force, "force", false, "build even when the index in --out is current with its inputs and flags")
	f.StringSliceVar(&o.Methods, "method", []string{methodAuto}, "corpus index: auto | lexical | behavioural: behavioural (and auto where Yosys is on PATH) also stores every corpus design with its Yosys-read interface (designs.jsonl), and behavioural and auto every CPU kernel item stating its arguments (kernels.jsonl), so a benchmark checked against the index is matched behaviourally too")
	f.IntVar(&o.Workers, "workers", o.Workers, "concurrent interface extractions (behavioural)")
	sf = bindDecontamConfig(c, &o.Config)
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
	in, err := engine.ExpandDataPaths(o.In)
	if err != nil {
		return fmt.Errorf("--in: %w", err)
	}
	o.In = in
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
	opt, err := indexDesignsOption(ctx, o)
	if err != nil {
		return err
	}
	// The index's files are its own: an input among them would be removed
	// by the rebuild.
	if out, err := filepath.Abs(o.Out); err == nil {
		for _, p := range o.In {
			if a, err := filepath.Abs(p); err == nil && filepath.Dir(a) == out && decontam.IndexFile(filepath.Base(a)) {
				return fmt.Errorf("%w: --in %s is a file of the index in --out %s, which a build replaces; write to another directory", errUsage, p, o.Out)
			}
		}
	}
	// What the index is built from decides it, so it is the fingerprint;
	// Workers (how many goroutines read interfaces) is not.
	cfg := struct {
		Side       string          `yaml:"side"`
		Name       string          `yaml:"name"`
		IDField    string          `yaml:"id_field"`
		Fields     []string        `yaml:"fields"`
		Match      decontam.Config `yaml:"match"`
		Interfaces bool            `yaml:"interfaces"`
		Kernels    bool            `yaml:"kernels"`
	}{o.Side, o.Name, idf, fields, o.Config, opt.Designs != nil, opt.KernelPaths != nil}
	var extra any
	if opt.Designs != nil {
		p, _ := exec.LookPath("yosys")
		extra = map[string]string{"yosys": p}
	}
	var meta decontam.IndexMeta
	stage := func(ctx context.Context, sc *engine.StageContext) error {
		// A rebuild replaces the index the directory held (meta.json
		// first, so a crash leaves no index rather than a torn one).
		if err := decontam.RemoveIndex(o.Out); err != nil {
			return err
		}
		var err error
		meta, err = decontam.BuildIndexWith(ctx, o.Config, o.Out, o.Name, o.Side, decontam.FileRecords{Paths: o.In, IDField: idf, Fields: fields}, opt)
		if err != nil {
			return err
		}
		for k, v := range map[string]int64{"items": int64(meta.Items), "entries": int64(meta.Entries), "postings": meta.Records,
			"common": meta.Common, "designs": meta.Designs, "kernels": meta.Kernels} {
			sc.Count(k, v)
		}
		return nil
	}
	// The index files are not Parquet shards: the stage declares no output
	// kinds (the runner clears only its manifest) and replaces them itself.
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Name: "decontam_index", Type: "decontam_index", Config: &cfg,
		Inputs: o.In, Out: o.Out, Force: o.Force, Run: stage, Outputs: []string{}, Extra: extra})
	if err != nil || res.Status == "skipped" {
		return err
	}
	fmt.Fprintf(o.Stdout, "decontam index %s (%s): %d entries, %d postings, %d-grams, MinHash %s; %d n-grams common to more than %v of %d items not counted\n",
		meta.Name, meta.Side, meta.Entries, meta.Records, meta.Config.NGram, meta.Bands, meta.Common, meta.Config.MaxDocFreq, meta.Items)
	if meta.Behavioural {
		fmt.Fprintf(o.Stdout, "  interface index: %d designs in %d rows (%d without a readable interface, not matched behaviourally)\n", meta.Designs, meta.DesignRows, meta.DesignErrors)
	}
	if meta.KernelIndex {
		fmt.Fprintf(o.Stdout, "  kernel index: %d CPU kernel items stating their arguments in %d rows\n", meta.Kernels, meta.KernelRows)
	}
	fmt.Fprintf(o.Stdout, "  written to %s\n", o.Out)
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
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "check (--corpus PATH... | --corpus-index DIR) --benchmark PATH|DIR [--field F ...] --out DIR [--purify PDIR]",
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

--purify PDIR (with --corpus; not with --corpus-index, exit 2; PDIR must
not be --out, exit 2) also writes the corpus without its contaminated rows,
a row being contaminated when any match against any --benchmark scores at
or above --threshold:
  PDIR/kept-*.parquet     the other rows, in input order
  PDIR/removed-*.parquet  the contaminated rows, in input order
  PDIR/manifest.json      shards and counts (rows, kept, removed), written last
Both hold the corpus rows unchanged: every input column, same names, same
Arrow types, same order (a Parquet input's own schema; JSONL gets a schema
inferred from all rows, as 'crucible dedup' does). removed-*.parquet then has
  _decontam_benchmark  string: the distinct benchmark ids the row matched at
                       or above the threshold, comma-separated, in the order
                       first matched (benchmarks in --benchmark order)
  _decontam_method     string: lexical | structural | minhash | behavioural, of the
                       highest-scoring of those matches
  _decontam_score      float64: that highest score
Rows are told apart by their place in the corpus, not by id, so a clean row
sharing an id with a contaminated one is kept. A corpus column named
_decontam_... is exit 2. The exit code is still 6 when contamination is
found (the purified corpus is written first), 0 when clean (every row kept).
--purify reads the corpus once more, after matching, to write the rows
(JSONL twice: also a schema pass before matching), and all corpus files need the same columns (exit 3
naming two that differ).

--method lexical|behavioural|all|auto (repeatable or comma list; default
auto). behavioural: every RTL design in the corpus rows (a reference, or
fenced code blocks in any text field) whose Yosys-read interface has the
shape of a benchmark problem's (ports' direction, width, signedness; clock)
is run, through a wrapper mapping its ports onto the problem's (clock and
reset, then normalised names, then at most 24 permutations of equal-shape
ports), as a candidate against the problem's own harness with the RTL
verifier (Icarus); a pass is a match with method behavioural, score 1, its
port_mapping and evidence (the verdict row, JSON). The benchmark file must
carry executable problems (VerilogEval rows with ref and test, or items with
a verifier harness); an index directory holds none. The summary gives
designs, pairs pruned by shape, simulations, unjudged simulations (never
contamination) and wall time; the manifest has them as behavioural.* counts.
auto is lexical plus behavioural where it can run; where Icarus or Yosys is
missing it says so on stderr and runs lexical only. With --corpus-index
(the reverse direction: a new benchmark against a corpus indexed before),
behavioural matching reads the designs and their interfaces from the
index's interface index (designs.jsonl, written by 'decontam index --side
corpus' where Yosys is on PATH); an index without one (version 2 or older,
or built with --method lexical) is matched lexically only, with a note on
stderr. --method behavioural where it cannot run (no tools, a corpus index
without an interface index, no executable benchmark) is exit 2.

Kernel problems (a --benchmark of items that are CPU kernel tasks: domain
kernel, verifier harness cpu and top, interface.args, a reference) are
matched against the --corpus rows that are such items too (read with the
item reader 'crucible ingest' uses): a corpus kernel whose argument
signature (each argument's role, dtype and shape; names and order free)
is a problem's runs, through a C wrapper with the problem's entry point and
each argument mapping, against the problem's reference with the kernel
verifier (CPU backend, gcc) on fresh inputs; a pass is a match as above,
port_mapping naming the corpus argument each problem argument got. Its
summary and counts carry the benchmark's name with " (kernel)". With
--corpus-index the corpus kernels are those the index kept, at their rows
(kernels.jsonl, written by 'decontam index --side corpus' unless --method
lexical; index version 4): the same matches as against the files. Corpus
rows that are not items (plain text), items without such kernels, or an
index of version 3 (which keeps no kernel arguments) get a note on stderr;
with --method behavioural that is exit 2 when no RTL pass ran either, and
a missing gcc is exit 2.

--corpus (and 'decontam index --in') take files, quoted globs and
directories as 'crucible dedup --in' does.

--compression zstd|snappy|none and --compression-level N (zstd) set the
codec of every Parquet file written (matches and --purify); the default,
zstd level 1, is the one 'crucible dedup --help' measures.

The check runs as a one-stage pipeline with its output in --out (and the
purify as a second one in PDIR, reading the check's committed output): a
rerun on the same corpus, benchmark and index files with the same flags
finds the manifests current and skips (exit code still 6 when the skipped
check had found contamination); --force runs them anyway. Besides the
matches, --out holds contaminated_rows-*.parquet (row: the contaminated
corpus row's place among all --corpus rows, corpus_id, benchmark_id,
method, score; one row per contaminated match: with --corpus, and for
behavioural matches against a --corpus-index, whose row is the one the
index kept), which --purify reads.

--set key=value (repeatable, after the flags) sets any key of the matching
config, the check manifest's match block: the flags' keys (ngram, min_tokens,
threshold, report_min, minhash_threshold, num_perm, max_doc_freq, lang) and
struct_min_fixed, shingle_n, seed, memory_budget_bytes; --set threshold=0.7
is --threshold 0.7. 'decontam index' takes the same --set keys.

Exit codes: 0 clean, 6 contamination found, 2 bad flags, 3 bad input, 4 output not writable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runDecontamCheck(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Corpus, "corpus", nil, "corpus JSONL or Parquet file, quoted glob, or directory (every .jsonl, .jsonl.gz, .jsonl.zst, .parquet below it); repeatable")
	f.StringVar(&o.CorpusIndex, "corpus-index", "", "persisted corpus index directory (instead of --corpus)")
	f.StringVar(&o.CorpusIDField, "corpus-id-field", "item_id|id", "corpus id column (alternatives separated by |)")
	f.StringArrayVar(&o.CorpusFields, "corpus-field", nil, "corpus text column (repeatable; default: instruction, reference, text, content, code, prompt, ref)")
	f.StringArrayVar(&o.Benchmarks, "benchmark", nil, "benchmark file or index directory (repeatable; required)")
	f.StringVar(&o.IDField, "id-field", "id", "benchmark id column")
	f.StringArrayVar(&o.Fields, "field", nil, "benchmark text column (repeatable; default: prompt, ref, code, instruction, reference, text)")
	f.StringVar(&o.Out, "out", "", "output directory for matches (required)")
	f.StringVar(&o.Purify, "purify", "", "also write the corpus minus its contaminated rows to this directory (kept-*.parquet, removed-*.parquet, manifest.json; --corpus only)")
	f.IntVar(&o.Workers, "workers", o.Workers, "matching workers")
	f.StringSliceVar(&o.Methods, "method", []string{methodAuto}, "lexical | behavioural | all | auto (repeatable or comma list): auto is lexical plus behavioural where a --benchmark file carries executable RTL harnesses and Icarus and Yosys are here, or CPU kernel tasks, corpus kernel items and gcc (else a note on stderr)")
	f.BoolVar(&o.Force, "force", false, "check (and purify) even when the manifests in --out (and --purify) are current")
	sf = bindDecontamConfig(c, &o.Config)
	addCompressionFlags(c, &o.Writer)
	_ = c.MarkFlagRequired("benchmark")
	_ = c.MarkFlagRequired("out")
	return c
}

// errContaminated is returned (with exit code 6) when a check finds
// contamination at or above the threshold.
var errContaminated = fmt.Errorf("contamination found")

// The kinds `decontam check` writes in --out: the matches, and the
// contaminated corpus rows by place, which --purify reads.
const (
	kindMatches    = "matches"
	kindContamRows = "contaminated_rows"
)

// contamRow is one contaminated match of a --corpus check, with the place
// of its corpus row among all corpus rows (files in order): what --purify
// needs to tell rows apart that share an id.
type contamRow struct {
	Row         int64   `json:"row" arrow:"row"`
	CorpusID    string  `json:"corpus_id" arrow:"corpus_id"`
	BenchmarkID string  `json:"benchmark_id" arrow:"benchmark_id"`
	Method      string  `json:"method" arrow:"method"`
	Score       float64 `json:"score" arrow:"score"`
}

// decontamCheckConfig is everything the flags set that decides a check's
// output: its fingerprint (the stage's config in the manifest's config
// hash). --workers and --purify are not: they change neither the matches
// nor their order.
type decontamCheckConfig struct {
	Corpus        []string        `yaml:"corpus,omitempty"`
	CorpusIndex   string          `yaml:"corpus_index,omitempty"`
	CorpusIDField string          `yaml:"corpus_id_field"`
	CorpusFields  []string        `yaml:"corpus_fields"`
	Benchmarks    []string        `yaml:"benchmarks"`
	IDField       string          `yaml:"id_field"`
	Fields        []string        `yaml:"fields"`
	Methods       []string        `yaml:"methods"` // lexical, behavioural (must run), auto (where it can)
	Match         decontam.Config `yaml:"match"`
	Compression   string          `yaml:"compression"`
	Level         int             `yaml:"compression_level"`
}

// checkRun is what a check's stage found when it ran in this process.
type checkRun struct {
	sums  []decontam.Summary
	bsums []decontam.BehaviouralSummary
	pin   *dedup.Input // the corpus opened for --purify (schema read)
}

// methodNames lists the parsed --method set, for the fingerprint.
func (m checkMethods) names() []string {
	var out []string
	if m.lexical {
		out = append(out, methodLexical)
	}
	if m.behavioural {
		out = append(out, methodBehavioural)
	}
	if m.auto {
		out = append(out, methodAuto)
	}
	return out
}

// behaviouralTools is where the tools a behavioural pass runs are found,
// for the fingerprint of a check that may run one: under auto, a check
// redone once Icarus or Yosys (or, for kernel problems, the C compiler) is
// installed (or moved) matches behaviourally, so it must not skip as current.
func behaviouralTools(m checkMethods) map[string]string {
	if !m.behavioural && !m.auto {
		return nil
	}
	tools := map[string]string{}
	for _, t := range []string{"iverilog", "vvp", "yosys", kernels.DefaultConfig().CC} {
		p, _ := exec.LookPath(t)
		tools[t] = p
	}
	return tools
}

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
	if o.Purify != "" && o.CorpusIndex != "" {
		return fmt.Errorf("%w: --purify needs the corpus rows (--corpus files); a --corpus-index holds no rows to write", errUsage)
	}
	if o.Purify != "" && samePath(o.Purify, o.Out) {
		return fmt.Errorf("%w: --purify %s is the --out directory; give the purified corpus its own directory", errUsage, o.Purify)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	methods, err := parseMethods(o.Methods)
	if err != nil {
		return err
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if err := checkCompression(&o.Writer); err != nil {
		return err
	}
	if len(o.Corpus) > 0 {
		corpus, err := engine.ExpandDataPaths(o.Corpus)
		if err != nil {
			return fmt.Errorf("--corpus: %w", err)
		}
		o.Corpus = corpus
	}
	inputs := append(slices.Clone(o.Corpus), o.Benchmarks...)
	if p := engine.ClobberedInput(o.Out, []string{"manifest.json"}, []string{kindMatches, kindContamRows}, inputs); p != "" {
		return fmt.Errorf("%w: input %s is in --out %s, whose output files would replace it; write to another directory", errUsage, p, o.Out)
	}
	// Refused before the check runs, not after it.
	if p := engine.ClobberedInput(o.Purify, []string{purifyManifest}, []string{purifyKept, purifyRemoved}, inputs); o.Purify != "" && p != "" {
		return fmt.Errorf("%w: input %s is in --purify %s, whose output files would replace it; write to another directory", errUsage, p, o.Purify)
	}
	fields := o.Fields
	if len(fields) == 0 {
		fields = decontam.DefaultBenchmarkFields
	}
	cfields := o.CorpusFields
	if len(cfields) == 0 {
		cfields = defaultCorpusFields
	}
	cfg := decontamCheckConfig{Corpus: o.Corpus, CorpusIndex: o.CorpusIndex, CorpusIDField: o.CorpusIDField, CorpusFields: cfields,
		Benchmarks: o.Benchmarks, IDField: o.IDField, Fields: fields, Methods: methods.names(), Match: o.Config,
		Compression: o.Writer.Compression, Level: o.Writer.CompressionLevel}
	raw := slices.Clone(inputs)
	if o.CorpusIndex != "" {
		raw = append(raw, o.CorpusIndex)
	}
	var got checkRun
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Name: "decontam", Type: "decontam_check", Config: &cfg, Inputs: raw,
		Out: o.Out, Force: o.Force, Writer: o.Writer, Run: checkStage(o, methods, fields, cfields, &got),
		Outputs: []string{kindMatches, kindContamRows}, Extra: map[string]any{"behavioural_tools": behaviouralTools(methods)}})
	if err != nil {
		return err
	}
	if res.Status != "skipped" {
		for _, s := range got.sums {
			fmt.Fprint(o.Stdout, s.String())
		}
		for _, s := range got.bsums {
			fmt.Fprint(o.Stdout, s.String())
		}
		fmt.Fprintf(o.Stdout, "matches: %s\n", o.Out)
	}
	if o.Purify != "" {
		if err := runPurify(ctx, o, got.pin); err != nil {
			return err
		}
	}
	if n := contaminatedCount(res.Counts); n > 0 {
		return withCode(exitFindings, fmt.Errorf("%w: %d matches with score ≥ %.2f", errContaminated, n, o.Config.Threshold))
	}
	return nil
}

// contaminatedCount totals a check's (or a rescore's) manifest counts of
// contaminated matches, lexical and behavioural: from the stage that ran,
// or from the manifest of the one that was current and skipped, so a
// skipped check exits as the check it stands for did.
func contaminatedCount(counts map[string]int64) int64 {
	var n int64
	for k, v := range counts {
		if strings.HasPrefix(k, "contaminated.") || strings.HasPrefix(k, "behavioural.matches.") {
			n += v
		}
	}
	return n
}

// checkStage is the check as a stage: it matches, writes the matches and
// the contaminated rows through the runner's writers, counts per
// benchmark, and writes decontam.json (for decontam rescore) before the
// runner writes the manifest last.
func checkStage(o DecontamCheckOptions, methods checkMethods, fields, cfields []string, got *checkRun) engine.StageFunc {
	return func(ctx context.Context, sc *engine.StageContext) error {
		if o.Purify != "" {
			// The corpus schema is read (and a reserved column refused)
			// before matching, so a bad input fails early.
			pin, err := openPurifyInput(ctx, o)
			if err != nil {
				return err
			}
			got.pin = pin
		}
		w, err := engine.StageWriter[decontam.Match](sc, kindMatches)
		if err != nil {
			return err
		}
		hw, err := engine.StageWriter[contamRow](sc, kindContamRows)
		if err != nil {
			return err
		}
		write := func(m decontam.Match) error { return w.Write(m) }
		// Against the corpus files, a match's row is its place among all
		// corpus rows; against a corpus index a lexical match has no row
		// to place, a behavioural one has the row its design or kernel
		// was indexed from.
		hit := func(row int64, m decontam.Match) error {
			if m.Contaminated && (o.CorpusIndex == "" || m.Method == decontam.MethodBehavioural) {
				if err := hw.Write(contamRow{Row: row, CorpusID: m.CorpusID, BenchmarkID: m.BenchmarkID, Method: m.Method, Score: m.Score}); err != nil {
					return err
				}
			}
			return write(m)
		}
		var sums []decontam.Summary
		// One bar over every pass: each benchmark, and the corpus once per benchmark.
		total := engine.InputBytes(o.Benchmarks) + int64(len(o.Benchmarks))*engine.InputBytes(o.Corpus)
		ctx, done := readProgress(ctx, "decontam check", total)
		defer done()
		switch {
		case !methods.lexical: // --method behavioural: no lexical pass
		case o.CorpusIndex != "":
			ix, err := decontam.Open(o.CorpusIndex)
			if err != nil {
				return err
			}
			defer ix.Close()
			if ix.Meta.Side != decontam.SideCorpus {
				return fmt.Errorf("%w: --corpus-index %s is a %s index", errUsage, o.CorpusIndex, ix.Meta.Side)
			}
			for _, b := range o.Benchmarks {
				s, err := decontam.Check(ctx, ix, decontam.FileRecords{Paths: []string{b}, IDField: o.IDField, Fields: fields}, o.Workers, write)
				if err != nil {
					return err
				}
				s.Benchmark = filepath.Base(b)
				sums = append(sums, s)
			}
		default:
			// Every benchmark is open at once so the corpus is read and each
			// text analysed once for all of them (CheckRecordsAll).
			corpus := decontam.FileRecords{Paths: o.Corpus, IDField: o.CorpusIDField, Fields: cfields}
			var ixs []*decontam.Index
			var cleanups []func()
			closeAll := func() {
				for _, c := range cleanups {
					c()
				}
			}
			for _, b := range o.Benchmarks {
				ix, cleanup, err := decontam.OpenBenchmark(ctx, o.Config, decontam.BenchmarkSpec{Path: b, IDField: o.IDField, Fields: fields}, "")
				if err != nil {
					closeAll()
					return err
				}
				ixs, cleanups = append(ixs, ix), append(cleanups, cleanup)
			}
			s, err := decontam.CheckRecordsAll(ctx, ixs, corpus, o.Workers, func(_ int, row int64, m decontam.Match) error { return hit(row, m) })
			closeAll()
			if err != nil {
				return err
			}
			sums = append(sums, s...)
		}
		// The progress bar covers the lexical passes; the behavioural one's
		// reads are not metered (its time is simulation, reported in its summary).
		bsums, err := runBehavioural(engine.WithReadMeter(ctx, nil), o, methods, o.Stderr, hit)
		if err != nil {
			return err
		}
		for _, s := range sums {
			sc.Count("matches."+s.Benchmark, s.Matches)
			sc.Count("contaminated."+s.Benchmark, s.Contaminated)
		}
		for _, s := range bsums {
			// The wall time goes to the manifest's seconds, which its
			// content hash leaves out: a rerun with the same verdicts
			// leaves --purify (and any reader of the check) current.
			for k, v := range s.Counts(false) {
				sc.Count("behavioural."+k+"."+s.Benchmark, v)
			}
			sc.Timing("behavioural."+s.Benchmark, s.Wall.Seconds())
		}
		got.sums, got.bsums = sums, bsums
		all := slices.Clone(sums)
		for _, s := range bsums {
			all = append(all, behaviouralAsSummary(s, o.Config))
		}
		return decontam.WriteRunRecord(sc.Dir, decontam.NewRunRecord(all)) // for decontam rescore
	}
}
