package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/rtl"
)

// Match methods of `decontam check --method`.
const (
	methodLexical     = "lexical"
	methodBehavioural = "behavioural"
	methodAll         = "all"
	methodAuto        = "auto"
)

// checkMethods is what --method asked for.
type checkMethods struct {
	lexical, behavioural bool
	auto                 bool // behavioural only where it can run (the default)
}

// parseMethods reads --method values (repeatable, comma lists). No value
// is lexical only: the programmatic default, so callers of
// runDecontamCheck keep the cost they had; the command's flag default is
// auto (lexical, plus behavioural where the benchmark carries executable
// RTL harnesses and Icarus and Yosys are here).
func parseMethods(vals []string) (checkMethods, error) {
	var m checkMethods
	if len(vals) == 0 {
		return checkMethods{lexical: true}, nil
	}
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			switch strings.TrimSpace(strings.ToLower(s)) {
			case methodLexical:
				m.lexical = true
			case methodBehavioural, "behavioral":
				m.behavioural = true
			case methodAll:
				m.lexical, m.behavioural = true, true
			case methodAuto:
				m.lexical, m.auto = true, true
			default:
				return m, fmt.Errorf("%w: --method %q (want lexical|behavioural|all|auto)", errUsage, s)
			}
		}
	}
	if m.behavioural {
		m.auto = false // asked for explicitly: it must run, or the check fails
	}
	return m, nil
}

// runBehavioural is the behavioural pass of `decontam check` over every
// --benchmark file with executable problems: RTL problems against the
// corpus designs (runRTLBehavioural), CPU kernel problems against the
// corpus kernel items (runKernelBehavioural). It returns one summary per
// pass run, RTL ones first, in the order their matches went to fn (row =
// place in the corpus): the order the run record (decontam rescore) needs.
func runBehavioural(ctx context.Context, o DecontamCheckOptions, m checkMethods, stderr io.Writer, fn func(row int64, m decontam.Match) error) ([]decontam.BehaviouralSummary, error) {
	if !m.behavioural && !m.auto {
		return nil, nil
	}
	var cix *decontam.DesignIndex
	if o.CorpusIndex != "" {
		ix, err := decontam.OpenDesignIndex(o.CorpusIndex)
		if err != nil {
			return nil, err
		}
		// An index with neither designs nor kernels (lexical-only, or
		// older than version 3) gets one note for both kinds of problem.
		if why := ix.Unavailable(); why != "" && ix.KernelsUnavailable() != "" {
			if !m.auto {
				return nil, fmt.Errorf("%w: --method behavioural: --corpus-index %s: %s", errUsage, o.CorpusIndex, why)
			}
			fmt.Fprintf(stderr, "decontam: behavioural matching NOT available for --corpus-index %s: %s\n", o.CorpusIndex, why)
			return nil, nil
		}
		cix = ix
	}
	cfg := decontam.BehaviouralConfig{Workers: o.Workers}
	specs := make([]decontam.BenchmarkSpec, len(o.Benchmarks))
	for i, b := range o.Benchmarks {
		specs[i] = decontam.BenchmarkSpec{Path: b}
	}
	all, err := decontam.OpenBehaviouralBenchmarks(ctx, specs, cfg)
	if err != nil {
		return nil, err
	}
	var benches, kernelBenches []*decontam.BehaviouralIndex
	for _, b := range all {
		if b.Index != nil {
			benches = append(benches, b.Index)
		}
		if b.Kernels != nil {
			kernelBenches = append(kernelBenches, b.Kernels)
		}
		switch {
		case b.NotRun == decontam.NotRunIndexDir:
			fmt.Fprintf(stderr, "decontam: behavioural matching skips benchmark %s: %s\n", b.Spec.Path, b.NotRun)
		case b.NotRun != "" && !m.auto:
			fmt.Fprintf(stderr, "decontam: benchmark %s has %s: not matched behaviourally\n", b.Spec.Path, b.NotRun)
		}
	}
	if len(benches)+len(kernelBenches) == 0 {
		if !m.auto {
			return nil, fmt.Errorf("%w: --method behavioural: no --benchmark file carries executable problems (RTL problems with a harness and a reference, or CPU kernel tasks stating their arguments)", errUsage)
		}
		return nil, nil
	}
	var sums []decontam.BehaviouralSummary
	rtlRan, kernelRan := false, false
	rtlWhy := ""
	if len(benches) > 0 {
		if why := cixUnavailable(cix); why != "" {
			// An index built where Yosys was missing keeps kernels only.
			rtlWhy = fmt.Sprintf("the RTL problems are not matched behaviourally: --corpus-index %s: %s", o.CorpusIndex, why)
		} else {
			s, err := runRTLBehavioural(ctx, o, m, stderr, benches, cix, cfg, fn)
			if err != nil {
				return nil, err
			}
			sums, rtlRan = append(sums, s...), s != nil
		}
	}
	if len(kernelBenches) > 0 {
		s, why, err := runKernelBehavioural(ctx, o, m, kernelBenches, cix, cfg, fn)
		if err != nil {
			return nil, err
		}
		if why != "" {
			// Behavioural asked for by name must match something: when
			// neither kind of problem could be, the check fails.
			if !m.auto && !rtlRan {
				return nil, fmt.Errorf("%w: --method behavioural: %s", errUsage, why)
			}
			fmt.Fprintf(stderr, "decontam: %s\n", why)
		}
		sums, kernelRan = append(sums, s...), s != nil
	}
	if rtlWhy != "" {
		if !m.auto && !kernelRan {
			return nil, fmt.Errorf("%w: --method behavioural: %s", errUsage, rtlWhy)
		}
		fmt.Fprintf(stderr, "decontam: %s\n", rtlWhy)
	}
	return sums, nil
}

// cixUnavailable is why the corpus index cix (nil: none, the corpus
// files) holds no RTL designs to match.
func cixUnavailable(cix *decontam.DesignIndex) string {
	if cix == nil {
		return ""
	}
	return cix.Unavailable()
}

// runRTLBehavioural matches the benchmarks' RTL problems: against the
// corpus rows' designs, or the designs of the corpus index cix. nil
// summaries (and a note on stderr) when auto and the tools are missing.
func runRTLBehavioural(ctx context.Context, o DecontamCheckOptions, m checkMethods, stderr io.Writer, benches []*decontam.BehaviouralIndex, cix *decontam.DesignIndex,
	cfg decontam.BehaviouralConfig, fn func(row int64, m decontam.Match) error) ([]decontam.BehaviouralSummary, error) {
	vcfg := rtl.DefaultConfig()
	vcfg.Workers = max(o.Workers, 1)
	v, err := rtl.NewVerifier(vcfg)
	if err != nil {
		return nil, err
	}
	if miss := decontam.ToolsMissing(ctx, v, "iverilog", "vvp", "yosys"); miss != "" {
		if !m.auto {
			return nil, fmt.Errorf("%w: --method behavioural cannot run here: %s", errUsage, miss)
		}
		fmt.Fprintf(stderr, "decontam: behavioural matching NOT run (%s): lexical only; install Icarus Verilog and Yosys for behavioural coverage\n", miss)
		return nil, nil
	}
	cfields := o.CorpusFields
	if len(cfields) == 0 {
		cfields = defaultCorpusFields
	}
	var sums []decontam.BehaviouralSummary
	if cix != nil {
		for _, bx := range benches {
			s, err := decontam.CheckBehaviouralIndex(ctx, bx, v, cix, cfg, fn)
			if err != nil {
				return nil, err
			}
			sums = append(sums, s)
		}
	} else {
		corpus := decontam.FileRecords{Paths: o.Corpus, IDField: o.CorpusIDField, Fields: cfields}
		if sums, err = decontam.CheckBehaviouralAll(ctx, benches, v, corpus, cfg, func(_ int, row int64, m decontam.Match) error { return fn(row, m) }); err != nil {
			return nil, err
		}
	}
	for _, bx := range benches {
		for _, sk := range bx.Skipped {
			fmt.Fprintf(stderr, "decontam: benchmark problem not matched behaviourally (interface unreadable): %s\n", sk)
		}
	}
	return sums, nil
}

// behaviouralAsSummary records a behavioural pass in the run record (and
// so for decontam rescore) as one more pass of the match set.
func behaviouralAsSummary(s decontam.BehaviouralSummary, cfg decontam.Config) decontam.Summary {
	return decontam.Summary{Benchmark: s.Benchmark, Direction: "behavioural", Queries: s.Designs, Matches: s.Matches,
		Contaminated: s.Matches, CorpusItems: s.CorpusItems, BenchmarkItems: s.BenchmarkItems, BenchmarkEntries: s.Problems,
		Threshold: cfg.Threshold, ReportMin: cfg.ReportMin}
}

// indexDesignsOption reads `decontam index --method`: whether a corpus
// index also gets its interface index and its kernel index. auto builds
// the interface index where Yosys is on PATH and says on stderr when it
// cannot, and the kernel index always; behavioural insists (exit 2
// without Yosys, or for a benchmark index, whose harnesses stay in the
// benchmark file).
func indexDesignsOption(ctx context.Context, o DecontamIndexOptions) (decontam.IndexOptions, error) {
	m, err := parseMethods(o.Methods)
	if err != nil {
		return decontam.IndexOptions{}, err
	}
	if !m.behavioural && !m.auto {
		return decontam.IndexOptions{}, nil
	}
	if o.Side != decontam.SideCorpus {
		if m.behavioural {
			return decontam.IndexOptions{}, fmt.Errorf("%w: --method behavioural is for a corpus index (--side corpus); a benchmark is matched behaviourally from its file, which holds the harnesses", errUsage)
		}
		return decontam.IndexOptions{}, nil
	}
	// The kernel index needs no tool: a kernel item states its arguments.
	opt := decontam.IndexOptions{KernelPaths: o.In}
	if miss := decontam.ToolsMissing(ctx, nil, "yosys"); miss != "" {
		if m.behavioural {
			return decontam.IndexOptions{}, fmt.Errorf("%w: --method behavioural cannot build the interface index here: %s", errUsage, miss)
		}
		if o.Stderr != nil {
			fmt.Fprintf(o.Stderr, "decontam: interface index NOT built (%s): the index keeps no RTL designs; a benchmark's RTL problems checked against it will not be matched behaviourally (its CPU kernel items are kept)\n", miss)
		}
		return opt, nil
	}
	opt.Designs = &decontam.BehaviouralConfig{Workers: o.Workers}
	return opt, nil
}
