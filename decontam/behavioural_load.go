package decontam

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// The benchmark side of behavioural matching as both callers (the
// `decontam check` command and the decontam pipeline stage) open it: one
// place decides which benchmarks can be matched by execution and why the
// others cannot, so the command's notes and the stage's log agree.

// BehaviouralBenchmark is one benchmark's behavioural side: its index of
// executable problems, or NotRun saying why it has none.
type BehaviouralBenchmark struct {
	Spec    BenchmarkSpec
	Index   *BehaviouralIndex // its RTL problems (nil: none)
	Kernels *BehaviouralIndex // its CPU kernel problems (nil: none), matched against corpus items stating their arguments (checkKernels)
	NotRun  string            // set when it has neither
}

// Why a benchmark has no behavioural side (BehaviouralBenchmark.NotRun).
const (
	NotRunIndexDir  = "an index directory holds no harnesses (give the benchmark file)"
	NotRunNoHarness = "no executable problems (RTL harness and reference, or a CPU kernel task with its arguments)"
)

// DisplayName is the benchmark's name in summaries and match rows: Name,
// else the file name without its extension.
func (b BenchmarkSpec) DisplayName() string {
	if b.Name != "" {
		return b.Name
	}
	return strings.TrimSuffix(filepath.Base(b.Path), filepath.Ext(b.Path))
}

// OpenBehaviouralBenchmarks loads each benchmark file's executable
// problems: RTL ones with their interfaces indexed, CPU kernel ones by
// argument signature. A benchmark that has none (an index directory, a
// prompt-only benchmark) comes back with NotRun set rather than as an
// error: lexical matching still covers it.
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
		rtlItems, kernelItems := splitKernelItems(items)
		if len(rtlItems) > 0 {
			if bb.Index, err = NewBehaviouralIndex(ctx, spec.DisplayName(), rtlItems, cfg); err != nil {
				return nil, err
			}
		}
		if len(kernelItems) > 0 {
			bb.Kernels = newKernelIndex(spec.DisplayName(), kernelItems)
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

// CheckBehaviouralAll is CheckBehavioural of src against every benchmark
// in bxs, reading the corpus designs' interfaces once: with more than one
// benchmark they go to a temporary interface index (designs.jsonl, as a
// corpus index keeps it) that every benchmark's pass reads, so Yosys runs
// once per corpus design, not once per design and benchmark. fn gets the
// benchmark's place in bxs with each match.
func CheckBehaviouralAll(ctx context.Context, bxs []*BehaviouralIndex, judge engine.Judge, src Source, cfg BehaviouralConfig, fn func(bench int, record int64, m Match) error) ([]BehaviouralSummary, error) {
	cfg.defaults()
	sums := make([]BehaviouralSummary, 0, len(bxs))
	if len(bxs) == 1 {
		s, err := checkDesigns(ctx, bxs[0], judge, recordDesigns(src, cfg), cfg, func(r int64, m Match) error { return fn(0, r, m) })
		return append(sums, s), err
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "crucible-designs-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	defer os.RemoveAll(dir)
	dx := &DesignIndex{Dir: dir, Meta: IndexMeta{Version: indexVersion, Side: SideCorpus}}
	dw, err := newDesignWriter(dir, cfg, &dx.Meta)
	if err != nil {
		return nil, err
	}
	if err := src.Scan(ctx, func(r dedup.Record) error { return dw.add(ctx, r) }); err != nil {
		dw.f.Close()
		return nil, err
	}
	if err := dw.close(ctx); err != nil {
		return nil, err
	}
	read := time.Since(start)
	for i, bx := range bxs {
		s, err := CheckBehaviouralIndex(ctx, bx, judge, dx, cfg, func(r int64, m Match) error { return fn(i, r, m) })
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.Wall += read // reading the corpus interfaces, once for all
		}
		sums = append(sums, s)
	}
	return sums, nil
}
