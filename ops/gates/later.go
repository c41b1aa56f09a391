package gates

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"github.com/crucible-data/crucible/engine"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// dedupGate removes duplicate tasks among the live candidates. Exact:
// two derived designs with the same normalized reference (comments and
// layout dropped) and the same ports are one task whatever their
// instructions say — the later one goes. Near: dedup.Run over normalized
// reference plus instruction at the configured threshold. Parents are not
// in the pool: an evolved reference is close to its parent by
// construction, and the strength gate has shown that it behaves
// differently; for the same reason the reference alone is not compared
// near-wise (two one-token mutants of one parent are textually close yet
// different tasks).
type dedupGate struct {
	cfg DedupConfig
	log *slog.Logger
}

func (g *dedupGate) Name() string { return GateDedup }

func normalizedRef(src string) string {
	if toks, err := vlog.Lex(src); err == nil {
		return vlog.Normalized(toks)
	}
	return src
}

func (g *dedupGate) Check(ctx context.Context, cands []*Candidate) error {
	first := map[string]string{}
	var live []*Candidate
	for _, c := range cands {
		if c.Item.Route == engine.RouteContractMutation {
			key := normalizedRef(c.Item.Reference) + "\x00" + portList(c.Item.Interface)
			if id, dup := first[key]; dup {
				c.reject(GateDedup, dedup.ReasonExactDuplicate, "same reference and ports as "+id)
				continue
			}
			first[key] = c.Item.ItemID
		}
		live = append(live, c)
	}
	docs := make(dedup.SliceSource, len(live))
	for i, c := range live {
		docs[i] = dedup.Doc{ID: c.Item.ItemID, Text: normalizedRef(c.Item.Reference) + "\n" + c.Item.Instruction, Tier: dedup.TierOther}
	}
	cfg := dedup.DefaultConfig()
	cfg.Threshold, cfg.NGram, cfg.Backend, cfg.Workers = g.cfg.Threshold, g.cfg.NGram, dedup.BackendMemory, 1
	res, err := dedup.Run(ctx, docs, cfg, g.log)
	if err != nil {
		return err
	}
	for i, c := range live {
		if d := res.Decision(i); !d.Kept {
			c.reject(GateDedup, d.Reason, "duplicate of "+d.SurvivorID)
		}
	}
	return nil
}

// difficultyGate measures size (significant tokens of the reference) and
// cost, bounds them, and records them on the item: Cost = the
// deterministic verification work (Candidate.Work), so reruns write the
// same rows; the simulator-seconds bound uses measured time and only
// matters for pathological items. Difficulty = the parent's
// difficulty plus a size term and, for mutations, a closeness term (a
// change that flips few samples is harder to spot). Model-relative
// difficulty comes later from selection.
type difficultyGate struct{ cfg DifficultyConfig }

func (g *difficultyGate) Name() string { return GateDifficulty }

func (g *difficultyGate) Check(_ context.Context, cands []*Candidate) error {
	for _, c := range cands {
		toks := 0
		if ts, err := vlog.Lex(c.Item.Reference); err == nil {
			for _, t := range ts {
				if t.Sig() {
					toks++
				}
			}
		}
		switch {
		case toks < g.cfg.MinTokens:
			c.reject(GateDifficulty, ReasonTooSmall, fmt.Sprintf("reference has %d tokens (min %d)", toks, g.cfg.MinTokens))
			continue
		case toks > g.cfg.MaxTokens:
			c.reject(GateDifficulty, ReasonTooLarge, fmt.Sprintf("reference has %d tokens (max %d)", toks, g.cfg.MaxTokens))
			continue
		case c.SimSeconds > g.cfg.MaxCostSeconds:
			c.reject(GateDifficulty, ReasonTooCostly, fmt.Sprintf("judging took %.1f simulator seconds (max %.1f)", c.SimSeconds, g.cfg.MaxCostSeconds))
			continue
		}
		d := c.Item.Difficulty + math.Log2(float64(toks)+1)/4
		if c.Distance >= 0 {
			d += 1 - c.Distance
		}
		c.Item.Difficulty = math.Round(d*100) / 100
		c.Item.Cost = c.Work
	}
	return nil
}

// composeGate caps admitted items per lineage root, keeping input order,
// so one prolific seed cannot dominate the evolved set.
type composeGate struct{ cfg ComposeConfig }

func (g *composeGate) Name() string { return GateCompose }

func (g *composeGate) Check(_ context.Context, cands []*Candidate) error {
	if g.cfg.LineageCap == 0 {
		return nil
	}
	n := map[string]int{}
	for _, c := range cands {
		n[c.Item.LineageID]++
		if n[c.Item.LineageID] > g.cfg.LineageCap {
			c.reject(GateCompose, ReasonLineageCap, fmt.Sprintf("lineage %s already has %d admitted items", c.Item.LineageID, g.cfg.LineageCap))
		}
	}
	return nil
}
