package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// behaviouralToolsMissing names what behavioural matching lacks here
// ("" when Icarus, Yosys and candidate isolation are all available).
func behaviouralToolsMissing(ctx context.Context, v *rtl.Verifier) string {
	var miss []string
	for _, t := range []string{"iverilog", "vvp", "yosys"} {
		if _, err := exec.LookPath(t); err != nil {
			miss = append(miss, t+" not on PATH")
		}
	}
	if len(miss) == 0 && v != nil {
		if err := v.Check(ctx); err != nil {
			miss = append(miss, err.Error())
		}
	}
	return strings.Join(miss, "; ")
}

// runBehavioural is the behavioural pass of `decontam check` over every
// --benchmark file with executable RTL problems. It returns one summary per
// benchmark checked; fn gets each match (row = place in the corpus).
func runBehavioural(ctx context.Context, o DecontamCheckOptions, m checkMethods, stderr io.Writer, fn func(row int64, m decontam.Match) error) ([]decontam.BehaviouralSummary, error) {
	if !m.behavioural && !m.auto {
		return nil, nil
	}
	if o.CorpusIndex != "" {
		if !m.auto {
			return nil, fmt.Errorf("%w: --method behavioural needs the corpus designs (--corpus files); a --corpus-index holds none", errUsage)
		}
		fmt.Fprintln(stderr, "decontam: behavioural matching skipped: a --corpus-index holds no designs to simulate (lexical only)")
		return nil, nil
	}
	type bench struct {
		path  string
		items []decontam.BenchItem
	}
	var benches []bench
	for _, b := range o.Benchmarks {
		if st, err := os.Stat(b); err == nil && st.IsDir() {
			fmt.Fprintf(stderr, "decontam: behavioural matching skips benchmark %s: an index directory holds no harnesses (give the benchmark file)\n", b)
			continue
		}
		items, err := decontam.LoadBenchItems(ctx, b)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			if !m.auto {
				fmt.Fprintf(stderr, "decontam: benchmark %s has no executable RTL problems (harness and reference): not matched behaviourally\n", b)
			}
			continue
		}
		benches = append(benches, bench{b, items})
	}
	if len(benches) == 0 {
		if !m.auto {
			return nil, fmt.Errorf("%w: --method behavioural: no --benchmark file carries executable RTL problems", errUsage)
		}
		return nil, nil
	}
	vcfg := rtl.DefaultConfig()
	vcfg.Workers = max(o.Workers, 1)
	v, err := rtl.NewVerifier(vcfg)
	if err != nil {
		return nil, err
	}
	if miss := behaviouralToolsMissing(ctx, v); miss != "" {
		if !m.auto {
			return nil, fmt.Errorf("%w: --method behavioural cannot run here: %s", errUsage, miss)
		}
		fmt.Fprintf(stderr, "decontam: behavioural matching NOT run (%s): lexical only; install Icarus Verilog and Yosys for behavioural coverage\n", miss)
		return nil, nil
	}
	cfg := decontam.BehaviouralConfig{Workers: o.Workers}
	cfields := o.CorpusFields
	if len(cfields) == 0 {
		cfields = defaultCorpusFields
	}
	var sums []decontam.BehaviouralSummary
	for _, b := range benches {
		bx, err := decontam.NewBehaviouralIndex(ctx, benchName(b.path), b.items, cfg)
		if err != nil {
			return nil, err
		}
		s, err := decontam.CheckBehavioural(ctx, bx, v, decontam.FileRecords{Paths: o.Corpus, IDField: o.CorpusIDField, Fields: cfields}, cfg, fn)
		if err != nil {
			return nil, err
		}
		for _, sk := range bx.Skipped {
			fmt.Fprintf(stderr, "decontam: benchmark problem not matched behaviourally (interface unreadable): %s\n", sk)
		}
		sums = append(sums, s)
	}
	return sums, nil
}

// benchName is the benchmark's name as lexical summaries give it.
func benchName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// behaviouralAsSummary records a behavioural pass in the run record (and
// so for decontam rescore) as one more pass of the match set.
func behaviouralAsSummary(s decontam.BehaviouralSummary, cfg decontam.Config) decontam.Summary {
	return decontam.Summary{Benchmark: s.Benchmark, Direction: "behavioural", Queries: s.Designs, Matches: s.Matches,
		Contaminated: s.Matches, CorpusItems: s.CorpusItems, BenchmarkItems: s.BenchmarkItems, BenchmarkEntries: s.Problems,
		Threshold: cfg.Threshold, ReportMin: cfg.ReportMin}
}
