package decontam

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// The benchmark side of behavioural matching as both callers (the
// `decontam check` command and the decontam pipeline stage) open it: one
// place decides which benchmarks can be matched by execution and why the
// others cannot, so the command's notes and the stage's log agree.

// BehaviouralBenchmark is one benchmark's behavioural side: its index of
// executable problems, or NotRun saying why it has none.
type BehaviouralBenchmark struct {
	Spec   BenchmarkSpec
	Index  *BehaviouralIndex // nil when NotRun is set
	NotRun string
}

// Why a benchmark has no behavioural side (BehaviouralBenchmark.NotRun).
const (
	NotRunIndexDir  = "an index directory holds no harnesses (give the benchmark file)"
	NotRunNoHarness = "no executable RTL problems (harness and reference)"
)

// DisplayName is the benchmark's name in summaries and match rows: Name,
// else the file name without its extension.
func (b BenchmarkSpec) DisplayName() string {
	if b.Name != "" {
		return b.Name
	}
	return strings.TrimSuffix(filepath.Base(b.Path), filepath.Ext(b.Path))
}

// OpenBehaviouralBenchmarks loads each benchmark file's executable RTL
// problems and indexes their interfaces. A benchmark that has none (an
// index directory, a prompt-only or kernel benchmark) comes back with
// NotRun set rather than as an error: lexical matching still covers it.
func OpenBehaviouralBenchmarks(ctx context.Context, specs []BenchmarkSpec, cfg BehaviouralConfig) ([]BehaviouralBenchmark, error) {
	out := make([]BehaviouralBenchmark, 0, len(specs))
	for _, spec := range specs {
		bb := BehaviouralBenchmark{Spec: spec}
		if st, err := os.Stat(spec.Path); err == nil && st.IsDir() {
			bb.NotRun = NotRunIndexDir
			out = append(out, bb)
			continue
		}
		items, err := LoadBenchItems(ctx, spec.Path)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			bb.NotRun = NotRunNoHarness
			out = append(out, bb)
			continue
		}
		if bb.Index, err = NewBehaviouralIndex(ctx, spec.DisplayName(), items, cfg); err != nil {
			return nil, err
		}
		out = append(out, bb)
	}
	return out, nil
}

// ToolsMissing names what behavioural matching lacks here: each of tools
// not on PATH, then the judge's own probe (candidate isolation, simulator),
// "" when nothing is missing. Matching must not run without them: every
// simulation would be unjudged, and a check that judged nothing must not
// read as a clean one.
func ToolsMissing(ctx context.Context, judge engine.Judge, tools ...string) string {
	var miss []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			miss = append(miss, t+" not on PATH")
		}
	}
	if len(miss) == 0 && judge != nil {
		if err := judge.Check(ctx); err != nil {
			miss = append(miss, err.Error())
		}
	}
	return strings.Join(miss, "; ")
}
