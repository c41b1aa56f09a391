package decontam

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
)

// The decontam stage's behavioural pass (StageConfig.Methods behavioural):
// the items' designs run against every benchmark problem of their interface
// shape through the benchmark's own harness, as `decontam check` does. The
// judge is the RTL verifier the stage's rtl block configures, built the way
// the verify_rtl stage builds it (rtl.StageConfig.VerifierConfig), unless
// RegisterStages was given one.

// StageOption configures the decontam stage type (RegisterStages).
type StageOption func(*stageDeps)

type stageDeps struct {
	judge       engine.Judge
	kernelJudge engine.Judge
	extract     Extractor
}

// WithJudge makes behavioural matching judge with j instead of an RTL
// verifier built from the stage's rtl block: a caller that shares one
// verifier pool between stages, or a test.
func WithJudge(j engine.Judge) StageOption { return func(d *stageDeps) { d.judge = j } }

// WithKernelJudge makes kernel problems judged with j instead of a kernel
// verifier built from the stage's kernel block.
func WithKernelJudge(j engine.Judge) StageOption { return func(d *stageDeps) { d.kernelJudge = j } }

// WithExtractor replaces the interface reader (default Yosys,
// rtl.ExtractInterface); without Yosys on PATH a stage asking for
// behavioural matching fails unless one is given.
func WithExtractor(x Extractor) StageOption { return func(d *stageDeps) { d.extract = x } }

// verdicts collects what the stage's passes found per item id.
type verdicts struct {
	mu       sync.Mutex
	worst    map[string]Match  // contaminated item → its highest-scoring match
	unjudged map[string]string // item → the first unjudged pair, "benchmark/problem: why"
}

func newVerdicts() *verdicts {
	return &verdicts{worst: map[string]Match{}, unjudged: map[string]string{}}
}

// add keeps m when it is contamination scoring above the item's match so
// far (a behavioural match scores 1, so it wins over all but an exact copy).
func (v *verdicts) add(m Match) {
	if !m.Contaminated {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.worst[m.CorpusID]; !ok || m.Score > w.Score {
		v.worst[m.CorpusID] = m
	}
}

// behaviouralCache builds the benchmark side (Yosys reads every problem's
// interface) once per stage, not once per part.
type behaviouralCache struct {
	mu      sync.Mutex
	benches []BehaviouralBenchmark
}

func (c *behaviouralCache) get(ctx context.Context, specs []BenchmarkSpec, cfg BehaviouralConfig) ([]BehaviouralBenchmark, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.benches != nil {
		return c.benches, nil
	}
	b, err := OpenBehaviouralBenchmarks(ctx, specs, cfg)
	if err == nil {
		c.benches = b // errors are not cached: a cancelled part must not fail the next
	}
	return b, err
}

// verifierConfigs are the verifiers a behavioural stage may build.
type verifierConfigs struct {
	rtl    rtl.Config
	kernel kernels.Config
}

// runBehaviouralPass runs the behavioural pass over one part's items,
// writing each match and recording it (and every unjudged pair) in v. The
// RTL verifier is built (and Icarus and Yosys required) only when a
// benchmark has RTL problems, the kernel verifier only when one has kernel
// problems and the part has kernel items.
func runBehaviouralPass(ctx context.Context, sc *engine.StageContext, cfg StageConfig, vc verifierConfigs, deps stageDeps, cache *behaviouralCache,
	src itemRecords, matches *engine.ShardWriter[Match], v *verdicts) error {
	log := sc.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bcfg := BehaviouralConfig{MaxMappings: cfg.MaxMappings, Workers: cfg.Workers, Extract: deps.extract,
		Unjudged: func(_ int64, corpusID, benchID, why string) {
			v.mu.Lock()
			defer v.mu.Unlock()
			if _, ok := v.unjudged[corpusID]; !ok {
				v.unjudged[corpusID] = benchID + ": " + why
			}
		}}
	bcfg.defaults()
	benches, err := cache.get(ctx, cfg.Benchmarks, bcfg)
	if err != nil {
		return err
	}
	var rtlIx, kernelIx []*BehaviouralIndex
	for _, b := range benches {
		if b.NotRun != "" {
			log.Info("decontam: benchmark not matched behaviourally", "benchmark", b.Spec.Path, "why", b.NotRun)
		}
		if b.Index != nil {
			for _, sk := range b.Index.Skipped {
				log.Warn("decontam: benchmark problem not matched behaviourally (interface unreadable)", "problem", sk)
			}
			rtlIx = append(rtlIx, b.Index)
		}
		if b.Kernels != nil {
			kernelIx = append(kernelIx, b.Kernels)
		}
	}
	if len(rtlIx)+len(kernelIx) == 0 {
		return fmt.Errorf("%w: stage %s: methods: behavioural, but no benchmark carries executable problems (a benchmark file with RTL harness and reference rows, or CPU kernel tasks)", ErrConfig, sc.Name)
	}
	report := func(s BehaviouralSummary) error {
		for k, n := range s.Counts(false) {
			sc.Count("behavioural."+k, n)
		}
		log.Info("decontam behavioural", "benchmark", s.Benchmark, "designs", s.Designs, "pairs_pruned", s.PairsPruned,
			"pairs_compatible", s.PairsCompatible, "simulations", s.Simulations, "matches", s.Matches, "unjudged", s.Unjudged+s.InterfaceUnjudged,
			"wall_ms", s.Wall.Milliseconds())
		for _, u := range s.UnjudgedSample {
			log.Warn("decontam: unjudged behavioural simulation", "what", u)
		}
		return nil
	}
	found := func(_ int64, m Match) error {
		v.add(m)
		return matches.Write(m)
	}
	if len(rtlIx) > 0 {
		judge, done, err := stageJudge(ctx, sc, deps.judge, func() (engine.Judge, error) {
			vc.rtl.Logger = log
			return rtl.NewVerifier(vc.rtl)
		}, deps.extract == nil)
		if err != nil {
			return err
		}
		defer done()
		sums, err := CheckBehaviouralAll(ctx, rtlIx, judge, src, bcfg, func(_ int, r int64, m Match) error { return found(r, m) })
		if err != nil {
			return err
		}
		for _, s := range sums {
			if err := report(s); err != nil {
				return err
			}
		}
	}
	if len(kernelIx) == 0 {
		return nil
	}
	items, err := engine.ReadInputs[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(items, ExecutableKernel) {
		return nil // no corpus kernel states its arguments: nothing to run
	}
	judge, done, err := stageJudge(ctx, sc, deps.kernelJudge, func() (engine.Judge, error) { return kernels.NewVerifier(vc.kernel, log) }, false)
	if err != nil {
		return err
	}
	defer done()
	for _, kx := range kernelIx {
		s, err := checkKernels(ctx, kx, judge, items, nil, bcfg, found)
		if err != nil {
			return err
		}
		if err := report(s); err != nil {
			return err
		}
	}
	return nil
}

// stageJudge is the injected judge, else the one build makes; either must
// pass its own probe (and Yosys be on PATH when yosys), or the stage fails:
// a behavioural pass that could judge nothing is not a clean one.
func stageJudge(ctx context.Context, sc *engine.StageContext, injected engine.Judge, build func() (engine.Judge, error), yosys bool) (engine.Judge, func(), error) {
	judge, done := injected, func() {}
	if judge == nil {
		j, err := build()
		if err != nil {
			return nil, nil, fmt.Errorf("stage %s: %w", sc.Name, err)
		}
		judge, done = j, func() { j.Close() }
	}
	var tools []string
	if yosys {
		tools = []string{"yosys"}
	}
	if miss := ToolsMissing(ctx, judge, tools...); miss != "" {
		done()
		return nil, nil, fmt.Errorf("%w: stage %s: methods: behavioural cannot run here: %s", ErrConfig, sc.Name, miss)
	}
	return judge, done, nil
}

// Counts are the summary's figures under the names the manifests give
// them (behavioural.NAME in the stage's, behavioural.NAME.BENCHMARK in
// the check command's). withWall adds wall_ms: the command's manifest
// reports one run, while a stage's counts are part of its content hash,
// which must not change with the machine's load (the stage logs its wall
// time instead, and the runner records the stage's seconds).
func (s BehaviouralSummary) Counts(withWall bool) map[string]int64 {
	c := map[string]int64{"matches": s.Matches, "designs": s.Designs, "interface_errors": s.InterfaceErrors,
		"pairs_considered": s.PairsConsidered, "pairs_pruned": s.PairsPruned, "pairs_compatible": s.PairsCompatible,
		"pairs_capped": s.PairsCapped, "simulations": s.Simulations, "unjudged": s.Unjudged, "interface_unjudged": s.InterfaceUnjudged,
		"problems_unreadable": int64(s.SkippedProblems)}
	if withWall {
		c["wall_ms"] = s.Wall.Milliseconds()
	}
	return c
}
