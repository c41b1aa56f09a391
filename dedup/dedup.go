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

// Doc is one document to deduplicate.
type Doc struct {
	ID   string
	Text string
	Tier uint8 // survivor priority tier (TierOther when unknown)
	// Signature, when set and made with the run's SignatureParams, is used
	// instead of re-tokenising the text (signatures stored by an earlier
	// run). The text is still needed for exact verification of candidates.
	Signature *Signature
}

// Signature is a stored document signature: the 128-bit hash of the
// normalised text and the OPH MinHash values (nil for an empty document).
type Signature struct {
	Params   string
	TextHash [2]uint64
	Values   []uint64
}

// SignatureParams names everything a signature depends on; a stored
// signature is reused only when it matches exactly.
func (c Config) SignatureParams() string {
	l, _ := ParseLang(string(c.Lang))
	return fmt.Sprintf("oph-v1/k=%d/seed=%d/%s%d/lang=%s/strip=%t/lower=%t", c.NumPerm, c.Seed, c.Shingle, c.NGram, l, c.StripComments, c.Lowercase)
}

// Source yields documents. Scan must visit the same documents in the same
// order every time it is called (exact verification scans twice).
type Source interface {
	Scan(ctx context.Context, fn func(d Doc) error) error
}

// Fetcher is an optional Source extension: random access by input
// position. Exact verification uses it to read back only the documents in
// candidate pairs instead of rescanning the whole source.
type Fetcher interface {
	Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error
}

// SliceSource is an in-memory Source.
type SliceSource []Doc

// Fetch implements Fetcher.
func (s SliceSource) Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error {
	for _, i := range idx {
		if int(i) >= len(s) {
			return fmt.Errorf("%w: fetch %d of %d documents", ErrInput, i, len(s))
		}
		if err := fn(i, s[i]); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Scan implements Source.
func (s SliceSource) Scan(ctx context.Context, fn func(d Doc) error) error {
	for i, d := range s {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

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
	SignTime       time.Duration
	LSHTime        time.Duration
	VerifyTime     time.Duration
	TotalTime      time.Duration
}

// Decision is the outcome for one document.
type Decision struct {
	Index       int
	ID          string
	Kept        bool
	ClusterID   string // empty for singletons
	ClusterSize int
	SurvivorID  string // own ID for survivors and singletons
	Reason      string // exact_duplicate | near_duplicate for removed documents
}

// Result holds per-document outcomes in input order. It keeps the LSH
// index (signatures) open for Signature until Close.
type Result struct {
	IDs      []string
	idx      index
	hasSig   []bool
	params   string
	root     []int32 // component root (smallest index) per document
	survivor []int32 // survivor index, indexed by root
	size     []int32 // component size, indexed by root
	exLo     []uint64
	exHi     []uint64
	Stats    Stats
}

// Len is the number of documents.
func (r *Result) Len() int { return len(r.IDs) }

// Signature returns document i's signature (to store as a column).
func (r *Result) Signature(i int) (Signature, error) {
	s := Signature{Params: r.params, TextHash: [2]uint64{r.exLo[i], r.exHi[i]}}
	if !r.hasSig[i] || r.idx == nil {
		return s, nil
	}
	v, err := r.idx.signature(int32(i), nil)
	s.Values = v
	return s, err
}

// Close releases the index (temporary signature and run files).
func (r *Result) Close() {
	if r.idx != nil {
		r.idx.close()
		r.idx = nil
	}
}

// Decision returns the outcome for document i.
func (r *Result) Decision(i int) Decision {
	root := r.root[i]
	d := Decision{Index: i, ID: r.IDs[i], Kept: true, SurvivorID: r.IDs[i], ClusterSize: int(r.size[root])}
	if d.ClusterSize < 2 {
		d.ClusterSize = 1
		return d
	}
	s := r.survivor[root]
	d.ClusterID = fmt.Sprintf("dup-%08d", root)
	d.SurvivorID = r.IDs[s]
	if int(s) != i {
		d.Kept = false
		d.Reason = ReasonNearDuplicate
		if r.exLo[i] == r.exLo[s] && r.exHi[i] == r.exHi[s] {
			d.Reason = ReasonExactDuplicate
		}
	}
	return d
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

// shingleSet32 is shingleSet truncated to the high 32 bits of each hash,
// halving verification memory. Two distinct shingles of a ~400-shingle
// pair collide with probability ~400²/2³² ≈ 4·10⁻⁵, so the Jaccard value
// moves by far less than the estimator noise the exact check removes.
func (w *worker) shingleSet32(cfg *Config, text string) []uint32 {
	Tokenize(text, cfg.tokenizeOptions(), &w.tok)
	w.shingles = AppendShingles(w.shingles[:0], &w.tok, cfg.Shingle, cfg.NGram, cfg.Seed)
	out := make([]uint32, len(w.shingles))
	for i, h := range w.shingles {
		out[i] = uint32(h >> 32)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func jaccard32(a, b []uint32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
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
		send := func() error {
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

// verifyExact rescans the source for the documents in stashed pairs and
// accepts a pair when the exact Jaccard of its shingle sets reaches the
// threshold. Memory is proportional to the documents in candidate pairs,
// not to the corpus.
func verifyExact(ctx context.Context, src Source, cfg *Config, stash []uint64, n int, uf *unionFind, st *Stats) error {
	st.PrefilterPass = int64(len(stash))
	need := map[int32][]uint32{}
	for _, p := range stash {
		need[int32(p>>32)] = nil
		need[int32(uint32(p))] = nil
	}
	var w worker
	if f, ok := src.(Fetcher); ok {
		idx := make([]int32, 0, len(need))
		for i := range need {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		err := f.Fetch(ctx, idx, func(i int32, d Doc) error {
			need[i] = w.shingleSet32(cfg, d.Text)
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		i := int32(0)
		err := src.Scan(ctx, func(d Doc) error {
			if _, ok := need[i]; ok {
				need[i] = w.shingleSet32(cfg, d.Text)
			}
			i++
			return nil
		})
		if err != nil {
			return err
		}
		if int(i) != n {
			return fmt.Errorf("%w: source yielded %d documents on the verification scan, %d on the first", ErrInput, i, n)
		}
	}
	for _, p := range stash {
		a, b := int32(p>>32), int32(uint32(p))
		if jaccard32(need[a], need[b]) >= cfg.Threshold {
			st.VerifiedPairs++
			uf.union(a, b)
		}
	}
	return nil
}
