package dedup

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// sigKey is the projection of a SignatureRow the merge keeps per item.
type sigKey struct {
	ItemID string `arrow:"item_id"`
	Tier   int32  `arrow:"tier"`
	Source string `arrow:"source"`
	Row    int64  `arrow:"row"`
}

// sigTable is the merge's per-item memory: ~40 bytes plus the item id,
// independent of num_perm. Index i is the item's position in canonical
// order (upstream stage, shard file, row), which is Run's document index.
type sigTable struct {
	ids     []string
	tiers   []uint8
	src     []int32 // index into sources
	rows    []int64
	sources []string
	srcIdx  map[string]int32
}

func (t *sigTable) add(k sigKey) {
	if t.srcIdx == nil {
		t.srcIdx = map[string]int32{}
	}
	si, ok := t.srcIdx[k.Source]
	if !ok {
		si = int32(len(t.sources))
		t.srcIdx[k.Source] = si
		t.sources = append(t.sources, k.Source)
	}
	t.ids = append(t.ids, k.ItemID)
	t.tiers = append(t.tiers, uint8(k.Tier))
	t.src = append(t.src, si)
	t.rows = append(t.rows, k.Row)
}

func (t *sigTable) source(i int) string { return t.sources[t.src[i]] }

func cmpKey(aSrc string, aRow int64, bSrc string, bRow int64) int {
	if c := strings.Compare(aSrc, bSrc); c != 0 {
		return c
	}
	return cmp.Compare(aRow, bRow)
}

// signatureSource is a Source over stored signatures in canonical order.
// When the signature shards, read in input order, are already canonical
// (dedup_sign split like its upstream, the usual plan) Scan streams them
// from disk; otherwise mem holds every row, sorted. Fetch reads candidate
// items back from their upstream shards, so exact verification gives the
// same answer as the single-process stage.
type signatureSource struct {
	tab     *sigTable
	paths   []string       // streamed when mem is nil
	mem     []SignatureRow // sorted fallback
	work    string
	fields  func(domain string) []string
	params  string
	numPerm int
}

// checkRow rejects signatures made with other parameters (a mismatched
// sign config would silently compare apples with pears) and malformed rows.
func (s *signatureSource) checkRow(r *SignatureRow) (*Signature, error) {
	where := fmt.Sprintf("signature of item %q (%s row %d)", r.ItemID, r.Source, r.Row)
	if r.MinhashParams != s.params {
		return nil, fmt.Errorf("%w: %s: made with %q, this merge uses %q: give dedup_sign and dedup_merge the same config", ErrConfig, where, r.MinhashParams, s.params)
	}
	h, ok := ParseTextHash(r.TextHash)
	if !ok {
		return nil, fmt.Errorf("%w: %s: field text_hash %q is not 32 hex digits", ErrInput, where, r.TextHash)
	}
	if len(r.Minhash) != 0 && len(r.Minhash) != s.numPerm {
		return nil, fmt.Errorf("%w: %s: field minhash has %d slots, want %d", ErrInput, where, len(r.Minhash), s.numPerm)
	}
	sg := &Signature{Params: r.MinhashParams, TextHash: h}
	if len(r.Minhash) > 0 {
		sg.Values = make([]uint64, len(r.Minhash))
		for k, v := range r.Minhash {
			sg.Values[k] = uint64(v)
		}
	}
	return sg, nil
}

// Scan implements Source.
func (s *signatureSource) Scan(ctx context.Context, fn func(d Doc) error) error {
	i := 0
	visit := func(r *SignatureRow) error {
		if i >= len(s.tab.ids) || r.Source != s.tab.source(i) || r.Row != s.tab.rows[i] || r.ItemID != s.tab.ids[i] {
			return fmt.Errorf("%w: signature shards changed during the merge (row %d, %s row %d)", ErrInput, i, r.Source, r.Row)
		}
		sg, err := s.checkRow(r)
		if err != nil {
			return err
		}
		// The table's id string is shared with Run's id list (one copy).
		d := Doc{ID: s.tab.ids[i], Tier: s.tab.tiers[i], Signature: sg}
		i++
		return fn(d)
	}
	if s.mem != nil {
		for k := range s.mem {
			if k%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := visit(&s.mem[k]); err != nil {
				return err
			}
		}
	} else if err := engine.ScanRows(ctx, s.paths, visit); err != nil {
		return err
	}
	if i != len(s.tab.ids) {
		return fmt.Errorf("%w: signature shards changed during the merge (%d rows, %d before)", ErrInput, i, len(s.tab.ids))
	}
	return nil
}

// Fetch implements Fetcher: it reads each upstream shard holding a wanted
// row once, decoding only those shards.
func (s *signatureSource) Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error {
	bySource := map[int32]map[int64]int32{}
	var order []string
	for _, i := range idx {
		if int(i) >= len(s.tab.ids) {
			return fmt.Errorf("%w: fetch %d of %d signatures", ErrInput, i, len(s.tab.ids))
		}
		si := s.tab.src[i]
		m, ok := bySource[si]
		if !ok {
			m = map[int64]int32{}
			bySource[si] = m
			order = append(order, s.tab.sources[si])
		}
		m[s.tab.rows[i]] = i
	}
	slices.Sort(order)
	for _, src := range order {
		want := bySource[s.tab.srcIdx[src]]
		path := filepath.Join(s.work, filepath.FromSlash(src))
		var row int64
		found := 0
		err := engine.ScanRows(ctx, []string{path}, func(it *engine.Item) error {
			i, ok := want[row]
			row++
			if !ok {
				return nil
			}
			found++
			if it.ItemID != s.tab.ids[i] {
				return fmt.Errorf("%w: %s row %d is item %q, its signature says %q: items changed after dedup_sign; re-run it",
					ErrInput, src, row-1, it.ItemID, s.tab.ids[i])
			}
			return fn(i, Doc{ID: it.ItemID, Text: ItemText(it, s.fields(it.Domain)), Tier: s.tab.tiers[i]})
		})
		if err != nil {
			return fmt.Errorf("dedup_merge: read back %s: %w", src, err)
		}
		if found != len(want) {
			return fmt.Errorf("%w: %s has %d rows, signatures reference rows beyond it: items changed after dedup_sign", ErrInput, src, row)
		}
	}
	return nil
}

// loadSignatures builds the merge's source. A first pass reads the order
// keys; when they are already canonical the signatures are streamed, else
// every row is loaded and sorted (documented cost: ~8·num_perm bytes per
// item, when dedup_sign was split unlike its upstream).
func loadSignatures(ctx context.Context, sc *engine.StageContext, cfg StageConfig, log *slog.Logger) (*signatureSource, error) {
	src := &signatureSource{tab: &sigTable{}, paths: sc.InputPaths(KindSignatures), work: sc.WorkDir(),
		fields: cfg.fieldsFor, params: cfg.SignatureParams(), numPerm: cfg.NumPerm}
	sorted := true
	var prev sigKey
	n := 0
	err := engine.ScanRows(ctx, src.paths, func(k *sigKey) error {
		if n > 0 && cmpKey(prev.Source, prev.Row, k.Source, k.Row) >= 0 {
			sorted = false
		}
		prev = *k
		n++
		src.tab.add(*k)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sorted {
		return src, nil
	}
	log.Warn("dedup_merge: signatures are not in canonical order (dedup_sign split unlike its upstream); sorting them in memory",
		"rows", n)
	sc.Count("sorted_in_memory", int64(n))
	rows, err := engine.ReadAll[SignatureRow](src.paths...)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b SignatureRow) int { return cmpKey(a.Source, a.Row, b.Source, b.Row) })
	src.tab = &sigTable{}
	for i := range rows {
		if i > 0 && rows[i].Source == rows[i-1].Source && rows[i].Row == rows[i-1].Row {
			return nil, fmt.Errorf("%w: %s row %d signed twice: a sign part ran over another part's items (shard split changed?)", ErrInput, rows[i].Source, rows[i].Row)
		}
		src.tab.add(sigKey{ItemID: rows[i].ItemID, Tier: rows[i].Tier, Source: rows[i].Source, Row: rows[i].Row})
	}
	src.mem = rows
	return src, nil
}

// runMerge orders every part's signatures canonically — the order the
// single-process stage reads the same upstream items in — and runs the dedup
// core on them.
func runMerge(ctx context.Context, sc *engine.StageContext, cfg StageConfig) error {
	log := sc.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src, err := loadSignatures(ctx, sc, cfg, log)
	if err != nil {
		return err
	}
	res, err := Run(ctx, src, cfg.Config, log)
	if err != nil {
		return err
	}
	defer res.Close()
	src.mem = nil // Run's index holds the signatures now
	out, err := engine.StageWriter[DecisionRow](sc, KindDecisions)
	if err != nil {
		return err
	}
	tab := src.tab
	for i := range tab.ids {
		d := res.Decision(i)
		if d.Kept {
			sc.Count("kept", 1)
		} else {
			sc.Count("rejected."+d.Reason, 1)
		}
		err := out.Write(DecisionRow{ItemID: tab.ids[i], Source: tab.source(i), Row: tab.rows[i], Kept: d.Kept,
			ClusterID: d.ClusterID, ClusterSize: int32(d.ClusterSize), SurvivorID: d.SurvivorID, Reason: d.Reason})
		if err != nil {
			return err
		}
	}
	st := res.Stats
	sc.Count("clusters", st.Clusters)
	sc.Count("candidate_pairs", st.CandidatePairs)
	sc.Count("verified_pairs", st.VerifiedPairs)
	log.Info("dedup merge", "banding", st.Bands.String(), "docs", st.Docs, "removed", st.Removed)
	return nil
}
