package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// ManifestFile is the pack manifest's name in the output directory.
const ManifestFile = "pack-manifest.json"

// Shard kinds written by Pack.
const (
	KindPacked     = "packed"
	KindDropped    = "dropped"
	KindRejections = "rejections"
)

// Manifest describes a packed corpus completely enough to audit and to
// reproduce it: tokeniser and template identity, B, seed, counts and fill.
type Manifest struct {
	Version      int                `json:"version"`
	Layout       string             `json:"layout"`
	Algorithm    string             `json:"algorithm"`
	SeqLen       int                `json:"seq_len"`
	Seed         uint64             `json:"seed"`
	Tokenizer    TokenizerInfo      `json:"tokenizer"`
	TemplateHash string             `json:"template_hash"`
	Template     Template           `json:"template"`
	Inputs       []string           `json:"inputs"`
	Counts       Counts             `json:"counts"`
	FillRatio    float64            `json:"fill_ratio"`
	Groups       []GroupStats       `json:"groups"`
	Shards       []engine.ShardInfo `json:"shards"`
}

// TokenizerInfo identifies the tokeniser exactly.
type TokenizerInfo struct {
	Spec      string                   `json:"spec"` // as given: name or path
	ID        string                   `json:"id"`
	FileHash  string                   `json:"file_sha256"`
	VocabSize int                      `json:"vocab_size"` // including added template tokens
	Added     []tokenizer.SpecialToken `json:"added_tokens,omitempty"`
	Pipeline  string                   `json:"pipeline"`
}

// Counts are the sample and token funnel of a pack run.
type Counts struct {
	SamplesIn        int64            `json:"samples_in"`
	Rejected         int64            `json:"rejected"`
	RejectedByReason map[string]int64 `json:"rejected_by_reason,omitempty"`
	Dropped          int64            `json:"dropped_too_long"`
	Packed           int64            `json:"packed"`
	Rows             int64            `json:"rows"`
	TokensPacked     int64            `json:"tokens_packed"`
	TokensTrained    int64            `json:"tokens_trained"`
	TokensDropped    int64            `json:"tokens_dropped"`
}

// GroupStats reports, per domain and family, how much the length cap
// removed, so a cap that silently eats a task family is visible.
type GroupStats struct {
	Domain            string  `json:"domain"`
	Family            string  `json:"family"`
	Samples           int64   `json:"samples"`
	Tokens            int64   `json:"tokens"`
	Dropped           int64   `json:"dropped"`
	DroppedTokens     int64   `json:"dropped_tokens"`
	DroppedShare      float64 `json:"dropped_share"`
	DroppedTokenShare float64 `json:"dropped_token_share"`
}

// target is where shards go: a stage (registered in its manifest) or a plain
// directory for the CLI.
type target struct {
	dir  string
	sc   *engine.StageContext
	opts engine.WriterOptions
}

func openWriter[T any](t target, kind string) (*engine.ShardWriter[T], error) {
	if t.sc != nil {
		return engine.StageWriter[T](t.sc, kind)
	}
	return engine.NewShardWriter[T](t.dir, kind, kind, t.opts)
}

// Run packs the trajectories in inputs (JSONL or Parquet files) into outDir
// and writes the pack manifest there.
func Run(ctx context.Context, cfg Config, inputs []string, outDir string, log *slog.Logger) (*Manifest, error) {
	return RunWithWriter(ctx, cfg, inputs, outDir, engine.DefaultWriterOptions(), log)
}

// RunWithWriter is Run with the shard writer's options (cfg's sizes, when
// set, override opts').
func RunWithWriter(ctx context.Context, cfg Config, inputs []string, outDir string, opts engine.WriterOptions, log *slog.Logger) (*Manifest, error) {
	if cfg.RowGroupBytes > 0 {
		opts.RowGroupBytes = cfg.RowGroupBytes
	}
	if cfg.ShardBytes > 0 {
		opts.ShardBytes = cfg.ShardBytes
	}
	return run(ctx, cfg, inputs, target{dir: outDir, opts: opts}, log)
}

func run(ctx context.Context, cfg Config, inputs []string, out target, log *slog.Logger) (*Manifest, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: no input files", ErrInput)
	}
	tok, err := tokenizer.Load(cfg.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	tmpl := cfg.template()
	r, err := NewRenderer(tok, tmpl)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	// Fingerprint the inputs for the manifest alongside tokenising (a
	// stage's inputs are fingerprinted by the runner instead).
	var refs []engine.InputRef
	var hashErr error
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		if out.sc != nil {
			return
		}
		for _, p := range inputs {
			h, err := engine.HashFile(p)
			if err != nil {
				hashErr = err
				return
			}
			refs = append(refs, engine.InputRef{Kind: "file", Path: p, SHA256: h})
		}
	}()
	c, err := loadCorpus(ctx, inputs, r, cfg.SeqLen, cfg.workers())
	<-hashed
	if err != nil {
		return nil, err
	}
	if hashErr != nil {
		return nil, hashErr
	}
	m := &Manifest{Version: 1, Layout: cfg.Layout, Algorithm: cfg.Algorithm, SeqLen: cfg.SeqLen, Seed: cfg.Seed,
		Tokenizer: TokenizerInfo{Spec: cfg.Tokenizer, ID: tok.ID(), FileHash: tok.FileHash(), VocabSize: tok.VocabSize(),
			Added: r.Added(), Pipeline: tok.Describe()},
		TemplateHash: tmpl.Hash(), Template: tmpl, Inputs: inputs}
	kept, dropped, rejected := classify(c, m)
	log.Info("pack: rendered and tokenised", "samples", m.Counts.SamplesIn, "kept", len(kept),
		"dropped_too_long", m.Counts.Dropped, "rejected", m.Counts.Rejected, "seconds", time.Since(t0).Seconds(), "heap_mib", heapMiB())

	t1 := time.Now()
	lengths := make([]int, len(kept))
	for i, s := range kept {
		lengths[i] = c.samples[s].tokens
	}
	bins, err := PackLengths(lengths, cfg.SeqLen, cfg.Algorithm, cfg.Seed)
	if err != nil {
		return nil, err
	}
	m.FillRatio = FillRatio(lengths, bins, cfg.SeqLen)
	m.Counts.Rows = int64(len(bins))
	log.Info("pack: packed", "rows", len(bins), "fill", m.FillRatio, "seconds", time.Since(t1).Seconds())

	t2 := time.Now()
	shards, err := writeOutputs(ctx, out, cfg.Layout, cfg.workers(), c, kept, bins, dropped, rejected)
	if err != nil {
		return nil, err
	}
	m.Shards = shards
	log.Info("pack: written", "shards", len(shards), "seconds", time.Since(t2).Seconds(), "heap_mib", heapMiB())
	dir := out.dir
	if out.sc != nil {
		dir = out.sc.Dir
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := engine.WriteFileAtomic(filepath.Join(dir, ManifestFile), append(data, '\n')); err != nil {
		return nil, err
	}
	if out.sc == nil {
		// the engine's own manifest too, so `crucible inspect` and
		// downstream tools see the output like any stage's
		cfgJSON, _ := json.Marshal(cfg)
		em := &engine.Manifest{Version: engine.ManifestVersion, Stage: "pack", Type: "pack", ConfigHash: engine.HashString(string(cfgJSON)),
			Inputs: refs, Shards: shards, Counts: map[string]int64{
				"samples_in": m.Counts.SamplesIn, "packed": m.Counts.Packed, "dropped_too_long": m.Counts.Dropped,
				"rejected": m.Counts.Rejected, "rows": m.Counts.Rows, "tokens_packed": m.Counts.TokensPacked}}
		if err := engine.WriteManifest(dir, engine.ManifestName(engine.Shard{}), em); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// classify fills the manifest's counts and group stats and returns the
// indices of kept, dropped and rejected samples. Of several samples with the
// same id only the first is kept; the audit relies on ids being unique.
func classify(c *corpus, m *Manifest) (kept, dropped, rejected []int) {
	groups := groupTally{}
	seen := make(map[string]struct{}, len(c.samples))
	m.Counts.RejectedByReason = map[string]int64{}
	for i := range c.samples {
		s := &c.samples[i]
		m.Counts.SamplesIn++
		if s.reject == nil {
			if _, dup := seen[s.id]; dup {
				s.reject = &RejectError{"duplicate_id", "id " + s.id + " already seen earlier in the input"}
			}
		}
		if s.reject != nil {
			m.Counts.Rejected++
			m.Counts.RejectedByReason[s.reject.Reason]++
			rejected = append(rejected, i)
			continue
		}
		seen[s.id] = struct{}{}
		groups.add(s.domain, s.family, int64(s.tokens), !s.stored)
		if !s.stored {
			m.Counts.Dropped++
			m.Counts.TokensDropped += int64(s.tokens)
			dropped = append(dropped, i)
			continue
		}
		m.Counts.Packed++
		m.Counts.TokensPacked += int64(s.tokens)
		m.Counts.TokensTrained += int64(s.trained)
		kept = append(kept, i)
	}
	m.Groups = append(m.Groups, groups.stats()...)
	return kept, dropped, rejected
}

func writeOutputs(ctx context.Context, out target, layout string, workers int, c *corpus, kept []int, bins [][]int, dropped, rejected []int) ([]engine.ShardInfo, error) {
	var shards []engine.ShardInfo
	var err error
	switch layout {
	case LayoutMegatron:
		shards, err = writePacked(ctx, out, bins, func(b *rowBuilder) MegatronRow { return b.meg }, c, kept, layout)
	case LayoutTRL:
		shards, err = writePacked(ctx, out, bins, func(b *rowBuilder) TRLRow { return b.trl }, c, kept, layout)
	}
	if err != nil {
		return nil, err
	}
	if len(dropped) > 0 {
		rows := make([]DroppedRow, len(dropped))
		for i, k := range dropped {
			s := &c.samples[k]
			rows[i] = DroppedRow{ID: s.id, Domain: s.domain, Family: s.family, Source: s.source, Tokens: int64(s.tokens), TrainedTokens: int64(s.trained)}
		}
		sh, err := writeAll(out, KindDropped, rows)
		if err != nil {
			return nil, err
		}
		shards = append(shards, sh...)
	}
	if len(rejected) > 0 {
		rows := make([]engine.Rejection, len(rejected))
		for i, k := range rejected {
			s := &c.samples[k]
			rows[i] = engine.Rejection{ItemID: s.id, Stage: "pack", Gate: "render", Reason: s.reject.Reason, Detail: s.source + ": " + s.reject.Detail}
		}
		sh, err := writeAll(out, KindRejections, rows)
		if err != nil {
			return nil, err
		}
		shards = append(shards, sh...)
	}
	return shards, nil
}

// packPieces is how many writers write the packed rows at once: encoding
// and compressing Parquet is as costly as tokenising, so the bins are split
// into contiguous ranges written in parallel. A constant, not the core
// count, so the files (where one piece's last file ends) are the same on
// every machine. Two: each piece holds a row group being built and one
// being encoded, and the measured 540M-token run (README) packs with two
// (four pieces cost ≈ 230 MB more peak RSS on a 200 MB corpus here).
const packPieces = 2

// writePacked writes the bins in order, as up to packPieces contiguous
// pieces (at least 32 bins each). In a stage the pieces are the stage's
// piece writers (engine.StagePieceWriters, renamed to one sequence when the
// stage commits); outside one they write packed-PP-* files renamed
// afterwards to packed-NNNNN in bin order, the same names: reading the
// files in name order gives the bins in order.
func writePacked[T any](ctx context.Context, out target, bins [][]int, row func(*rowBuilder) T, c *corpus, kept []int, layout string) ([]engine.ShardInfo, error) {
	parts := 1
	if len(bins) >= 64 {
		parts = min(packPieces, len(bins)/32)
	}
	ws := make([]*engine.ShardWriter[T], parts)
	var pieces *engine.PieceWriters[T]
	var err error
	switch {
	case out.sc != nil:
		if pieces, err = engine.StagePieceWriters[T](out.sc, KindPacked, parts); err == nil {
			for p := range parts {
				ws[p] = pieces.Piece(p)
			}
		}
	case parts == 1:
		ws[0], err = openWriter[T](out, KindPacked)
	default:
		for p := range parts {
			if ws[p], err = engine.NewShardWriter[T](out.dir, fmt.Sprintf("%s-%02d", KindPacked, p), KindPacked, out.opts); err != nil {
				break
			}
		}
	}
	if err != nil {
		for _, w := range ws {
			if w != nil {
				w.Abort()
			}
		}
		return nil, err
	}
	results := make([][]engine.ShardInfo, parts)
	g, ctx := errgroup.WithContext(ctx)
	for p := 0; p < parts; p++ {
		lo, hi := p*len(bins)/parts, (p+1)*len(bins)/parts
		w := ws[p]
		g.Go(func() error {
			b := &rowBuilder{layout: layout}
			for i, bin := range bins[lo:hi] {
				if i%64 == 0 {
					if err := ctx.Err(); err != nil {
						w.Abort()
						return err
					}
				}
				b.reset()
				for _, k := range bin {
					s := &c.samples[kept[k]]
					b.add(s.id, c.store.get(s.loc))
				}
				if err := w.Write(row(b)); err != nil {
					w.Abort()
					return err
				}
			}
			if pieces != nil {
				return nil // closed below, all at once (the pieces are renamed into one sequence)
			}
			var err error
			results[p], err = w.Close()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if pieces != nil {
		return pieces.Close()
	}
	var shards []engine.ShardInfo
	for _, r := range results {
		shards = append(shards, r...)
	}
	if out.sc == nil && parts > 1 {
		// The files are already committed; the pack manifest, written after
		// this, is what makes the output complete, so a crash in between
		// leaves an output that a re-run replaces.
		return engine.RenumberShards(out.dir, KindPacked, shards)
	}
	return shards, nil
}

func writeAll[T any](out target, kind string, rows []T) ([]engine.ShardInfo, error) {
	w, err := openWriter[T](out, kind)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rows...); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Close()
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrAudit}, args...)...)
}

// heapMiB reports the Go heap's live and mapped size for the phase logs.
func heapMiB() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("alloc=%d sys=%d released=%d", ms.HeapAlloc>>20, ms.HeapSys>>20, ms.HeapReleased>>20)
}
