package decontam

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/crucible-data/crucible/engine"
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
	judge   engine.Judge
	extract Extractor
}

// WithJudge makes behavioural matching judge with j instead of an RTL
// verifier built from the stage's rtl block: a caller that shares one
// verifier pool between stages, or a test.
func WithJudge(j engine.Judge) StageOption { return func(d *stageDeps) { d.judge = j } }

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

// runBehaviouralPass runs the behavioural pass over one part's items,
// writing each match and recording it (and every unjudged pair) in v.
func runBehaviouralPass(ctx context.Context, sc *engine.StageContext, cfg StageConfig, vcfg rtl.Config, deps stageDeps, cache *behaviouralCache,
	src itemRecords, matches *engine.ShardWriter[Match], v *verdicts) error {
	log := sc.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	judge := deps.judge
	if judge == nil {
		vcfg.Logger = log
		rv, err := rtl.NewVerifier(vcfg)
		if err != nil {
			return fmt.Errorf("stage %s: %w", sc.Name, err)
		}
		defer rv.Close()
		judge = rv
	}
	var tools []string
	if deps.extract == nil {
		tools = []string{"yosys"}
	}
	if miss := ToolsMissing(ctx, judge, tools...); miss != "" {
		return fmt.Errorf("%w: stage %s: methods: behavioural cannot run here: %s", ErrConfig, sc.Name, miss)
	}
	bcfg := BehaviouralConfig{MaxMappings: cfg.MaxMappings, Workers: cfg.Workers, Extract: deps.extract,
		Unjudged: func(_ int64, corpusID, benchID, why string) {
			v.mu.Lock()
			defer v.mu.Unlock()
			if _, ok := v.unjudged[corpusID]; !ok {
				v.unjudged[corpusID] = benchID + ": " + why
			}
		}}
	benches, err := cache.get(ctx, cfg.Benchmarks, bcfg)
	if err != nil {
		return err
	}
	stats, err := engine.StageWriter[BehaviouralStats](sc, KindBehavioural)
	if err != nil {
		return err
	}
	var bxs []*BehaviouralIndex
	for _, b := range benches {
		if b.Index == nil {
			log.Info("decontam: benchmark not matched behaviourally", "benchmark", b.Spec.Path, "why", b.NotRun)
			continue
		}
		for _, sk := range b.Index.Skipped {
			log.Warn("decontam: benchmark problem not matched behaviourally (interface unreadable)", "problem", sk)
		}
		bxs = append(bxs, b.Index)
	}
	if len(bxs) == 0 {
		return fmt.Errorf("%w: stage %s: methods: behavioural, but no benchmark carries executable RTL problems (a benchmark file with harness and reference rows)", ErrConfig, sc.Name)
	}
	sums, err := CheckBehaviouralAll(ctx, bxs, judge, src, bcfg, func(_ int, _ int64, m Match) error {
		v.add(m)
		return matches.Write(m)
	})
	if err != nil {
		return err
	}
	for _, s := range sums {
		for k, n := range s.Counts(false) {
			sc.Count("behavioural."+k, n)
		}
		if err := stats.Write(s.Stats()); err != nil {
			return err
		}
		log.Info("decontam behavioural", "benchmark", s.Benchmark, "designs", s.Designs, "pairs_pruned", s.PairsPruned,
			"pairs_compatible", s.PairsCompatible, "simulations", s.Simulations, "matches", s.Matches, "unjudged", s.Unjudged, "wall", s.Wall)
		for _, u := range s.UnjudgedSample {
			log.Warn("decontam: unjudged behavioural simulation", "what", u)
		}
	}
	return nil
}

// KindBehavioural is the stage's output of BehaviouralStats rows.
const KindBehavioural = "decontam_behavioural"

// BehaviouralStats is one behavioural pass of one part over one benchmark:
// the cost figures the stage reports (the manifest's counts hold the same
// but for the wall time, which would make its content hash vary by run).
type BehaviouralStats struct {
	Benchmark          string `arrow:"benchmark" json:"benchmark"`
	Designs            int64  `arrow:"designs" json:"designs"`
	InterfaceErrors    int64  `arrow:"interface_errors" json:"interface_errors"`
	InterfaceUnjudged  int64  `arrow:"interface_unjudged" json:"interface_unjudged"`
	Problems           int64  `arrow:"problems" json:"problems"`
	ProblemsUnreadable int64  `arrow:"problems_unreadable" json:"problems_unreadable"`
	PairsConsidered    int64  `arrow:"pairs_considered" json:"pairs_considered"`
	PairsPruned        int64  `arrow:"pairs_pruned" json:"pairs_pruned"`
	PairsCompatible    int64  `arrow:"pairs_compatible" json:"pairs_compatible"`
	PairsCapped        int64  `arrow:"pairs_capped" json:"pairs_capped"`
	Simulations        int64  `arrow:"simulations" json:"simulations"`
	Matches            int64  `arrow:"matches" json:"matches"`
	Unjudged           int64  `arrow:"unjudged" json:"unjudged"`
	WallMS             int64  `arrow:"wall_ms" json:"wall_ms"`
}

// WithoutTimings drops the wall time (engine.TimedRow): reruns that differ
// only in it leave downstream stages current.
func (r BehaviouralStats) WithoutTimings() BehaviouralStats { r.WallMS = 0; return r }

// Stats is the summary as a BehaviouralStats row.
func (s BehaviouralSummary) Stats() BehaviouralStats {
	return BehaviouralStats{Benchmark: s.Benchmark, Designs: s.Designs, InterfaceErrors: s.InterfaceErrors, InterfaceUnjudged: s.InterfaceUnjudged, Problems: int64(s.Problems),
		ProblemsUnreadable: int64(s.SkippedProblems), PairsConsidered: s.PairsConsidered, PairsPruned: s.PairsPruned,
		PairsCompatible: s.PairsCompatible, PairsCapped: s.PairsCapped, Simulations: s.Simulations, Matches: s.Matches,
		Unjudged: s.Unjudged, WallMS: s.Wall.Milliseconds()}
}

// Counts are the summary's figures under the names the manifests give
// them (behavioural.NAME in the stage's, behavioural.NAME.BENCHMARK in
// the check command's). withWall adds wall_ms: the command's manifest
// reports one run; a stage's counts are part of its content hash.
func (s BehaviouralSummary) Counts(withWall bool) map[string]int64 {
	st := s.Stats()
	c := map[string]int64{"matches": st.Matches, "designs": st.Designs, "interface_errors": st.InterfaceErrors,
		"pairs_considered": st.PairsConsidered, "pairs_pruned": st.PairsPruned, "pairs_compatible": st.PairsCompatible,
		"pairs_capped": st.PairsCapped, "simulations": st.Simulations, "unjudged": st.Unjudged, "interface_unjudged": st.InterfaceUnjudged,
		"problems_unreadable": st.ProblemsUnreadable}
	if withWall {
		c["wall_ms"] = st.WallMS
	}
	return c
}
