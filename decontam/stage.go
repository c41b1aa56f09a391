package decontam

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
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
	// Methods are the matchings run: lexical (n-gram and MinHash overlap)
	// and behavioural (execution against the benchmark's harnesses: RTL
	// problems with Icarus and Yosys, CPU kernel tasks with the kernel
	// verifier; a benchmark index directory holds no harnesses). The
	// default is lexical alone, unlike `decontam check --method auto`: a
	// pipeline's output must not depend on which tools the host happens to
	// have, so behavioural is asked for by name, and a stage asking for it
	// fails where it cannot run instead of silently matching less.
	Methods []string `yaml:"methods"`
	// RTL is the verifier behavioural matching judges with: the verify_rtl
	// stage's block (simulator, limits, retries, strength audit, cache).
	RTL rtl.StageConfig `yaml:"rtl"`
	// Kernel is the verifier kernel problems (CPU kernel tasks in a
	// benchmark of items) are judged with: the verify_kernel stage's block.
	// It is built only when a benchmark has kernel problems.
	Kernel      kernels.StageConfig `yaml:"kernel"`
	MaxMappings int                 `yaml:"max_mappings"` // port mappings tried per pair (DefaultMaxMappings)
	// OnUnjudged rules on an item some of whose behavioural simulations
	// could not be judged (simulator crash, timeout) and none passed:
	// reject (default: reason unjudged; the item is not known clean) or
	// keep (counted in behavioural.unjudged_items either way).
	OnUnjudged string `yaml:"on_unjudged"`
}

// Stage match methods (StageConfig.Methods).
const (
	MethodLexical = "lexical"
	// MethodBehavioural (behavioural.go) is also Match.Method.
)

// Rulings on unjudged items (StageConfig.OnUnjudged).
const (
	UnjudgedReject = "reject"
	UnjudgedKeep   = "keep"
)

// DefaultStageConfig returns the stage defaults (benchmarks must be set).
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Fields: []string{"instruction", "reference"}, Workers: runtime.GOMAXPROCS(0),
		Methods: []string{MethodLexical}, RTL: rtl.DefaultStageConfig(), Kernel: kernels.DefaultStageConfig(), MaxMappings: DefaultMaxMappings, OnUnjudged: UnjudgedReject}
}

// has reports whether the stage runs method.
func (c StageConfig) has(method string) bool { return slices.Contains(c.Methods, method) }

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
	if len(c.Methods) == 0 {
		bad = append(bad, "methods: empty (want lexical and/or behavioural)")
	}
	for i, m := range c.Methods {
		if m != MethodLexical && m != MethodBehavioural {
			bad = append(bad, fmt.Sprintf("methods[%d]: %q (want lexical|behavioural)", i, m))
		}
	}
	if c.MaxMappings < 1 {
		bad = append(bad, fmt.Sprintf("max_mappings=%d (want ≥1)", c.MaxMappings))
	}
	if c.OnUnjudged != UnjudgedReject && c.OnUnjudged != UnjudgedKeep {
		bad = append(bad, fmt.Sprintf("on_unjudged: %q (want reject|keep)", c.OnUnjudged))
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
	name := spec.DisplayName()
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

// RejectionDetail is the JSON in a `contaminated` (or, for behavioural
// matching, `unjudged`) rejection's Detail.
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
	// PortMapping (behavioural): the benchmark port each of the item's
	// design ports played when it passed the benchmark's harness.
	PortMapping string `json:"port_mapping,omitempty"`
	// Unjudged (reason unjudged): the first pair the judge could not judge.
	Unjudged string `json:"unjudged,omitempty"`
}

// RegisterStages adds the "decontam" stage type.
func RegisterStages(reg *engine.Registry, opts ...StageOption) {
	var deps stageDeps
	for _, o := range opts {
		o(&deps)
	}
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
			var vc verifierConfigs
			if cfg.has(MethodBehavioural) {
				var err error
				if vc.rtl, err = cfg.RTL.VerifierConfig(scfg.Path); err != nil && deps.judge == nil {
					return nil, fmt.Errorf("%w: stage %s: rtl: %w", ErrConfig, scfg.Name, err)
				}
				if vc.kernel, err = cfg.Kernel.VerifierConfig(); err != nil && deps.kernelJudge == nil {
					return nil, fmt.Errorf("%w: stage %s: kernel: %w", ErrConfig, scfg.Name, err)
				}
			}
			cache := &behaviouralCache{}
			return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
				return runStage(ctx, sc, cfg, vc, deps, cache)
			}), nil
		}, Doc: "removes items that overlap benchmark items (methods: lexical: 13-gram lexical/structural overlap, MinHash; behavioural: the item's RTL design, or its CPU kernel, passes a benchmark problem's own harness under a port/argument mapping); rejection reason contaminated with the method and benchmark id (unjudged when behavioural matching could not judge an item)"})
}

func runStage(ctx context.Context, sc *engine.StageContext, cfg StageConfig, vc verifierConfigs, deps stageDeps, cache *behaviouralCache) error {
	src := itemRecords{paths: sc.InputPaths("items"), fields: cfg.Fields}
	matches, err := engine.StageWriter[Match](sc, "decontam_matches")
	if err != nil {
		return err
	}
	v := newVerdicts()
	if cfg.has(MethodLexical) {
		if err := runLexicalPass(ctx, sc, cfg, src, matches, v); err != nil {
			return err
		}
	}
	if cfg.has(MethodBehavioural) {
		if err := runBehaviouralPass(ctx, sc, cfg, vc, deps, cache, src, matches, v); err != nil {
			return err
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
		m, bad := v.worst[it.ItemID]
		why, unjudged := v.unjudged[it.ItemID]
		if unjudged && !bad {
			sc.Count("behavioural.unjudged_items", 1)
		}
		switch {
		case bad:
			sc.Count("rejected.contaminated", 1)
			d, _ := json.Marshal(RejectionDetail{Benchmark: m.Benchmark, BenchmarkID: m.BenchmarkID, BenchmarkField: m.BenchmarkField,
				Method: m.Method, Score: m.Score, LineageID: it.LineageID, SharedWith: m.SharedWith, PortMapping: m.PortMapping})
			return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "decontam", Reason: "contaminated", Detail: string(d)})
		case unjudged && cfg.OnUnjudged == UnjudgedReject:
			sc.Count("rejected.unjudged", 1)
			d, _ := json.Marshal(RejectionDetail{Method: MethodBehavioural, LineageID: it.LineageID, Unjudged: why})
			return rejected.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "decontam", Reason: "unjudged", Detail: string(d)})
		}
		sc.Count("kept", 1)
		return kept.Write(*it)
	})
}

// runLexicalPass checks the part's items against every benchmark's n-gram
// and MinHash index.
func runLexicalPass(ctx context.Context, sc *engine.StageContext, cfg StageConfig, src itemRecords, matches *engine.ShardWriter[Match], v *verdicts) error {
	for _, spec := range cfg.Benchmarks {
		ix, cleanup, err := OpenBenchmark(ctx, cfg.Config, spec, "")
		if err != nil {
			return err
		}
		sum, err := Check(ctx, ix, src, cfg.Workers, func(m Match) error {
			v.add(m)
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
	return nil
}
