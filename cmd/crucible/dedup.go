package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

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
	OnDupID    string // onDupError | onDupKeepFirst
	Out        string
	Config     dedup.Config
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

// DedupKeptRow is one kept row in DIR/kept-*.parquet.
// The minhash, text_hash and minhash_params columns let a later run reuse
// the signatures (--reuse-signatures).
type DedupKeptRow struct {
	ID            string  `json:"id" arrow:"id"`
	Text          string  `json:"text" arrow:"text"` // compared text (text fields joined)
	ClusterID     string  `json:"cluster_id" arrow:"cluster_id"`
	ClusterSize   int32   `json:"cluster_size" arrow:"cluster_size"`
	Minhash       []int64 `json:"minhash" arrow:"minhash"` // OPH signature (uint64 bits)
	TextHash      string  `json:"text_hash" arrow:"text_hash"`
	MinhashParams string  `json:"minhash_params" arrow:"minhash_params"`
}

// DedupRejectRow is one removed row in DIR/rejections-*.parquet.
type DedupRejectRow struct {
	ID            string  `json:"id" arrow:"id"`
	Reason        string  `json:"reason" arrow:"reason"` // exact_duplicate | near_duplicate | duplicate_id
	ClusterID     string  `json:"cluster_id" arrow:"cluster_id"`
	SurvivorID    string  `json:"survivor_id" arrow:"survivor_id"`
	ClusterSize   int32   `json:"cluster_size" arrow:"cluster_size"`
	Text          string  `json:"text" arrow:"text"`
	Minhash       []int64 `json:"minhash" arrow:"minhash"`
	TextHash      string  `json:"text_hash" arrow:"text_hash"`
	MinhashParams string  `json:"minhash_params" arrow:"minhash_params"`
}

func newDedupCmd() *cobra.Command {
	o := DedupOptions{Config: dedup.DefaultConfig(), Writer: engine.DefaultWriterOptions()}
	var lang string
	c := &cobra.Command{
		Use:   "dedup --in PATH --id-field F --text-field F [--threshold 0.8] [--ngram 5] [--num-perm 128] --out DIR",
		Short: "Exact + MinHash-LSH near-dedup of a JSONL/Parquet file; writes kept and rejected rows (cluster_id, survivor_id) as Parquet",
		Long: `Removes exact duplicates (hash of code-aware normalised text: whitespace and
Verilog/C/C++/Python comments removed, identifiers kept) and near duplicates
(word or character n-gram shingles, one-permutation MinHash, LSH banding chosen
for the threshold, candidates verified by exact Jaccard). One survivor per
cluster: the earliest row. Writes DIR/kept-*.parquet, DIR/rejections-*.parquet
and DIR/manifest.json, and prints the banding and its detection probability at
the threshold.

Output rows carry the signature (minhash, text_hash, minhash_params), so a
corpus split in parts is deduplicated part by part (in parallel, anywhere)
and then across parts with one merge run over the parts' kept rows:
  crucible dedup --in part-1.jsonl ... --out d1     (one run per part)
  crucible dedup --in 'd1/kept-*.parquet' --in 'd2/kept-*.parquet' \
      --id-field id --text-field text --reuse-signatures --out merged
The merge run skips tokenising and signing; it only bands, verifies and
clusters.

A second row with an id already seen is refused (exit 3 naming both rows),
or with --on-duplicate-id keep-first written to the rejections as
duplicate_id and left out of the dedup.

Exit codes: 0 done (duplicates found or not), 2 bad flags, 3 unreadable input,
a row missing the id/text fields or a repeated id, 4 output not writable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, ok := dedup.ParseLang(lang)
			if !ok {
				return fmt.Errorf("%w: --lang %q (want auto|verilog|c|python|text)", errUsage, lang)
			}
			o.Config.Lang, o.Stdout = l, cmd.OutOrStdout()
			return runDedup(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.In, "in", nil, "input JSONL or Parquet file or glob (repeatable; required)")
	f.StringVar(&o.IDField, "id-field", "id", "id column (alternatives separated by |, e.g. item_id|id)")
	f.StringArrayVar(&o.TextFields, "text-field", nil, "text column compared (repeatable: fields are joined; required)")
	f.StringVar(&o.Out, "out", "", "output directory (required)")
	f.Float64Var(&o.Config.Threshold, "threshold", o.Config.Threshold, "Jaccard similarity threshold of near duplicates")
	f.IntVar(&o.Config.NGram, "ngram", o.Config.NGram, "shingle length (tokens for word shingles, bytes for char)")
	f.IntVar(&o.Config.NumPerm, "num-perm", o.Config.NumPerm, "MinHash signature slots")
	f.StringVar(&o.Config.Shingle, "shingle", o.Config.Shingle, "shingle kind: word|char")
	f.StringVar(&lang, "lang", string(o.Config.Lang), "comment syntax: auto|verilog|c|python|text")
	f.BoolVar(&o.Config.Lowercase, "lowercase", o.Config.Lowercase, "fold case before hashing")
	f.StringVar(&o.Config.Verify, "verify", o.Config.Verify, "candidate verification: exact (Jaccard of shingle sets) | signature (MinHash estimate)")
	f.StringVar(&o.Config.Backend, "backend", o.Config.Backend, "LSH backend: auto|memory (minhash-lsh)|disk (sorted band-key runs)")
	f.IntVar(&o.Config.Workers, "workers", o.Config.Workers, "signature workers")
	f.Uint64Var(&o.Config.Seed, "seed", o.Config.Seed, "hash seed (signatures are deterministic for a seed)")
	f.StringVar(&o.Config.TempDir, "tmp", "", "spill directory for band-key runs (default: system temp)")
	f.StringVar(&o.OnDupID, "on-duplicate-id", onDupError, "a second row with an id already seen: error (exit 3 naming both rows) | keep-first (the later rows become duplicate_id rejections)")
	f.BoolVar(&o.Reuse, "reuse-signatures", false, "use the minhash/text_hash/minhash_params columns of an earlier run's output when their parameters match")
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("text-field")
	_ = c.MarkFlagRequired("out")
	return c
}

func runDedup(ctx context.Context, o DedupOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if len(o.In) == 0 || len(o.TextFields) == 0 || o.Out == "" || o.IDField == "" {
		return fmt.Errorf("%w: --in, --id-field, --text-field and --out are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	switch o.OnDupID {
	case "":
		o.OnDupID = onDupError
	case onDupError, onDupKeepFirst:
	default:
		return fmt.Errorf("%w: --on-duplicate-id %q (want error or keep-first)", errUsage, o.OnDupID)
	}
	var in []string
	for _, p := range o.In {
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil || len(m) == 0 {
				return fmt.Errorf("%w: --in %s matches no file", engine.ErrInput, p)
			}
			in = append(in, m...)
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: --in %s: %v", engine.ErrInput, p, err)
		}
		in = append(in, p)
	}
	o.In = in
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	release, err := engine.PrepareOutput(ctx, o.Out, []string{"manifest.json"}, "kept", "rejections")
	if err != nil {
		return err
	}
	defer release()
	src := &uniqueIDs{src: dedup.FileSource{Paths: o.In, IDField: o.IDField, TextFields: o.TextFields, ReuseSignatures: o.Reuse}, policy: o.OnDupID}
	// The bar follows the signature pass over the input; the second pass
	// below re-reads it to write the outputs.
	pctx, done := readProgress(ctx, "dedup", engine.InputBytes(o.In))
	res, err := dedup.Run(pctx, src, o.Config, slog.Default())
	done()
	if err != nil {
		return err
	}
	defer res.Close()
	kept, err := engine.NewShardWriter[DedupKeptRow](o.Out, "kept", "kept", o.Writer)
	if err != nil {
		return err
	}
	rejects, err := engine.NewShardWriter[DedupRejectRow](o.Out, "rejections", "rejections", o.Writer)
	if err != nil {
		kept.Abort()
		return err
	}
	// Second pass: rows stream again so texts never have to stay in memory.
	i := 0
	err = src.Scan(engine.WithReadMeter(ctx, nil), func(d dedup.Doc) error {
		if i >= res.Len() || res.IDs[i] != d.ID {
			return fmt.Errorf("%w: input changed between passes at row %d", engine.ErrInput, i+1)
		}
		dec := res.Decision(i)
		sg, err := res.Signature(i)
		if err != nil {
			return err
		}
		i++
		mh := make([]int64, len(sg.Values))
		for k, v := range sg.Values {
			mh[k] = int64(v)
		}
		th := dedup.FormatTextHash(sg.TextHash)
		if dec.Kept {
			return kept.Write(DedupKeptRow{ID: d.ID, Text: d.Text, ClusterID: dec.ClusterID, ClusterSize: int32(dec.ClusterSize),
				Minhash: mh, TextHash: th, MinhashParams: sg.Params})
		}
		return rejects.Write(DedupRejectRow{ID: d.ID, Reason: dec.Reason, ClusterID: dec.ClusterID, SurvivorID: dec.SurvivorID,
			ClusterSize: int32(dec.ClusterSize), Text: d.Text, Minhash: mh, TextHash: th, MinhashParams: sg.Params})
	})
	for _, d := range src.dups {
		if err == nil {
			err = rejects.Write(DedupRejectRow{ID: d.doc.ID, Reason: "duplicate_id", SurvivorID: d.doc.ID, Text: d.doc.Text})
		}
	}
	if err != nil {
		kept.Abort()
		rejects.Abort()
		return err
	}
	st := res.Stats
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: "dedup", Type: "dedup", Inputs: []engine.InputRef{},
		Counts: map[string]int64{"rows": st.Docs, "kept": st.Docs - st.Removed, "removed": st.Removed, "clusters": st.Clusters,
			"duplicate_ids": int64(len(src.dups)), "exact_pairs": st.ExactPairs, "candidate_pairs": st.CandidatePairs, "verified_pairs": st.VerifiedPairs}}
	for _, w := range []interface {
		Close() ([]engine.ShardInfo, error)
	}{kept, rejects} {
		infos, err := w.Close()
		if err != nil {
			kept.Abort() // whichever is still open drops its temp file
			rejects.Abort()
			return err
		}
		m.Shards = append(m.Shards, infos...)
	}
	for _, p := range o.In {
		if h, err := engine.HashFile(p); err == nil {
			m.Inputs = append(m.Inputs, engine.InputRef{Kind: "file", Path: p, SHA256: h})
		}
	}
	if err := engine.WriteManifest(o.Out, "manifest.json", m); err != nil {
		return err
	}
	removedBy := map[string]int{}
	for j := range res.Len() {
		if d := res.Decision(j); !d.Kept {
			removedBy[d.Reason]++
		}
	}
	fmt.Fprintf(o.Stdout, "dedup: %d rows (%.1f MB) in %.2fs; kept %d, removed %d (%d exact, %d near) in %d clusters\n",
		st.Docs, float64(st.Bytes)/1e6, st.TotalTime.Seconds(), st.Docs-st.Removed, st.Removed,
		removedBy[dedup.ReasonExactDuplicate], removedBy[dedup.ReasonNearDuplicate], st.Clusters)
	fmt.Fprintf(o.Stdout, "  banding: %s at threshold %.2f with %d permutations (%s shingles, n=%d); backend %s, verify %s\n",
		st.Bands, o.Config.Threshold, o.Config.NumPerm, o.Config.Shingle, o.Config.NGram, st.Backend, o.Config.Verify)
	if st.ReusedSigs > 0 {
		fmt.Fprintf(o.Stdout, "  reused %d stored signatures\n", st.ReusedSigs)
	}
	if len(src.dups) > 0 {
		fmt.Fprintf(o.Stdout, "  %d rows repeated an earlier row's id: kept the first, the rest are duplicate_id rejections\n", len(src.dups))
	}
	fmt.Fprintf(o.Stdout, "  candidate pairs %d, verified %d; output: %s (%s)\n", st.CandidatePairs, st.VerifiedPairs, o.Out,
		strings.Join([]string{"kept-*.parquet", "rejections-*.parquet", "manifest.json"}, ", "))
	return nil
}
