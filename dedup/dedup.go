package dedup

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sync/errgroup"
)

// Survivor priority tiers: within a cluster the document with the lowest
// (tier, input position) survives — a verified reference beats a lineage
// root, which beats any other item; ties go to the earliest.
const (
	TierVerifiedReference uint8 = 0
	TierLineageRoot       uint8 = 1
	TierOther             uint8 = 2
)

// Rejection reasons.
const (
	ReasonExactDuplicate = "exact_duplicate"
	ReasonNearDuplicate  = "near_duplicate"
)

// Stats are the funnel counters and phase timings of a run.
type Stats struct {
	Docs           int64
	Bytes          int64
	EmptyDocs      int64 // no tokens: exact dedup only
	ReusedSigs     int64 // stored signatures used instead of re-tokenising
	Backend        string
	Bands          Bands
	ExactPairs     int64 // exact-hash pairs confirmed
	CandidatePairs int64 // LSH bucket pairs examined
	PrefilterPass  int64 // pairs that passed the signature prefilter (exact mode)
	VerifiedPairs  int64 // pairs accepted as near-duplicates
	Clusters       int64 // components with ≥ 2 documents
	Removed        int64 // documents rejected
	RunBytes       int64 // band records spilled to disk
	// SignTime is phase 1's wall time: reading the source, tokenising,
	// signing and inserting into the index. ReadTime is the part of it the
	// reader goroutine spent in Source.Scan (decoding rows), not counting
	// the time it waited for the signers to take a batch.
	SignTime   time.Duration
	ReadTime   time.Duration
	LSHTime    time.Duration
	VerifyTime time.Duration
	TotalTime  time.Duration
}

// signed is the phase-1 output for one document.
type signed struct {
	exLo, exHi uint64
	sig        []uint64 // nil for empty documents
	keys       []uint64 // band keys
	reused     bool     // came from a stored signature
}

// worker holds per-goroutine scratch so signing allocates nothing per doc.
type worker struct {
	tok      Tokens
	shingles []uint64
	radix    []uint32 // sortUint32's scratch
}

// sign computes the exact hash, signature and band keys of one document into
// out, whose sig/keys slices are preallocated.
func (w *worker) sign(cfg *Config, bands Bands, signer Signer, d *Doc, params string, out *signed) {
	if sg := d.Signature; sg != nil && sg.Params == params && (len(sg.Values) == cfg.NumPerm || len(sg.Values) == 0) {
		out.exLo, out.exHi, out.reused = sg.TextHash[0], sg.TextHash[1], true
		if len(sg.Values) == 0 {
			out.sig, out.keys = nil, out.keys[:0]
			return
		}
		out.sig = append(out.sig[:0], sg.Values...)
		out.keys = BandKeys(out.sig, bands.B, bands.R, out.keys)
		return
	}
	out.reused = false
	text := d.Text
	Tokenize(text, cfg.tokenizeOptions(), &w.tok)
	h := xxh3.Hash128Seed(w.tok.Normalized(), cfg.Seed)
	out.exLo, out.exHi = h.Lo, h.Hi
	w.shingles = AppendShingles(w.shingles[:0], &w.tok, cfg.Shingle, cfg.NGram, cfg.Seed)
	out.sig = signer.Sign(w.shingles, out.sig[:cap(out.sig)])
	if out.sig == nil {
		out.keys = out.keys[:0]
		return
	}
	out.keys = BandKeys(out.sig, bands.B, bands.R, out.keys)
}

// shingleSet returns the sorted distinct shingle hashes of a text.
func (w *worker) shingleSet(cfg *Config, text string) []uint64 {
	Tokenize(text, cfg.tokenizeOptions(), &w.tok)
	w.shingles = AppendShingles(w.shingles[:0], &w.tok, cfg.Shingle, cfg.NGram, cfg.Seed)
	return slices.Clone(SortedSet(w.shingles))
}

// index is the LSH backend: it receives signed documents in input order and
// later reports candidate pairs.
type index interface {
	add(doc int32, s *signed) error
	// pairs calls exact for exact-hash pairs and near for LSH candidates.
	pairs(ctx context.Context, exact func(a, b int32) error, near func(a, b int32) error) error
	signature(doc int32, dst []uint64) ([]uint64, error)
	close()
}

// Run deduplicates src: exact dedup on the normalised text, then MinHash-LSH
// near-dedup, then one survivor per connected component.
func Run(ctx context.Context, src Source, cfg Config, log *slog.Logger) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	bands, err := ChooseBands(cfg.NumPerm, cfg.Threshold, cfg.FPWeight, cfg.FNWeight)
	if err != nil {
		return nil, err
	}
	log.Info("dedup banding", "bands", bands.B, "rows", bands.R, "p_detect_at_threshold", bands.PAtThreshold,
		"threshold", cfg.Threshold, "num_perm", cfg.NumPerm)
	res := &Result{Stats: Stats{Bands: bands}}
	st := &res.Stats

	idx, err := newIndex(ctx, src, cfg, bands, st)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			idx.close()
		}
	}()

	params := cfg.SignatureParams()
	res.params = params
	// Phase 1: a reader goroutine fills batches (decoding is serial) while
	// the previous batch is signed in parallel and committed in input order.
	signer := Signer{K: cfg.NumPerm, Seed: cfg.Seed}
	outs := make([]signed, cfg.BatchDocs)
	for i := range outs {
		outs[i].sig = make([]uint64, cfg.NumPerm)
		outs[i].keys = make([]uint64, 0, bands.B)
	}
	workers := make([]worker, cfg.Workers)
	var tiers []uint8
	process := func(batch []Doc) error {
		var g errgroup.Group
		chunk := (len(batch) + len(workers) - 1) / len(workers)
		for w := range workers {
			lo, hi := w*chunk, min((w+1)*chunk, len(batch))
			if lo >= hi {
				break
			}
			g.Go(func() error {
				for i := lo; i < hi; i++ {
					workers[w].sign(&cfg, bands, signer, &batch[i], params, &outs[i])
				}
				return nil
			})
		}
		g.Wait()
		for i := range batch {
			if len(res.IDs) >= math.MaxInt32 {
				return fmt.Errorf("%w: more than %d documents", ErrInput, math.MaxInt32)
			}
			doc := int32(len(res.IDs))
			st.Docs++
			st.Bytes += int64(len(batch[i].Text))
			res.IDs = append(res.IDs, batch[i].ID)
			tiers = append(tiers, batch[i].Tier)
			res.exLo = append(res.exLo, outs[i].exLo)
			res.exHi = append(res.exHi, outs[i].exHi)
			res.hasSig = append(res.hasSig, outs[i].sig != nil)
			if outs[i].reused {
				st.ReusedSigs++
			}
			if outs[i].sig == nil {
				st.EmptyDocs++
			}
			if err := idx.add(doc, &outs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	batches := make(chan []Doc, 2)
	pg, pctx := errgroup.WithContext(ctx)
	pg.Go(func() error {
		defer close(batches)
		batch := make([]Doc, 0, cfg.BatchDocs)
		var waited time.Duration
		scan0 := time.Now()
		defer func() { st.ReadTime = max(time.Since(scan0)-waited, 0) }()
		send := func() error {
			t := time.Now()
			defer func() { waited += time.Since(t) }()
			select {
			case batches <- batch:
				batch = make([]Doc, 0, cfg.BatchDocs)
				return nil
			case <-pctx.Done():
				return pctx.Err()
			}
		}
		err := src.Scan(pctx, func(d Doc) error {
			batch = append(batch, d)
			if len(batch) == cap(batch) {
				return send()
			}
			return nil
		})
		if err == nil && len(batch) > 0 {
			err = send()
		}
		return err
	})
	pg.Go(func() error {
		for b := range batches {
			if err := process(b); err != nil {
				return err
			}
			if err := pctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err := pg.Wait(); err != nil {
		return nil, err
	}
	st.SignTime = time.Since(start)

	// Phase 2: LSH candidate pairs are collected (deduplicated: a pair that
	// collides in several bands is verified once), then verified in sorted
	// order so signature reads are near-sequential on the disk backend.
	t1 := time.Now()
	n := len(res.IDs)
	uf := newUnionFind(n)
	var cands []uint64 // a<<32|b, a<b
	exact := func(a, b int32) error {
		if res.exLo[a] == res.exLo[b] && res.exHi[a] == res.exHi[b] {
			st.ExactPairs++
			uf.union(a, b)
		}
		return nil
	}
	near := func(a, b int32) error {
		st.CandidatePairs++
		cands = append(cands, uint64(a)<<32|uint64(b))
		return nil
	}
	if err := idx.pairs(ctx, exact, near); err != nil {
		return nil, err
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	st.LSHTime = time.Since(t1)

	t2 := time.Now()
	sigma := math.Sqrt(cfg.Threshold * (1 - cfg.Threshold) / float64(cfg.NumPerm))
	// The exact mode prefilter sits 4σ of the estimator below the threshold
	// (≈0.66 at t=0.8, K=128), so it drops almost no pair whose true
	// similarity reaches the threshold.
	prefilter := cfg.Threshold - 4*sigma
	var sa, sb []uint64
	var stash []uint64
	for i, p := range cands {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a, b := int32(p>>32), int32(uint32(p))
		if uf.find(a) == uf.find(b) {
			continue // already connected (exact twins, or verified path)
		}
		var err error
		if sa, err = idx.signature(a, sa); err != nil {
			return nil, err
		}
		if sb, err = idx.signature(b, sb); err != nil {
			return nil, err
		}
		est := Estimate(sa, sb)
		if cfg.Verify == VerifySignature {
			if est >= cfg.Threshold {
				st.VerifiedPairs++
				uf.union(a, b)
			}
		} else if est >= prefilter {
			stash = append(stash, p)
		}
	}
	if cfg.Verify == VerifyExact && len(stash) > 0 {
		if err := verifyExact(ctx, src, &cfg, stash, n, uf, st); err != nil {
			return nil, err
		}
	}
	st.VerifyTime = time.Since(t2)

	// Survivors: lowest (tier, index) per component.
	res.root = make([]int32, n)
	res.survivor = make([]int32, n)
	res.size = make([]int32, n)
	for i := range n {
		r := uf.find(int32(i))
		res.root[i] = r
		if res.size[r] == 0 {
			res.survivor[r] = int32(i)
		} else if s := res.survivor[r]; tiers[i] < tiers[s] {
			res.survivor[r] = int32(i)
		}
		res.size[r]++
	}
	for i := range n {
		if r := res.root[i]; int32(i) == r && res.size[r] > 1 {
			st.Clusters++
		}
		if r := res.root[i]; res.size[r] > 1 && res.survivor[r] != int32(i) {
			st.Removed++
		}
	}
	st.TotalTime = time.Since(start)
	res.idx, keep = idx, true
	log.Info("dedup done", "docs", st.Docs, "removed", st.Removed, "clusters", st.Clusters,
		"exact_pairs", st.ExactPairs, "candidate_pairs", st.CandidatePairs, "verified_pairs", st.VerifiedPairs,
		"backend", st.Backend, "seconds", st.TotalTime.Seconds())
	return res, nil
}
