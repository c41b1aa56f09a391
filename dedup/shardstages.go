package dedup

// Cross-shard near-dedup as three pipeline stages, so a corpus split with
// `--shard i/N` is deduplicated as one corpus:
//
//	dedup_sign   (sharded)   items → dedup_signatures: text hash + OPH MinHash per item
//	dedup_merge  (unsharded) all signatures → dedup_decisions: exact groups, LSH banding,
//	                         verification, union-find, one survivor per cluster
//	dedup_filter (sharded)   items + decisions → kept items and rejection rows
//
// The merge runs the same Run as the single-process "dedup" stage, fed with
// the stored signatures in a canonical order (upstream stage, shard file,
// row), so its decisions — survivors, cluster ids, reasons — equal what
// "dedup" decides on the same items, however the sign stage was split.
// Memory: the merge streams signatures into Run's index (disk-backed by
// default) and keeps ~40 bytes plus the id per item; only when dedup_sign
// was split unlike its upstream does it sort all signature rows in RAM.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// Output kinds of the shard stages.
const (
	KindSignatures = "dedup_signatures"
	KindDecisions  = "dedup_decisions"
)

// SignatureRow is one item's stored signature (kind "dedup_signatures").
// Source and Row locate the item in its upstream shard; they are the order
// key of the merge and the join key of the filter (item ids need not be
// unique).
type SignatureRow struct {
	ItemID        string  `json:"item_id" arrow:"item_id"`
	LineageID     string  `json:"lineage_id" arrow:"lineage_id"`
	Tier          int32   `json:"tier" arrow:"tier"`     // survivor priority tier (ItemTier)
	Source        string  `json:"source" arrow:"source"` // upstream shard, "<stage>/<file>" relative to the work dir
	Row           int64   `json:"row" arrow:"row"`       // 0-based row in Source
	TextBytes     int64   `json:"text_bytes" arrow:"text_bytes"`
	TextHash      string  `json:"text_hash" arrow:"text_hash"`           // FormatTextHash of the normalised text
	MinhashParams string  `json:"minhash_params" arrow:"minhash_params"` // Config.SignatureParams
	Minhash       []int64 `json:"minhash" arrow:"minhash"`               // OPH slots (uint64 bits); empty for a document without tokens
}

// DecisionRow is the merge's verdict on one item (kind "dedup_decisions").
type DecisionRow struct {
	ItemID      string `json:"item_id" arrow:"item_id"`
	Source      string `json:"source" arrow:"source"`
	Row         int64  `json:"row" arrow:"row"`
	Kept        bool   `json:"kept" arrow:"kept"`
	ClusterID   string `json:"cluster_id" arrow:"cluster_id"` // empty for singletons
	ClusterSize int32  `json:"cluster_size" arrow:"cluster_size"`
	SurvivorID  string `json:"survivor_id" arrow:"survivor_id"`
	Reason      string `json:"reason" arrow:"reason"` // exact_duplicate | near_duplicate when not kept
}

// FilterConfig is the "dedup_filter" stage's `config:` block.
type FilterConfig struct {
	// DecisionsFrom names the dedup_merge stage, which must be listed in
	// `from:`: its dedup_decisions are a broadcast input (every part is
	// handed all of them, checked against their manifest, and a changed
	// merge makes every part stale). Optional when from: has one merge.
	DecisionsFrom string `yaml:"decisions_from"`
}

// Validate reports every bad field.
func (c FilterConfig) Validate() error { return nil }

// RegisterShardStages adds "dedup_sign", "dedup_merge" and "dedup_filter".
func RegisterShardStages(reg *engine.Registry) {
	stageCfg := func(scfg engine.StageConfig) (StageConfig, error) {
		cfg := DefaultStageConfig()
		if err := scfg.Decode(&cfg); err != nil {
			return cfg, err
		}
		return cfg, cfg.Validate()
	}
	reg.RegisterType(engine.StageType{Name: "dedup_sign", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{KindSignatures},
		Factory: func(scfg engine.StageConfig) (engine.Stage, error) {
			cfg, err := stageCfg(scfg)
			if err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return runSign(ctx, sc, cfg) }), nil
		}, Doc: "cross-shard dedup, step 1 (run sharded): text hash and MinHash signature per item (dedup_signatures)"})
	reg.RegisterType(engine.StageType{Name: "dedup_merge", Config: StageConfig{}, Parallelism: engine.Global, Outputs: []string{KindDecisions},
		Factory: func(scfg engine.StageConfig) (engine.Stage, error) {
			cfg, err := stageCfg(scfg)
			if err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return runMerge(ctx, sc, cfg) }), nil
		}, Doc: "cross-shard dedup, step 2 (run unsharded): LSH over all signatures, verification, clusters and survivors (dedup_decisions)"})
	reg.RegisterType(engine.StageType{Name: "dedup_filter", Config: FilterConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "rejections"}, Broadcast: []string{KindDecisions},
		Factory: func(scfg engine.StageConfig) (engine.Stage, error) {
			var cfg FilterConfig
			if err := scfg.Decode(&cfg); err != nil {
				return nil, err
			}
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return runFilter(ctx, sc, cfg) }), nil
		}, Doc: "cross-shard dedup, step 3 (run sharded): keep items the merge kept; duplicates become rejection rows with cluster and survivor ids"})
}

// sourceKey names an input shard relative to the work dir, the same way in
// every stage and on every machine sharing the work dir.
func sourceKey(work string, in engine.InputShard) string {
	rel, err := filepath.Rel(filepath.Join(work, in.Stage), in.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = filepath.Base(in.Path)
	}
	return filepath.ToSlash(filepath.Join(in.Stage, rel))
}

// runSign signs this part's items in batches: items are decoded serially,
// each batch is signed by cfg.Workers goroutines, rows are written in input
// order.
func runSign(ctx context.Context, sc *engine.StageContext, cfg StageConfig) error {
	bands, err := ChooseBands(cfg.NumPerm, cfg.Threshold, cfg.FPWeight, cfg.FNWeight)
	if err != nil {
		return err
	}
	out, err := engine.StageWriter[SignatureRow](sc, KindSignatures)
	if err != nil {
		return err
	}
	params := cfg.SignatureParams()
	signer := Signer{K: cfg.NumPerm, Seed: cfg.Seed}
	workers := make([]worker, cfg.Workers)
	docs := make([]Doc, 0, cfg.BatchDocs)
	rows := make([]SignatureRow, 0, cfg.BatchDocs)
	outs := make([]signed, cfg.BatchDocs)
	for i := range outs {
		outs[i].sig = make([]uint64, cfg.NumPerm)
		outs[i].keys = make([]uint64, 0, bands.B)
	}
	flush := func() error {
		g, _ := errgroup.WithContext(ctx)
		chunk := (len(docs) + len(workers) - 1) / len(workers)
		for w := range workers {
			lo, hi := w*chunk, min((w+1)*chunk, len(docs))
			if lo >= hi {
				break
			}
			g.Go(func() error {
				for i := lo; i < hi; i++ {
					workers[w].sign(&cfg.Config, bands, signer, &docs[i], params, &outs[i])
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for i := range rows {
			rows[i].TextHash = FormatTextHash([2]uint64{outs[i].exLo, outs[i].exHi})
			rows[i].MinhashParams = params
			if outs[i].sig != nil {
				rows[i].Minhash = make([]int64, len(outs[i].sig))
				for k, v := range outs[i].sig {
					rows[i].Minhash[k] = int64(v)
				}
			} else {
				sc.Count("empty_docs", 1)
			}
		}
		sc.Count("signed", int64(len(rows)))
		err := out.Write(rows...)
		docs, rows = docs[:0], rows[:0]
		return err
	}
	work := sc.WorkDir()
	for _, in := range sc.Inputs("items") {
		key := sourceKey(work, in)
		var row int64
		err := engine.ScanRows(ctx, []string{in.Path}, func(it *engine.Item) error {
			text := ItemText(it, cfg.fieldsFor(it.Domain))
			docs = append(docs, Doc{ID: it.ItemID, Text: text, Tier: ItemTier(it)})
			rows = append(rows, SignatureRow{ItemID: it.ItemID, LineageID: it.LineageID, Tier: int32(ItemTier(it)),
				Source: key, Row: row, TextBytes: int64(len(text))})
			row++
			if len(docs) == cfg.BatchDocs {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(docs) > 0 {
		return flush()
	}
	return nil
}

// runFilter applies the merge's decisions to this part's items. Only the
// decisions of this part's upstream shards are kept in memory.
func runFilter(ctx context.Context, sc *engine.StageContext, cfg FilterConfig) error {
	work := sc.WorkDir()
	decShards := sc.Inputs(KindDecisions)
	from := map[string]bool{}
	for _, d := range decShards {
		from[d.Stage] = true
	}
	switch {
	case len(from) == 0:
		return fmt.Errorf("%w: stage %s: no %s input: list the dedup_merge stage in from:", ErrConfig, sc.Name, KindDecisions)
	case len(from) > 1:
		return fmt.Errorf("%w: stage %s: %s from %d stages; list exactly one dedup_merge stage in from:", ErrConfig, sc.Name, KindDecisions, len(from))
	case cfg.DecisionsFrom != "" && !from[cfg.DecisionsFrom]:
		return fmt.Errorf("%w: stage %s: decisions_from %s is not the dedup_merge stage in from: (%s)", ErrConfig, sc.Name, cfg.DecisionsFrom, decShards[0].Stage)
	}
	if cfg.DecisionsFrom == "" {
		cfg.DecisionsFrom = decShards[0].Stage
	}
	decPaths := make([]string, len(decShards))
	for i, d := range decShards {
		decPaths[i] = d.Path
	}
	inputs := sc.Inputs("items")
	mine := map[string]map[int64]DecisionRow{}
	for _, in := range inputs {
		mine[sourceKey(work, in)] = map[int64]DecisionRow{}
	}
	err := engine.ScanRows(ctx, decPaths, func(d *DecisionRow) error {
		if m, ok := mine[d.Source]; ok {
			m[d.Row] = *d
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("decisions_from %s: %w", cfg.DecisionsFrom, err)
	}
	kept, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	rejected, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	for _, in := range inputs {
		key := sourceKey(work, in)
		m := mine[key]
		var row int64
		err := engine.ScanRows(ctx, []string{in.Path}, func(it *engine.Item) error {
			d, ok := m[row]
			row++
			if !ok {
				return fmt.Errorf("%w: %s row %d (item %q): no decision in %s: run dedup_sign and dedup_merge over the same items first",
					ErrInput, key, row-1, it.ItemID, cfg.DecisionsFrom)
			}
			if d.ItemID != it.ItemID {
				return fmt.Errorf("%w: %s row %d is item %q, the decision is for %q: items changed after dedup_merge",
					ErrInput, key, row-1, it.ItemID, d.ItemID)
			}
			if d.Kept {
				sc.Count("kept", 1)
				return kept.Write(*it)
			}
			sc.Count("rejected."+d.Reason, 1)
			detail, _ := json.Marshal(RejectionDetail{ClusterID: d.ClusterID, SurvivorID: d.SurvivorID,
				ClusterSize: int(d.ClusterSize), LineageID: it.LineageID, ParentID: it.ParentID})
			return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "dedup", Reason: d.Reason, Detail: string(detail)})
		})
		if err != nil {
			return err
		}
		if int64(len(m)) != row {
			return fmt.Errorf("%w: %s: %d decisions for %d rows: items changed after dedup_merge", ErrInput, key, len(m), row)
		}
	}
	return nil
}
