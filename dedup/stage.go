package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// StageConfig is the "dedup" stage's `config:` block: the dedup Config
// inline plus which item fields are compared.
type StageConfig struct {
	Config `yaml:",inline"`
	// Fields compared per item: instruction, reference (default both, joined).
	Fields []string `yaml:"fields"`
	// DomainFields overrides Fields per item domain, e.g.
	// {rtl: [reference], kernel: [instruction, reference]}.
	DomainFields map[string][]string `yaml:"domain_fields"`
}

// fieldsFor returns the compared fields of an item's domain.
func (c StageConfig) fieldsFor(domain string) []string {
	if f, ok := c.DomainFields[domain]; ok {
		return f
	}
	return c.Fields
}

// DefaultStageConfig returns the stage defaults.
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Fields: []string{"instruction", "reference"}}
}

// Validate reports every bad field.
func (c StageConfig) Validate() error {
	var bad []string
	if err := c.Config.Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	check := func(where string, fields []string) {
		if len(fields) == 0 {
			bad = append(bad, where+": empty (want instruction and/or reference)")
		}
		for _, f := range fields {
			if f != "instruction" && f != "reference" {
				bad = append(bad, fmt.Sprintf("%s: %q (want instruction|reference)", where, f))
			}
		}
	}
	check("fields", c.Fields)
	for d, f := range c.DomainFields {
		if d != engine.DomainRTL && d != engine.DomainKernel {
			bad = append(bad, fmt.Sprintf("domain_fields: unknown domain %q (want rtl|kernel)", d))
		}
		check("domain_fields."+d, f)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: dedup stage: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// ItemText returns the compared text of an item.
func ItemText(it *engine.Item, fields []string) string {
	var parts []string
	for _, f := range fields {
		if text, ok := ItemField(it, f); ok {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// ItemField returns the text of a comparable item field ("instruction" or
// "reference"); ok is false for any other name.
func ItemField(it *engine.Item, name string) (text string, ok bool) {
	switch name {
	case "instruction":
		return it.Instruction, true
	case "reference":
		return it.Reference, true
	}
	return "", false
}

// ItemTier is the survivor priority of an item: verified reference, then
// lineage root (no parent), then any other.
func ItemTier(it *engine.Item) uint8 {
	switch {
	case it.ReferenceStatus == engine.RefVerified:
		return TierVerifiedReference
	case it.ParentID == "":
		return TierLineageRoot
	}
	return TierOther
}

// itemShards is a Source over item shards, streamed a batch at a time.
type itemShards struct {
	paths  []string
	fields func(domain string) []string
}

func (s itemShards) scanItems(ctx context.Context, fn func(it *engine.Item) error) error {
	return engine.ScanRows(ctx, s.paths, fn)
}

func (s itemShards) Scan(ctx context.Context, fn func(d Doc) error) error {
	return s.scanItems(ctx, func(it *engine.Item) error {
		return fn(Doc{ID: it.ItemID, Text: ItemText(it, s.fields(it.Domain)), Tier: ItemTier(it)})
	})
}

// RejectionDetail is the JSON carried in a dedup rejection's Detail: the
// cluster, its survivor and the dropped item's lineage, so composition can
// still count the lineage.
type RejectionDetail struct {
	ClusterID   string `json:"cluster_id"`
	SurvivorID  string `json:"survivor_id"`
	ClusterSize int    `json:"cluster_size"`
	LineageID   string `json:"lineage_id,omitempty"`
	ParentID    string `json:"parent_id,omitempty"`
}

// RegisterStages adds the "dedup" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "dedup", Config: StageConfig{}, Parallelism: engine.Global, Outputs: []string{"items", "rejections"},
		Factory: func(scfg engine.StageConfig) (engine.Stage, error) {
			cfg := DefaultStageConfig()
			if err := scfg.Decode(&cfg); err != nil {
				return nil, err
			}
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return runStage(ctx, sc, cfg) }), nil
		}, Doc: "exact + MinHash-LSH near-dedup of items; duplicates become rejection rows (exact_duplicate|near_duplicate) with cluster and survivor ids"})
}

func runStage(ctx context.Context, sc *engine.StageContext, cfg StageConfig) error {
	src := itemShards{paths: sc.InputPaths("items"), fields: cfg.fieldsFor}
	log := sc.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res, err := Run(ctx, src, cfg.Config, log)
	if err != nil {
		return err
	}
	defer res.Close()
	kept, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	rejected, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	i := 0
	err = src.scanItems(ctx, func(it *engine.Item) error {
		if i >= res.Len() || res.IDs[i] != it.ItemID {
			return fmt.Errorf("%w: item shards changed between dedup passes at row %d", ErrInput, i)
		}
		d := res.Decision(i)
		i++
		if d.Kept {
			sc.Count("kept", 1)
			return kept.Write(*it)
		}
		sc.Count("rejected."+d.Reason, 1)
		detail, _ := json.Marshal(RejectionDetail{ClusterID: d.ClusterID, SurvivorID: d.SurvivorID,
			ClusterSize: d.ClusterSize, LineageID: it.LineageID, ParentID: it.ParentID})
		return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "dedup", Reason: d.Reason, Detail: string(detail)})
	})
	if err != nil {
		return err
	}
	st := res.Stats
	sc.Count("clusters", st.Clusters)
	sc.Count("candidate_pairs", st.CandidatePairs)
	sc.Count("verified_pairs", st.VerifiedPairs)
	log.Info("dedup stage", "banding", st.Bands.String(), "docs", st.Docs, "removed", st.Removed)
	return nil
}
