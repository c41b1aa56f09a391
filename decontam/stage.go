package decontam

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// DefaultBenchmarkFields are the text fields tried on benchmark files when
// none are given (VerilogEval: prompt, ref; KernelBench: code).
var DefaultBenchmarkFields = []string{"prompt", "ref", "code", "instruction", "reference", "text"}

// BenchmarkSpec names one benchmark: a JSONL/Parquet file (indexed on the
// fly) or an index directory built by `crucible decontam index`.
type BenchmarkSpec struct {
	Path    string   `yaml:"path"`
	Name    string   `yaml:"name"`     // defaults to the file name
	IDField string   `yaml:"id_field"` // default "id"
	Fields  []string `yaml:"fields"`   // default DefaultBenchmarkFields (those present)
}

// StageConfig is the "decontam" stage's `config:` block.
type StageConfig struct {
	Config     `yaml:",inline"`
	Benchmarks []BenchmarkSpec `yaml:"benchmarks"`
	Fields     []string        `yaml:"fields"` // item fields checked: instruction, reference (default both)
	Workers    int             `yaml:"workers"`
}

// DefaultStageConfig returns the stage defaults (benchmarks must be set).
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Fields: []string{"instruction", "reference"}, Workers: runtime.GOMAXPROCS(0)}
}

// Validate reports every bad field.
func (c StageConfig) Validate() error {
	var bad []string
	if err := c.Config.Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	if len(c.Benchmarks) == 0 {
		bad = append(bad, "benchmarks: empty")
	}
	for i, b := range c.Benchmarks {
		if b.Path == "" {
			bad = append(bad, fmt.Sprintf("benchmarks[%d].path: empty", i))
		}
	}
	for _, f := range c.Fields {
		if f != "instruction" && f != "reference" {
			bad = append(bad, fmt.Sprintf("fields: %q (want instruction|reference)", f))
		}
	}
	if c.Workers < 1 {
		bad = append(bad, fmt.Sprintf("workers=%d (want ≥1)", c.Workers))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: decontam stage: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// OpenBenchmark opens spec.Path as an index directory, or indexes the file
// into a temporary directory under tmpRoot. cleanup releases it.
func OpenBenchmark(ctx context.Context, cfg Config, spec BenchmarkSpec, tmpRoot string) (*Index, func(), error) {
	if st, err := os.Stat(spec.Path); err == nil && st.IsDir() {
		ix, err := Open(spec.Path)
		if err != nil {
			return nil, nil, err
		}
		if err := compatible(ix.Meta.Config, cfg); err != nil {
			ix.Close()
			return nil, nil, fmt.Errorf("%s: %w", spec.Path, err)
		}
		return ix, func() { ix.Close() }, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("%w: benchmark %s: %v", ErrInput, spec.Path, err)
	}
	name := spec.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(spec.Path), filepath.Ext(spec.Path))
	}
	idf := spec.IDField
	if idf == "" {
		idf = "id"
	}
	fields := spec.Fields
	if len(fields) == 0 {
		fields = DefaultBenchmarkFields
	}
	return BuildTempIndex(ctx, cfg, tmpRoot, name, SideBenchmark, FileRecords{Paths: []string{spec.Path}, IDField: idf, Fields: fields})
}

// compatible checks that a persisted index was built with matching hashing
// parameters; thresholds may differ (the index's are used). The
// document-frequency limit is baked into the index, so a different request
// is refused rather than silently not applied.
func compatible(ix, want Config) error {
	if ix.MaxDocFreq != want.MaxDocFreq {
		return fmt.Errorf("%w: index built with max_doc_freq=%v, requested %v (rebuild the index to change it)", ErrConfig, ix.MaxDocFreq, want.MaxDocFreq)
	}
	if ix.NGram != want.NGram || ix.ShingleN != want.ShingleN || ix.NumPerm != want.NumPerm || ix.Seed != want.Seed {
		return fmt.Errorf("%w: index built with ngram=%d shingle_n=%d num_perm=%d seed=%d, requested %d/%d/%d/%d",
			ErrConfig, ix.NGram, ix.ShingleN, ix.NumPerm, ix.Seed, want.NGram, want.ShingleN, want.NumPerm, want.Seed)
	}
	return nil
}

// itemRecords is a Source over item shards.
type itemRecords struct {
	paths  []string
	fields []string
}

func (s itemRecords) scanItems(ctx context.Context, fn func(it *engine.Item) error) error {
	return engine.ScanRows(ctx, s.paths, fn)
}

func (s itemRecords) Scan(ctx context.Context, fn func(dedup.Record) error) error {
	return s.scanItems(ctx, func(it *engine.Item) error {
		r := dedup.Record{ID: it.ItemID}
		for _, f := range s.fields {
			if text, ok := dedup.ItemField(it, f); ok {
				r.Fields = append(r.Fields, dedup.Field{Name: f, Text: text})
			}
		}
		return fn(r)
	})
}

// RejectionDetail is the JSON in a `contaminated` rejection's Detail.
type RejectionDetail struct {
	Benchmark      string  `json:"benchmark"`
	BenchmarkID    string  `json:"benchmark_id"`
	BenchmarkField string  `json:"benchmark_field"`
	Method         string  `json:"method"`
	Score          float64 `json:"score"`
	LineageID      string  `json:"lineage_id,omitempty"`
	// SharedWith: other benchmark items holding every matched n-gram
	// (Match.SharedWith): the copy may be of any of them.
	SharedWith []string `json:"shared_with,omitempty"`
}

// RegisterStages adds the "decontam" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "decontam", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "rejections", "decontam_matches"},
		Factory: func(scfg engine.StageConfig) (engine.Stage, error) {
			cfg := DefaultStageConfig()
			if err := scfg.Decode(&cfg); err != nil {
				return nil, err
			}
			for i := range cfg.Benchmarks {
				cfg.Benchmarks[i].Path = scfg.Path(cfg.Benchmarks[i].Path)
			}
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error { return runStage(ctx, sc, cfg) }), nil
		}, Doc: "removes items that overlap benchmark items (13-gram lexical/structural overlap, MinHash); rejection reason contaminated with the benchmark id"})
}

func runStage(ctx context.Context, sc *engine.StageContext, cfg StageConfig) error {
	src := itemRecords{paths: sc.InputPaths("items"), fields: cfg.Fields}
	matches, err := engine.StageWriter[Match](sc, "decontam_matches")
	if err != nil {
		return err
	}
	worst := map[string]Match{} // contaminated item → highest-scoring match
	for _, spec := range cfg.Benchmarks {
		ix, cleanup, err := OpenBenchmark(ctx, cfg.Config, spec, "")
		if err != nil {
			return err
		}
		sum, err := Check(ctx, ix, src, cfg.Workers, func(m Match) error {
			if m.Contaminated {
				if w, ok := worst[m.CorpusID]; !ok || m.Score > w.Score {
					worst[m.CorpusID] = m
				}
			}
			return matches.Write(m)
		})
		cleanup()
		if err != nil {
			return err
		}
		if sc.Log != nil {
			sc.Log.Info("decontam", "benchmark", sum.Benchmark, "checked", sum.Queries, "contaminated_items", sum.CorpusItems)
		}
	}
	kept, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	rejected, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	return src.scanItems(ctx, func(it *engine.Item) error {
		m, bad := worst[it.ItemID]
		if !bad {
			sc.Count("kept", 1)
			return kept.Write(*it)
		}
		sc.Count("rejected.contaminated", 1)
		d, _ := json.Marshal(RejectionDetail{Benchmark: m.Benchmark, BenchmarkID: m.BenchmarkID, BenchmarkField: m.BenchmarkField,
			Method: m.Method, Score: m.Score, LineageID: it.LineageID, SharedWith: m.SharedWith})
		return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "decontam", Reason: "contaminated", Detail: string(d)})
	})
}
