package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// DedupOptions are `crucible dedup`'s flags.
type DedupOptions struct {
	In         []string
	IDField    string
	TextFields []string
	Reuse      bool   // reuse stored signatures found in the input
	KeepSigs   bool   // write the signature columns (for a later --reuse-signatures)
	OnDupID    string // onDupError | onDupKeepFirst
	Out        string
	Force      bool // run even when the manifest in Out is current
	Config     dedup.Config
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

// dedupFlags keep the names and help texts `dedup`'s flags had before they
// were derived from dedupStageConfig. The keys skipped here have a flag of
// another form (--text-field and --lang, registered in newDedupCmd; the
// compression pair, by addCompressionFlags) or had none and are reached
// only by --set.
var dedupFlags = map[string]flagDoc{
	"id_field":         {Name: "id-field", Help: "id column (alternatives separated by |, e.g. item_id|id)"},
	"text_fields":      {Skip: true}, // a repeatable --text-field (a string array, not a comma list)
	"on_duplicate_id":  {Name: "on-duplicate-id", Help: "a second row with an id already seen: error (exit 3 naming both rows) | keep-first (the later rows go to removed-*.parquet as duplicate_id)"},
	"reuse_signatures": {Name: "reuse-signatures", Help: "use the _dedup_minhash/_dedup_text_hash/_dedup_minhash_params columns of an earlier --keep-signatures run's output when their parameters match"},
	"keep_signatures":  {Name: "keep-signatures", Help: "also write the signature columns _dedup_minhash, _dedup_text_hash, _dedup_minhash_params (for a later --reuse-signatures)"},
	"dedup.threshold":  {Name: "threshold", Help: "Jaccard similarity threshold of near duplicates"},
	"dedup.num_perm":   {Name: "num-perm", Help: "MinHash signature slots"},
	"dedup.shingle":    {Name: "shingle", Help: "shingle kind: word|char"},
	"dedup.ngram":      {Name: "ngram", Help: "shingle length (tokens for word shingles, bytes for char)"},
	"dedup.seed":       {Name: "seed", Help: "hash seed (signatures are deterministic for a seed)"},
	"dedup.lang":       {Skip: true}, // --lang, a dedup.Lang
	"dedup.lowercase":  {Name: "lowercase", Help: "fold case before hashing"},
	"dedup.verify":     {Name: "verify", Help: "candidate verification: exact (Jaccard of shingle sets) | signature (MinHash estimate)"},
	"dedup.backend":    {Name: "backend", Help: "LSH backend: auto|memory (minhash-lsh)|disk (sorted band-key runs)"},
	"dedup.temp_dir":   {Name: "tmp", Help: "spill directory for band-key runs and a JSONL input's row spool past 128 MiB (default: system temp)"},
	"dedup.workers":    {Name: "workers", Help: "signature workers"},
	// No flag before the derivation: --set dedup.KEY=value only.
	"dedup.strip_comments":  {Skip: true},
	"dedup.fp_weight":       {Skip: true},
	"dedup.fn_weight":       {Skip: true},
	"dedup.memory_max_docs": {Skip: true},
	"dedup.run_bytes":       {Skip: true},
	"dedup.batch_docs":      {Skip: true},
	"dedup.max_bucket_all":  {Skip: true},
	"compression":           {Skip: true}, // addCompressionFlags
	"compression_level":     {Skip: true},
}

// defaultDedupStageConfig is `crucible dedup`'s config before flags: the
// flags' defaults.
func defaultDedupStageConfig() dedupStageConfig {
	return dedupStageConfig{IDField: "id", OnDuplicateID: onDupError, Dedup: dedup.DefaultConfig(), Compression: defaultCompression}
}

// options are the DedupOptions a stage config runs with (the writer's
// other settings the engine's defaults).
func (c dedupStageConfig) options() DedupOptions {
	w := engine.DefaultWriterOptions()
	w.Compression, w.CompressionLevel = c.Compression, c.CompressionLevel
	return DedupOptions{IDField: c.IDField, TextFields: c.TextFields, Reuse: c.ReuseSignatures, KeepSigs: c.KeepSignatures,
		OnDupID: c.OnDuplicateID, Config: c.Dedup, Writer: w}
}

func newDedupCmd() *cobra.Command {
	cfg := defaultDedupStageConfig()
	var (
		in     []string
		out    string
		force  bool
		writer engine.WriterOptions
		sf     *stageFlags
	)
	c := &cobra.Command{
		Use:   "dedup --in PATH --id-field F --text-field F [--threshold 0.8] [--ngram 5] [--num-perm 128] [--keep-signatures] [--reuse-signatures] [--set KEY=VALUE] [--force] --out DIR",
		Short: "Exact + MinHash-LSH near-dedup of JSONL/Parquet rows; writes the kept and the removed rows, all their columns, plus _dedup_ columns, as Parquet",
		Long: `Removes exact duplicates (hash of code-aware normalised text: whitespace and
Verilog/C/C++/Python comments removed, identifiers kept) and near duplicates
(word or character n-gram shingles, one-permutation MinHash, LSH banding chosen
for the threshold, candidates verified by exact Jaccard). One survivor per
cluster: the earliest row. Prints the banding and its detection probability
at the threshold.

Output (DIR):
  kept-*.parquet     the kept rows, in input order
  removed-*.parquet  the removed rows, in input order
  manifest.json      shards and counts, written last
Both hold the input rows unchanged: every input column, same names, same
Arrow types, same order (a Parquet input's own schema; for JSONL a schema
inferred from all rows: int64 when every value is an integer, float64 when
numbers mix, bool, string, lists, objects as structs, nulls allowed; a
column whose values mix incompatible kinds, e.g. strings and numbers, is a
string column of each value's raw JSON text, strings with their quotes; a
column null in every row is a string column). After the input columns both
files have (one schema, so a later run reads kept and removed rows together):
  _dedup_cluster_id    string, dup-NNNNNNNN; null for a row in no cluster
  _dedup_cluster_size  int32, rows in the cluster (1 for a row in no cluster)
  _dedup_survivor_id   string, the kept row's id as text (an integer id 7 is
                       "7"); a kept row's own id
  _dedup_reason        exact_duplicate | near_duplicate | duplicate_id; null
                       for kept rows
and with --keep-signatures they end with
  _dedup_minhash (list<int64>: OPH signature, uint64 bits), _dedup_text_hash,
  _dedup_minhash_params (string)
An input column named _dedup_... is a usage error naming it, except that
with --reuse-signatures the columns an earlier dedup wrote (the ones above)
are replaced by this run's. All inputs must have the same columns.

With --keep-signatures a corpus split in parts is deduplicated part by part
(in parallel, anywhere) and then across parts with one merge run over the
parts' kept rows:
  crucible dedup --in part-1.jsonl --id-field id --text-field text \
      --keep-signatures --out d1                        (one run per part)
  crucible dedup --in 'd1/kept-*.parquet' --in 'd2/kept-*.parquet' \
      --id-field id --text-field text --reuse-signatures --out merged
(the parts' output keeps the input's column names, so the merge maps the
same id and text fields).
The merge run skips tokenising and signing; it only bands, verifies and
clusters. --reuse-signatures on a file without stored signatures is a usage
error naming the file.

A second row with an id already seen is refused (exit 3 naming both rows),
or with --on-duplicate-id keep-first written to removed-*.parquet as
duplicate_id (_dedup_cluster_id and _dedup_cluster_size null) and left out
of the dedup.

Memory: the per-row dedup state (id, hashes, cluster) and the LSH index as
before; the rows themselves are streamed in batches of 1024, and each
output holds at most about one row group (64 MiB) before writing it.
JSONL rows are parsed once: the first pass keeps each row's members (text
fields decoded) in a row spool that verification and the output pass read
back; its first 128 MiB stay in memory, a larger spool moves to a file in
--tmp about the size of the decompressed JSONL, removed when the command
ends. Parquet inputs are read again from their files instead.

Inputs: --in takes files, quoted globs (expanded by the command; * does not
match a leading dot) and directories (every .jsonl, .jsonl.gz, .jsonl.zst,
.jsonl.zstd and .parquet file below, hidden ones left out, in lexical
order), any number of each, in the order given. A pattern matching nothing,
a directory without data, or a file reached twice is exit 3; an input in
--out under a name the output would replace is exit 2.

Output compression: --compression zstd|snappy|none (default zstd) and
--compression-level N for zstd (default 1).
Measured on the dedup output of 20,000 x 2 KB documents (46 MB of JSONL,
dedup.DefaultSynthConfig; kept and removed rows with all columns, held in
memory, written as Parquet; 6 runs of 3 writes on a shared 2-core AMD EPYC
that other jobs kept busy, so medians spread):
  codec    write s, best / median   MB/s of input, best   output MB
  zstd-1   0.44 / 0.62             105                    25.4
  zstd-3   0.73 / 1.06              63                    20.6
  snappy   0.45 / 0.66             102                    31.9
  none     0.19 / 0.22             237                    45.8
zstd 1 writes about as fast as snappy at 20% fewer bytes; zstd 3 saves
another 19% at about 1.7x the write time. Levels 1-2 are Crucible's own
zstd encoder settings (klauspost's fastest, no entropy coding of blocks
that find almost no matches, with the frame checksum; standard zstd that
DuckDB and pyarrow read): arrow-go's level 1, in the same runs, wrote 23.3 MB in
0.55 s at best. Reproduce with
  go test -p 1 -run '^$' -bench 'DedupOutputCodecs/write' -benchtime 3x -count 5 ./cmd/crucible/
(without /write it also times whole dedup runs per codec).
The same flags set 'crucible decontam check' outputs.

--set KEY=VALUE (repeatable, applied after the other flags; the value is
YAML) sets any key of the command's config by its YAML path: id_field,
text_fields, on_duplicate_id, reuse_signatures, keep_signatures,
compression, compression_level, and dedup.KEY for the dedup settings
(threshold, num_perm, shingle, ngram, seed, lang, strip_comments,
lowercase, fp_weight, fn_weight, verify, backend, memory_max_docs,
run_bytes, temp_dir, workers, batch_docs, max_bucket_all), e.g.
--set dedup.threshold=0.7 is --threshold 0.7.

The summary gives the whole command's wall time and rows/s, and its phases
in wall seconds, summing to the total: read (decoding rows, inferring a
JSONL schema), sign (tokenise, sign, band insert), index (LSH candidate
pairs), verify (candidate verification), write (second pass, shards,
manifest); the manifest's "seconds" records the same up to its own
writing (read there also covers hashing the inputs for the fingerprint).

Resume: dedup runs as a one-stage pipeline. The manifest holds a hash of
every flag that decides the output (the compression too) and the sha256 of
every --in file; a second run with the same inputs and flags into the same
--out finds it current, says it is up to date and skips; --force runs it
again.

Exit codes: 0 done (duplicates found or not), 2 bad flags or a reserved
column name, 3 unreadable input, a row missing the id/text fields, inputs of
different columns or a repeated id, 4 output not writable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The flags of another form wrote cfg while parsing (--text-field,
			// --lang) or write here (the compression pair); the derived
			// flags, then --set, go over them.
			cfg.Compression, cfg.CompressionLevel = writer.Compression, writer.CompressionLevel
			if err := sf.apply(); err != nil {
				return err
			}
			l, ok := dedup.ParseLang(string(cfg.Dedup.Lang))
			if !ok {
				return fmt.Errorf("%w: --lang %q (want auto|verilog|c|python|text)", errUsage, cfg.Dedup.Lang)
			}
			cfg.Dedup.Lang = l
			o := cfg.options()
			o.In, o.Out, o.Force, o.Stdout = in, out, force, cmd.OutOrStdout()
			return runDedup(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&in, "in", nil, "input JSONL or Parquet file, quoted glob, or directory (every .jsonl, .jsonl.gz, .jsonl.zst, .parquet below it); repeatable; required")
	f.StringArrayVar(&cfg.TextFields, "text-field", nil, "text column compared (repeatable: fields are joined; required)")
	f.StringVar(&out, "out", "", "output directory (required)")
	f.StringVar((*string)(&cfg.Dedup.Lang), "lang", string(cfg.Dedup.Lang), "comment syntax: auto|verilog|c|python|text")
	f.BoolVar(&force, "force", false, "run even when the manifest in --out is current")
	sf = bindStageFlags(f, &cfg, dedupFlags)
	addCompressionFlags(c, &writer)
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("text-field")
	_ = c.MarkFlagRequired("out")
	return c
}

// dedupPhases are the wall seconds of one `crucible dedup` run. They sum
// to Total: read is the time before the signature pass plus what it spent
// decoding rows; sign the rest of the first pass (tokenise, sign, band
// insert); index the LSH candidate pairs (and banding, survivors); verify
// the candidate verification (re-reading the candidates' rows); write the
// second pass (re-read, write kept/removed shards; the printed figure also
// the manifest the runner writes after the stage). On several
// cores reading overlaps signing, and the split is the reader's busy time.
type dedupPhases struct {
	Total, Read, Sign, Index, Verify, Write float64
}

func (p dedupPhases) seconds() map[string]float64 {
	return map[string]float64{"total": p.Total, "read": p.Read, "sign": p.Sign, "index": p.Index, "verify": p.Verify, "write": p.Write}
}

// dedupStageConfig is everything the flags set that decides what `crucible
// dedup` writes: the stage's config, so its hash is in the manifest and a
// changed flag (the compression too) runs the command again.
type dedupStageConfig struct {
	IDField          string       `yaml:"id_field"`
	TextFields       []string     `yaml:"text_fields"`
	OnDuplicateID    string       `yaml:"on_duplicate_id"`
	ReuseSignatures  bool         `yaml:"reuse_signatures"`
	KeepSignatures   bool         `yaml:"keep_signatures"`
	Dedup            dedup.Config `yaml:"dedup"`
	Compression      string       `yaml:"compression"`
	CompressionLevel int          `yaml:"compression_level"`
}

// dedupRun is what the stage did, for the printed summary.
type dedupRun struct {
	stats     dedup.Stats
	dups      int
	removedBy map[string]int
	ph        dedupPhases
	runEnd    time.Time // the first pass and the index done: the write phase starts
}

// runDedup runs `crucible dedup` as a one-stage pipeline through
// engine.Runner.RunOne: the runner takes the --out lock, clears the
// kept/removed/rejections shards, commits the shards and writes the
// manifest (config hash, every --in file hashed) last; a second run with
// the same inputs and flags finds it current and skips.
func runDedup(ctx context.Context, o DedupOptions) error {
	start := time.Now()
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if len(o.In) == 0 || len(o.TextFields) == 0 || o.Out == "" || o.IDField == "" {
		return fmt.Errorf("%w: --in, --id-field, --text-field and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if err := checkCompression(&o.Writer); err != nil {
		return err
	}
	switch o.OnDupID {
	case "":
		o.OnDupID = onDupError
	case onDupError, onDupKeepFirst:
	default:
		return fmt.Errorf("%w: --on-duplicate-id %q (want error or keep-first)", errUsage, o.OnDupID)
	}
	in, err := engine.ExpandDataPaths(o.In)
	if err != nil {
		return fmt.Errorf("--in: %w", err)
	}
	o.In = in
	// Where the spill files go and how many goroutines sign decide nothing
	// in the output: left out of the fingerprint, so a machine with other
	// cores (Workers defaults to them) or another --tmp finds it current.
	fp := o.Config
	fp.Workers, fp.TempDir = 0, ""
	cfg := dedupStageConfig{IDField: o.IDField, TextFields: o.TextFields, OnDuplicateID: o.OnDupID, ReuseSignatures: o.Reuse,
		KeepSignatures: o.KeepSigs, Dedup: fp, Compression: o.Writer.Compression, CompressionLevel: o.Writer.CompressionLevel}
	var d dedupRun
	stage := func(ctx context.Context, sc *engine.StageContext) error { return d.stage(ctx, sc, o, start) }
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "dedup", Config: &cfg, Inputs: o.In, Out: o.Out, Force: o.Force,
		Writer: o.Writer, Run: stage, Outputs: []string{"kept", "removed", "rejections"}})
	if err != nil || res.Status == "skipped" {
		return err
	}
	// The printed write phase and total include the commit (shards renamed,
	// manifest written); the manifest's end where the stage did.
	now := time.Now()
	ph, st := d.ph, d.stats
	ph.Write, ph.Total = now.Sub(d.runEnd).Seconds(), now.Sub(start).Seconds()
	fmt.Fprintf(o.Stdout, "dedup: %d rows (%.1f MB) in %.2fs (%.0f rows/s); kept %d, removed %d (%d exact, %d near) in %d clusters\n",
		st.Docs, float64(st.Bytes)/1e6, ph.Total, float64(st.Docs)/max(ph.Total, 1e-9), st.Docs-st.Removed, st.Removed,
		d.removedBy[dedup.ReasonExactDuplicate], d.removedBy[dedup.ReasonNearDuplicate], st.Clusters)
	fmt.Fprintf(o.Stdout, "  phases (wall s): read %.2f, sign %.2f, index %.2f, verify %.2f, write %.2f\n",
		ph.Read, ph.Sign, ph.Index, ph.Verify, ph.Write)
	fmt.Fprintf(o.Stdout, "  banding: %s at threshold %.2f with %d permutations (%s shingles, n=%d); backend %s, verify %s\n",
		st.Bands, o.Config.Threshold, o.Config.NumPerm, o.Config.Shingle, o.Config.NGram, st.Backend, o.Config.Verify)
	if st.ReusedSigs > 0 {
		fmt.Fprintf(o.Stdout, "  reused %d stored signatures\n", st.ReusedSigs)
	}
	if d.dups > 0 {
		fmt.Fprintf(o.Stdout, "  %d rows repeated an earlier row's id: kept the first, the rest are duplicate_id removals\n", d.dups)
	}
	fmt.Fprintf(o.Stdout, "  candidate pairs %d, verified %d; output: %s (%s)\n", st.CandidatePairs, st.VerifiedPairs, o.Out,
		strings.Join([]string{"kept-*.parquet", "removed-*.parquet", "manifest.json"}, ", "))
	return nil
}

// stage is dedup's StageFunc: the signature pass, the index, and the
// second pass writing every input row to the stage's kept and removed
// writers; the counts and phase seconds go to the manifest through sc.
// start is the command's start (the read phase includes what RunOne did
// before the stage: fingerprinting the inputs, the lock, the clear).
func (d *dedupRun) stage(ctx context.Context, sc *engine.StageContext, o DedupOptions, start time.Time) error {
	// JSONL inputs' schema is inferred in the signature pass (it reads every
	// row anyway), which also spools their rows for verification and the
	// output pass (parsed once, not three times); Parquet-only input has its
	// schema in the footers, read (and its column names checked) before any
	// work.
	var js *dedup.JSONLSchema
	var input *dedup.Input
	var pass []int
	for _, p := range o.In {
		if !engine.IsParquet(p) {
			js = dedup.NewSpooledJSONLSchema(o.Config.TempDir)
			defer js.Close()
			break
		}
	}
	if js == nil {
		var err error
		if input, pass, err = openDedupInput(ctx, o, nil); err != nil {
			return err
		}
	}
	src := &uniqueIDs{src: dedup.FileSource{Paths: o.In, IDField: o.IDField, TextFields: o.TextFields, ReuseSignatures: o.Reuse, Schema: js}, policy: o.OnDupID}
	// The bar follows the signature pass over the input; the second pass
	// below re-reads it to write the outputs.
	pctx, done := readProgress(ctx, "dedup", engine.InputBytes(o.In))
	runStart := time.Now()
	res, err := dedup.Run(pctx, src, o.Config, slog.Default())
	done()
	if err != nil {
		return err
	}
	defer res.Close()
	if js != nil {
		if input, pass, err = openDedupInput(ctx, o, js); err != nil {
			return err
		}
	}
	runEnd := time.Now()
	w, err := newDedupWriter(sc, input.Schema, pass, o.KeepSigs, o.Writer.Allocator)
	if err != nil {
		return err
	}
	// Second pass: rows stream again so they never have to stay in memory.
	if err := w.writeRows(engine.WithReadMeter(ctx, nil), input, src, res); err != nil {
		return err
	}
	if err := w.close(); err != nil {
		return err
	}
	st := res.Stats
	for k, n := range map[string]int64{"rows": st.Docs, "kept": st.Docs - st.Removed, "removed": st.Removed, "clusters": st.Clusters,
		"duplicate_ids": int64(len(src.dups)), "exact_pairs": st.ExactPairs, "candidate_pairs": st.CandidatePairs, "verified_pairs": st.VerifiedPairs} {
		sc.Count(k, n)
	}
	now := time.Now()
	ph := dedupPhases{Read: runStart.Sub(start).Seconds() + st.ReadTime.Seconds(),
		Sign: (st.SignTime - st.ReadTime).Seconds(), Verify: st.VerifyTime.Seconds()}
	ph.Index = runEnd.Sub(runStart).Seconds() - st.SignTime.Seconds() - ph.Verify
	ph.Write = now.Sub(runEnd).Seconds()
	ph.Total = now.Sub(start).Seconds()
	for k, v := range ph.seconds() {
		sc.Timing(k, v)
	}
	d.removedBy = map[string]int{}
	for j := range res.Len() {
		if dec := res.Decision(j); !dec.Kept {
			d.removedBy[dec.Reason]++
		}
	}
	d.stats, d.dups, d.ph, d.runEnd = st, len(src.dups), ph, runEnd
	return nil
}

// openDedupInput reads the inputs' schema (the JSONL part from js, inferred
// by the signature pass, when js is not nil) and picks the passthrough
// columns.
func openDedupInput(ctx context.Context, o DedupOptions, js *dedup.JSONLSchema) (*dedup.Input, []int, error) {
	var input *dedup.Input
	var err error
	if js != nil {
		input, err = dedup.OpenInputInferred(ctx, o.In, o.IDField, js)
	} else {
		input, err = dedup.OpenInput(ctx, o.In, o.IDField)
	}
	if err != nil {
		return nil, nil, err
	}
	pass, err := passthroughColumns(input, o.Reuse)
	return input, pass, err
}
