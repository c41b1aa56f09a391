package evolve

import (
	"context"
	"fmt"

	"log/slog"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// Output kinds of the evolve stage.
const (
	KindEvolved = "evolved"  // candidate items (engine.Item), for the admit stage
	KindSkipped = "skipped"  // seeds that could not be evolved (engine.Rejection; the seeds themselves still pass)
	KindChatLog = "chat_log" // every generator request/response (textgen.ChatLog), chat generator only
)

// StageConfig is the evolve stage's `config:` block: the evolution config
// plus the verifier used for reference self-checks.
type StageConfig struct {
	Config    `yaml:",inline"`
	Simulator string `yaml:"simulator"`  // icarus | verilator
	CacheDir  string `yaml:"cache_dir"`  // persist reference self-checks
	Retries   int    `yaml:"retries"`    // verifier retries of infrastructure failures; never of findings
	PassSeeds bool   `yaml:"pass_seeds"` // copy the seeds to "items" (default true)
	// Kernel configures the kernel verifier used to self-check kernel
	// references (built only when kernel seeds are present).
	Kernel kernels.Config `yaml:"kernel"`
}

// DefaultStageConfig returns the stage defaults.
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Simulator: rtl.SimIcarus, Retries: rtl.DefaultConfig().Retries, PassSeeds: true, Kernel: kernels.DefaultConfig()}
}

// HasDomain reports whether any item is of the domain.
func HasDomain(items []engine.Item, domain string) bool {
	for _, it := range items {
		if it.Domain == domain {
			return true
		}
	}
	return false
}

// NewJudges is the set a stage judges with: the RTL verifier rv (nil:
// none) and, when items hold kernel tasks, a kernel verifier built from
// kcfg. The caller closes the set.
func NewJudges(rv *rtl.Verifier, kcfg kernels.Config, items []engine.Item, log *slog.Logger) (*engine.Judges, error) {
	var js []engine.Judge
	workers := 0
	if rv != nil {
		js = append(js, rv)
		workers = rv.Config().Workers
	}
	if HasDomain(items, engine.DomainKernel) {
		kv, err := kernels.NewVerifier(kcfg, log)
		if err != nil {
			return nil, err
		}
		js = append(js, kv)
	}
	return engine.NewJudges(workers, js...)
}

// NewGenerator builds the configured generator; sink receives the chat log.
func NewGenerator(cfg Config, sink textgen.LogSink) (textgen.Generator, error) {
	if cfg.Generator == "chat" {
		return textgen.NewChat(cfg.Chat, sink)
	}
	return textgen.Template{}, nil
}

// NewVerifier builds the RTL verifier the stages use.
func NewVerifier(simulator string, workers int, cacheDir string, retries int) (*rtl.Verifier, error) {
	vc := rtl.DefaultConfig()
	vc.Retries = retries
	if simulator != "" {
		vc.Simulator = simulator
	}
	if workers > 0 {
		vc.Workers = workers
	}
	vc.CacheDir = cacheDir
	return rtl.NewVerifier(vc)
}

// RegisterStages adds the "evolve" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "evolve", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{KindEvolved, KindSkipped, "items", KindChatLog},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			sc := DefaultStageConfig()
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			if err := sc.Validate(); err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			if sc.CacheDir != "" {
				sc.CacheDir = c.Path(sc.CacheDir)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error { return runStage(ctx, st, sc) }), nil
		}, Doc: "derives candidate tasks from seeds by route (contract mutation, solution-first, instruction-first); writes evolved, items (seeds), skipped"})
}

// runStage evolves the seeds a batch at a time (engine.ReadBatches):
// evolution is per seed, so what it holds is one batch of seeds and their
// candidates and skips. A first pass reads only the domain column, to know
// before the first batch whether a kernel judge is needed.
func runStage(ctx context.Context, st *engine.StageContext, sc StageConfig) error {
	var kinds []engine.Item // one item per domain present: all NewJudges looks at
	var nSeeds int64
	err := engine.ReadBatches[seedDomain](ctx, st, "items", engine.BatchOptions{}).Each(func(ds []seedDomain) error {
		for _, d := range ds {
			if !HasDomain(kinds, d.Domain) {
				kinds = append(kinds, engine.Item{Domain: d.Domain})
			}
		}
		nSeeds += int64(len(ds))
		return nil
	})
	if err != nil {
		return err
	}
	var sink textgen.LogSink
	if sc.Generator == "chat" {
		w, err := engine.StageWriter[textgen.ChatLog](st, KindChatLog)
		if err != nil {
			return err
		}
		sink = func(l textgen.ChatLog) error { return w.Write(l) }
	}
	gen, err := NewGenerator(sc.Config, sink)
	if err != nil {
		return err
	}
	ver, err := NewVerifier(sc.Simulator, sc.Workers, sc.CacheDir, sc.Retries)
	if err != nil {
		return err
	}
	judges, err := NewJudges(ver, sc.Kernel, kinds, st.Log)
	if err != nil {
		return err
	}
	defer judges.Close()
	e, err := New(sc.Config, gen, judges, st.Log)
	if err != nil {
		return err
	}
	candW, err := engine.StageWriter[engine.Item](st, KindEvolved)
	if err != nil {
		return err
	}
	skipW, err := engine.StageWriter[engine.Rejection](st, KindSkipped)
	if err != nil {
		return err
	}
	var seedW *engine.ShardWriter[engine.Item]
	if sc.PassSeeds {
		if seedW, err = engine.StageWriter[engine.Item](st, "items"); err != nil {
			return err
		}
	}
	p := st.Progress(nSeeds)
	defer p.Done()
	st.Count("seeds", 0) // Evolve's totals, recorded even when there are no seeds
	st.Count("candidates", 0)
	var nCands, nSkipped int
	err = engine.ReadBatches[engine.Item](ctx, st, "items", engine.BatchOptions{}).Each(func(seeds []engine.Item) error {
		res, err := e.Evolve(ctx, seeds)
		if err != nil {
			return err
		}
		p.Add(int64(len(seeds)))
		nCands, nSkipped = nCands+len(res.Candidates), nSkipped+len(res.Skipped)
		for k, v := range res.Counts {
			st.Count(k, v)
		}
		if err := candW.Write(res.Candidates...); err != nil {
			return err
		}
		if err := skipW.Write(res.Skipped...); err != nil {
			return err
		}
		if seedW != nil {
			return seedW.Write(seeds...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.Log.Info("evolve done", "seeds", nSeeds, "candidates", nCands, "skipped", nSkipped)
	return nil
}

// seedDomain is the one column of a seed the first pass reads.
type seedDomain struct {
	Domain string `arrow:"domain"`
}
