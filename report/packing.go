package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack"
)

// packedRow projects both packed layouts onto the columns that give row and
// sample lengths: Megatron rows have loss_mask (one entry per token) and
// seq_start_id; TRL rows have seq_lengths.
type packedRow struct {
	SeqStartID []int32 `arrow:"seq_start_id"`
	SeqLengths []int32 `arrow:"seq_lengths"`
	LossMask   []int8  `arrow:"loss_mask"`
}

type droppedRow struct {
	Domain string `arrow:"domain"`
	Tokens int64  `arrow:"tokens"`
}

// collectPacking describes the last stage that wrote "packed" shards. The
// pack stage's own manifest (pack-manifest.json) gives the layout, B and
// per-group drop statistics; without it the figures come from the shards
// and the stage's counters alone.
func (r *Report) collectPacking(ctx context.Context, stages []stageOut) error {
	var so *stageOut
	var sr *StageReport
	for i := range stages {
		if len(stages[i].out.Shards(pack.KindPacked)) > 0 {
			so, sr = &stages[i], &r.Stages[i]
		}
	}
	if so == nil {
		r.Notes = append(r.Notes, "no stage wrote packed rows: packing section is empty")
		return nil
	}
	p := &Packing{Stage: so.name, SamplesIn: sr.Counts["samples_in"], Packed: sr.Counts["packed"],
		Dropped: sr.Counts["dropped_too_long"], Rejected: sr.Counts["rejected"], Rows: sr.Rows[pack.KindPacked],
		TokensPacked: sr.Counts["tokens_packed"], FillRatio: float64(sr.Counts["fill_ppm"]) / 1e6}
	pm, err := readPackManifest(so.out.Dir)
	if err != nil {
		return err
	}
	switch {
	case pm == nil:
		r.Notes = append(r.Notes, fmt.Sprintf("stage %s has no %s: layout, seq_len and per-domain sample counts unknown", so.name, pack.ManifestFile))
	case len(so.out.Parts) > 1:
		// Every shard part of a sharded pack stage writes the same
		// pack-manifest.json, so it holds one part's counts: take only the
		// settings from it; counts come from the summed stage counters.
		p.Layout, p.SeqLen = pm.Layout, int64(pm.SeqLen)
		pm.Groups = nil
		r.Notes = append(r.Notes, fmt.Sprintf("stage %s ran in %d shard parts: per-domain sample counts unknown (dropped counts are exact)", so.name, len(so.out.Parts)))
	default:
		p.Layout, p.SeqLen, p.FillRatio = pm.Layout, int64(pm.SeqLen), pm.FillRatio
		p.SamplesIn, p.Rejected = pm.Counts.SamplesIn, pm.Counts.Rejected
	}

	var before, after []float64
	var packedSamples, packedTokens int64
	for _, path := range so.out.Shards(pack.KindPacked) {
		err := scanRows(ctx, path, func(rows []packedRow) error {
			for _, row := range rows {
				var n int64
				if row.LossMask != nil || row.SeqStartID != nil { // Megatron
					n = int64(len(row.LossMask))
					for k, s := range row.SeqStartID {
						end := n
						if k+1 < len(row.SeqStartID) {
							end = int64(row.SeqStartID[k+1])
						}
						before = append(before, float64(end-int64(s)))
					}
					packedSamples += int64(len(row.SeqStartID))
				} else { // TRL
					for _, l := range row.SeqLengths {
						n += int64(l)
						before = append(before, float64(l))
					}
					packedSamples += int64(len(row.SeqLengths))
				}
				packedTokens += n
				after = append(after, float64(n))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	drops := map[string]*DomainDrop{}
	var droppedN, droppedTokens int64
	for _, path := range so.out.Shards(pack.KindDropped) {
		err := scanRows(ctx, path, func(rows []droppedRow) error {
			for _, d := range rows {
				before = append(before, float64(d.Tokens))
				droppedN++
				droppedTokens += d.Tokens
				dd := dropFor(drops, orDash(d.Domain))
				dd.Dropped++
				dd.DroppedTokens += d.Tokens
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The shards are the truth; the counters only fill what shards lack.
	p.Packed, p.TokensPacked, p.Dropped, p.TokensDropped = packedSamples, packedTokens, droppedN, droppedTokens
	if pm != nil {
		for _, g := range pm.Groups {
			dropFor(drops, orDash(g.Domain)).Samples += g.Samples
		}
	}
	if p.SeqLen > 0 && p.Rows > 0 {
		p.FillRatio = float64(packedTokens) / float64(p.Rows*p.SeqLen)
	}
	for _, d := range drops {
		if d.Samples > 0 {
			d.DroppedShare = float64(d.Dropped) / float64(d.Samples)
		}
		p.Drops = append(p.Drops, *d)
	}
	sort.Slice(p.Drops, func(i, j int) bool { return p.Drops[i].Domain < p.Drops[j].Domain })
	p.Before, p.After = distOf(before, 24), distOf(after, 24)
	r.Packing = p
	return nil
}

func dropFor(m map[string]*DomainDrop, domain string) *DomainDrop {
	d := m[domain]
	if d == nil {
		d = &DomainDrop{Domain: domain}
		m[domain] = d
	}
	return d
}

func readPackManifest(dir string) (*pack.Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, pack.ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	var m pack.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrInput, filepath.Join(dir, pack.ManifestFile), err)
	}
	return &m, nil
}
