package pack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"

	gojson "github.com/goccy/go-json"
	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// PlanFile is the plan stage's JSON summary (counts, fill, per-group drops).
const PlanFile = "pack-plan.json"

// runPackPlan plans the packing of every sample. It holds one LengthRow per
// sample (ids, source position, token counts: tens of bytes, the only
// columns of the lengths shards it reads), since the plan is global — it
// restores the global input order across parts, drops repeated ids and
// bin-packs all samples at once; the token ids stay on disk until the
// pack parts read them.
func runPackPlan(ctx context.Context, sc *engine.StageContext, cfg ShardConfig, env *packEnv) error {
	if err := readMeta(sc, sc.InputPaths(KindPackMeta), env.meta, false); err != nil {
		return err
	}
	rows, err := engine.ReadInputs[LengthRow](sc, KindPackLengths)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Global input order, whatever order the parts came in.
	slices.SortStableFunc(rows, func(a, b LengthRow) int { return sourceOrder(&a, &b) })

	m := &Manifest{Version: 1, Layout: cfg.Layout, Algorithm: cfg.Algorithm, SeqLen: cfg.SeqLen, Seed: cfg.Seed,
		Tokenizer: TokenizerInfo{Spec: cfg.Tokenizer, ID: env.meta.TokenizerID, FileHash: env.meta.TokenizerHash,
			VocabSize: env.r.tok.VocabSize(), Added: env.r.Added(), Pipeline: env.r.tok.Describe()},
		TemplateHash: env.meta.TemplateHash, Template: cfg.template()}
	upstreamRejected := sc.InputRows(KindRejections)
	m.Counts.SamplesIn = int64(len(rows)) + upstreamRejected
	m.Counts.Rejected = upstreamRejected
	groups := groupTally{}
	seen := make(map[string]struct{}, len(rows))
	var kept []int
	var dropped []DroppedRow
	var dups []engine.Rejection
	for i := range rows {
		r := &rows[i]
		// Of several samples with one id only the first in input order is
		// kept, as in the single-process stage (the audit needs unique ids).
		if _, dup := seen[r.DocID]; dup {
			dups = append(dups, engine.Rejection{ItemID: r.DocID, Stage: "pack", Gate: "render", Reason: "duplicate_id",
				Detail: fmt.Sprintf("%s#%d: id %s already seen earlier in the input", r.Source, r.Row, r.DocID)})
			continue
		}
		seen[r.DocID] = struct{}{}
		over := r.Dropped || r.Tokens > int64(cfg.SeqLen)
		groups.add(r.Domain, r.Family, r.Tokens, over)
		if over {
			m.Counts.Dropped++
			m.Counts.TokensDropped += r.Tokens
			dropped = append(dropped, DroppedRow{ID: r.DocID, Domain: r.Domain, Family: r.Family,
				Source: fmt.Sprintf("%s#%d", r.Source, r.Row), Tokens: r.Tokens, TrainedTokens: r.TrainedTokens})
			continue
		}
		m.Counts.Packed++
		m.Counts.TokensPacked += r.Tokens
		m.Counts.TokensTrained += r.TrainedTokens
		kept = append(kept, i)
	}
	m.Counts.Rejected += int64(len(dups))
	if len(dups) > 0 {
		m.Counts.RejectedByReason = map[string]int64{"duplicate_id": int64(len(dups))}
	}
	m.Groups = append(m.Groups, groups.stats()...)

	lengths := make([]int, len(kept))
	for i, k := range kept {
		lengths[i] = int(rows[k].Tokens)
	}
	bins, err := PackLengths(lengths, cfg.SeqLen, cfg.Algorithm, cfg.Seed)
	if err != nil {
		return err
	}
	m.FillRatio = FillRatio(lengths, bins, cfg.SeqLen)
	m.Counts.Rows = int64(len(bins))

	if err := writeMeta(sc, env.meta); err != nil {
		return err
	}
	pw, err := engine.StageWriter[PlanRow](sc, KindPackPlan)
	if err != nil {
		return err
	}
	for b, bin := range bins {
		pr := PlanRow{RowIndex: int64(b)}
		for _, s := range bin {
			r := &rows[kept[s]]
			pr.DocIDs = append(pr.DocIDs, r.DocID)
			pr.Sources = append(pr.Sources, r.Source)
			pr.FromFile = append(pr.FromFile, r.FromFile)
			pr.SourceRows = append(pr.SourceRows, r.Row)
			pr.Tokens = append(pr.Tokens, r.Tokens)
		}
		if err := pw.Write(pr); err != nil {
			return err
		}
	}
	if len(dropped) > 0 {
		if _, err := writeAll(target{sc: sc}, KindDropped, dropped); err != nil {
			return err
		}
	}
	if len(dups) > 0 {
		if _, err := writeAll(target{sc: sc}, KindRejections, dups); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := engine.WriteFileAtomic(filepath.Join(sc.Dir, PlanFile), append(data, '\n')); err != nil {
		return err
	}
	sc.Log.Info("pack_plan: planned", "samples", len(rows), "rows", len(bins), "dropped_too_long", len(dropped), "fill", m.FillRatio)
	sc.Count("samples_in", m.Counts.SamplesIn)
	sc.Count("rejected", m.Counts.Rejected)
	sc.Count("packed", m.Counts.Packed)
	sc.Count("dropped_too_long", m.Counts.Dropped)
	sc.Count("rows", m.Counts.Rows)
	sc.Count("tokens_packed", m.Counts.TokensPacked)
	sc.Count("fill_ppm", int64(m.FillRatio*1e6))
	return nil
}

// planInputs are the pack_plan stage's plan and meta shards: a broadcast
// input (every part of pack_write is handed all of them by the runner,
// checked against their manifest), from exactly one upstream stage, which
// `plan:` may name.
func planInputs(sc *engine.StageContext, cfg ShardConfig) (name string, plan, meta []string, err error) {
	for _, in := range append(sc.Inputs(KindPackPlan), sc.Inputs(KindPackMeta)...) {
		if name != "" && name != in.Stage {
			return "", nil, nil, fmt.Errorf("%w: stage %s reads two upstream stages (%s, %s); pack_write reads exactly one pack_plan stage", ErrConfig, sc.Name, name, in.Stage)
		}
		name = in.Stage
		if in.Kind == KindPackPlan {
			plan = append(plan, in.Path)
		} else {
			meta = append(meta, in.Path)
		}
	}
	switch {
	case name == "":
		return "", nil, nil, fmt.Errorf("%w: stage %s: no pack_plan input: list the pack_plan stage in from:", ErrConfig, sc.Name)
	case cfg.Plan != "" && cfg.Plan != defaultPlanStage && cfg.Plan != name:
		return "", nil, nil, fmt.Errorf("%w: stage %s: plan: %s, but the pack_plan stage in from: is %s", ErrConfig, sc.Name, cfg.Plan, name)
	}
	return name, plan, meta, nil
}

// writerDoc is one sample a pack_write part renders.
type writerDoc struct {
	id     string
	tokens int64
	traj   Trajectory
	packed []uint32
	found  bool
}

func runPackWrite(ctx context.Context, sc *engine.StageContext, cfg ShardConfig, env *packEnv) error {
	dir, planPaths, metaPaths, err := planInputs(sc, cfg)
	if err != nil {
		return err
	}
	if err := readMeta(sc, metaPaths, env.meta, true); err != nil {
		return err
	}
	plan, err := engine.ReadAll[PlanRow](planPaths...)
	if err != nil {
		return err
	}
	slices.SortFunc(plan, func(a, b PlanRow) int { return cmp.Compare(a.RowIndex, b.RowIndex) })
	for i, p := range plan {
		if p.RowIndex != int64(i) || len(p.DocIDs) == 0 || len(p.Sources) != len(p.DocIDs) ||
			len(p.FromFile) != len(p.DocIDs) || len(p.SourceRows) != len(p.DocIDs) || len(p.Tokens) != len(p.DocIDs) {
			return fmt.Errorf("%w: plan %s: row %d (row_index %d) is malformed or out of sequence", ErrInput, dir, i, p.RowIndex)
		}
	}
	// A contiguous range of plan rows per part: reading the parts in order
	// gives the plan order, as one writer would have written it.
	sh := sc.Shard
	if sh.Count < 1 {
		sh = engine.Shard{Index: 0, Count: 1}
	}
	lo, hi := sh.Index*len(plan)/sh.Count, (sh.Index+1)*len(plan)/sh.Count
	mine := plan[lo:hi]

	work := sc.WorkDir()
	var docs []*writerDoc
	bySource := map[string]map[int64]*writerDoc{}
	for _, p := range mine {
		for k := range p.DocIDs {
			d := &writerDoc{id: p.DocIDs[k], tokens: p.Tokens[k]}
			docs = append(docs, d)
			path := resolveSource(work, p.Sources[k], p.FromFile[k])
			if bySource[path] == nil {
				bySource[path] = map[int64]*writerDoc{}
			}
			bySource[path][p.SourceRows[k]] = d
		}
	}
	paths := make([]string, 0, len(bySource))
	for p := range bySource {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := readPlannedRows(ctx, p, bySource[p]); err != nil {
			return err
		}
	}
	if err := renderDocs(ctx, env.r, docs, cfg.workers()); err != nil {
		return err
	}
	var tokens int64
	b := &rowBuilder{layout: cfg.Layout}
	write := func(emit func() error) error {
		i := 0
		for _, p := range mine {
			b.reset()
			for range p.DocIDs {
				b.add(docs[i].id, docs[i].packed)
				tokens += int64(len(docs[i].packed))
				i++
			}
			if err := emit(); err != nil {
				return err
			}
		}
		return nil
	}
	switch cfg.Layout {
	case LayoutMegatron:
		w, err := engine.StageWriter[MegatronRow](sc, KindPacked)
		if err != nil {
			return err
		}
		err = write(func() error { return w.Write(b.meg) })
		if err != nil {
			return err
		}
	case LayoutTRL:
		w, err := engine.StageWriter[TRLRow](sc, KindPacked)
		if err != nil {
			return err
		}
		if err := write(func() error { return w.Write(b.trl) }); err != nil {
			return err
		}
	}
	sc.Log.Info("pack_write: written", "rows", len(mine), "first_row", lo, "samples", len(docs), "tokens", tokens)
	sc.Count("rows", int64(len(mine)))
	sc.Count("packed", int64(len(docs)))
	sc.Count("tokens_packed", tokens)
	return nil
}

// readPlannedRows reads the trajectories of want (by Parquet row index or
// JSONL line number) from one source file, checking their ids.
func readPlannedRows(ctx context.Context, path string, want map[int64]*writerDoc) error {
	take := func(row int64, t Trajectory) error {
		d := want[row]
		if d == nil {
			return nil
		}
		if t.ID != d.id {
			return fmt.Errorf("%w: %s row %d has id %q, the plan expects %q (input changed since the plan?)", ErrInput, path, row, t.ID, d.id)
		}
		d.traj, d.found = t, true
		return nil
	}
	if engine.IsParquet(path) {
		pr, err := engine.OpenParquet[Trajectory](ctx, path, nil)
		if err != nil {
			return err
		}
		defer pr.Close()
		var row int64
		for {
			rows, err := pr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			for i := range rows {
				if err := take(row, rows[i]); err != nil {
					return err
				}
				row++
			}
		}
	} else {
		err := engine.ScanJSONL(path, func(line int64, raw []byte) error {
			if want[line] == nil {
				return nil
			}
			var t Trajectory
			if err := gojson.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("%w: %s:%d: %v", ErrInput, path, line, err)
			}
			return take(line, t)
		}, func(*engine.JSONLError) {})
		if err != nil {
			return err
		}
	}
	for row, d := range want {
		if !d.found {
			return fmt.Errorf("%w: %s has no row %d (doc %s in the plan; input changed since the plan?)", ErrInput, path, row, d.id)
		}
	}
	return nil
}

// renderDocs renders every doc on workers goroutines (one encoder each) and
// checks each length against the plan.
func renderDocs(ctx context.Context, r *Renderer, docs []*writerDoc, workers int) error {
	g, ctx := errgroup.WithContext(ctx)
	for w := 0; w < workers; w++ {
		lo, hi := w*len(docs)/workers, (w+1)*len(docs)/workers
		g.Go(func() error {
			enc := r.tok.NewEncoder()
			for i, d := range docs[lo:hi] {
				if i%64 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				p, err := r.RenderPacked(enc, nil, &d.traj)
				if err != nil {
					return fmt.Errorf("%w: doc %s rendered when planned, now: %v", ErrInput, d.id, err)
				}
				if int64(len(p)) != d.tokens {
					return fmt.Errorf("%w: doc %s renders to %d tokens, the plan says %d (config or input changed since the plan?)", ErrInput, d.id, len(p), d.tokens)
				}
				d.packed, d.traj = p, Trajectory{}
			}
			return nil
		})
	}
	return g.Wait()
}
