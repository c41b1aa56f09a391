// Command rtl measures the RTL verifier pool against a plain sequential
// loop of iverilog + vvp over the same VerilogEval tasks, in one run:
//
//	go run ./bench/rtl [-items PATH] [-workers 1,2] [-rounds 2]
//	go run ./bench/rtl -per-task 20   # each task alone: raw vs cold pool CPU, the 20 largest excesses
//
// Each task's reference is submitted as its candidate (renamed TopModule),
// so both sides compile and simulate exactly one design per task. The raw
// loop runs `iverilog -g2012 -s tb -o sim.vvp test.sv ref.sv top.sv` and
// `vvp -n sim.vvp` with no limits, screening or verdict parsing; the pool
// adds the trace design — per task a trusted run of the harness with the
// reference and a recorder, a replay of the recorded inputs into the
// reference alone (the self-check), the static check (Icarus's preprocessor
// and a lexer) — a sandbox per process (namespaces and resource limits,
// internal/sandbox), output capture and evidence records. A last
// measurement caches the self-checks and times the candidate path alone
// (static check + replay of one candidate per task). Rounds alternate raw and pool runs to
// spread machine noise over both; CPU time (this process plus children) is
// reported next to wall time because it is far less sensitive to other
// load on the machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/benchenv"
	"github.com/crucible-data/crucible/rtl"
)

func main() {
	items := flag.String("items", "", "VerilogEval JSONL (default ../shared/datasets/verilog-eval/spec-to-rtl.jsonl from the repo root)")
	workers := flag.String("workers", "1,2", "comma-separated pool sizes to measure")
	rounds := flag.Int("rounds", 2, "measurement rounds (raw and pool alternate)")
	per := flag.Int("per-task", 0, "instead: measure each task alone (raw, then a cold pool) and list the N with the largest excess")
	flag.Parse()
	perTaskTop = *per
	if err := run(*items, *workers, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rtl:", err)
		os.Exit(1)
	}
}

var perTaskTop int

func run(itemsPath, workerList string, rounds int) error {
	if itemsPath == "" {
		root, err := benchenv.RepoRoot()
		if err != nil {
			return err
		}
		itemsPath = filepath.Join(root, "..", "shared", "datasets", "verilog-eval", "spec-to-rtl.jsonl")
	}
	var items []engine.Item
	g, err := ingest.New(ingest.PresetVerilogEval, ingest.Sink{
		Item:   func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { return fmt.Errorf("rejected %s: %s", r.ItemID, r.Detail) },
	})
	if err != nil {
		return err
	}
	if err := g.IngestPaths(context.Background(), []string{itemsPath}); err != nil {
		return err
	}
	var cands []engine.Candidate
	for _, it := range items {
		code, err := rtl.RenameModule(it.Reference, rtl.RefModuleName, rtl.DefaultDUTName)
		if err != nil {
			return fmt.Errorf("%s: %w", it.ItemID, err)
		}
		cands = append(cands, engine.Candidate{ItemID: it.ItemID, CandidateID: "self", Code: code})
	}
	if perTaskTop > 0 {
		return perTask(items, cands, perTaskTop)
	}
	var sizes []int
	for _, s := range strings.Split(workerList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -workers entry %q", s)
		}
		sizes = append(sizes, n)
	}
	n := len(items)
	fmt.Printf("tasks: %d from %s; cores: %d; rounds: %d\n", n, itemsPath, numCPU(), rounds)
	raw := make([]time.Duration, 0, rounds)
	pool := map[int][]time.Duration{}
	// CPU seconds (this process + its children) per run: far less sensitive
	// to other load on the machine than wall time.
	rawCPU := make([]time.Duration, 0, rounds)
	poolCPU := map[int][]time.Duration{}
	var counts map[string]int
	for r := 0; r < rounds; r++ {
		c0 := cpuTime()
		d, err := rawLoop(items, cands)
		if err != nil {
			return err
		}
		raw = append(raw, d)
		rawCPU = append(rawCPU, cpuTime()-c0)
		for _, w := range sizes {
			c0 := cpuTime()
			d, c, err := poolRun(items, cands, w)
			if err != nil {
				return err
			}
			pool[w] = append(pool[w], d)
			poolCPU[w] = append(poolCPU[w], cpuTime()-c0)
			counts = c
		}
	}
	// The candidate path alone: the self-checks (trusted run + reference
	// replay) cached from a first pool run, then every task's reference
	// submitted with a trailing comment (so it is not recognised as the
	// reference and takes the full candidate path: static check + replay).
	cache, err := os.MkdirTemp("", "crucible-bench-cache-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	if _, _, err := poolRunCached(items, cands, 1, cache); err != nil {
		return err
	}
	var edited []engine.Candidate
	for _, c := range cands {
		c.Code += "\n// bench: not byte-identical to the reference\n"
		edited = append(edited, c)
	}
	var candOnly, candOnlyCPU []time.Duration
	for r := 0; r < rounds; r++ {
		c0 := cpuTime()
		d, _, err := poolRunCached(items, edited, 1, cache)
		if err != nil {
			return err
		}
		candOnly = append(candOnly, d)
		candOnlyCPU = append(candOnlyCPU, cpuTime()-c0)
	}
	rawBest := best(raw)
	fmt.Printf("pool verdicts: %v\n", counts)
	fmt.Printf("%-22s %10s %10s %14s %10s\n", "runner", "best s", "tasks/s", "ms/task", "vs raw")
	fmt.Printf("%-22s %10.2f %10.1f %14.2f %10s\n", "raw iverilog+vvp loop", rawBest.Seconds(), float64(n)/rawBest.Seconds(),
		float64(rawBest.Milliseconds())/float64(n), "1.00x")
	for _, w := range sizes {
		b := best(pool[w])
		fmt.Printf("%-22s %10.2f %10.1f %14.2f %9.2fx\n", fmt.Sprintf("pool, %d worker(s)", w), b.Seconds(), float64(n)/b.Seconds(),
			float64(b.Milliseconds())/float64(n), rawBest.Seconds()/b.Seconds())
	}
	if p1, ok := pool[1]; ok {
		b := best(p1)
		fmt.Printf("per-task overhead at 1 worker: %+.1f%% (%.2f ms/task)\n", 100*(b.Seconds()-rawBest.Seconds())/rawBest.Seconds(),
			(b.Seconds()-rawBest.Seconds())*1000/float64(n))
		for _, w := range sizes {
			if w > 1 {
				fmt.Printf("scaling 1 -> %d workers: %.2fx (ideal %dx, bounded by %d cores)\n", w, b.Seconds()/best(pool[w]).Seconds(), w, numCPU())
			}
		}
	}
	rc := best(rawCPU)
	fmt.Printf("CPU time (self + children), best run: raw %.2fs (%.2f ms/task)\n", rc.Seconds(), rc.Seconds()*1000/float64(n))
	for _, w := range sizes {
		pc := best(poolCPU[w])
		fmt.Printf("CPU time (self + children), best run: pool/%d %.2fs (%.2f ms/task, %+.1f%% vs raw)\n", w, pc.Seconds(),
			pc.Seconds()*1000/float64(n), 100*(pc.Seconds()-rc.Seconds())/rc.Seconds())
	}
	cb, cc := best(candOnly), best(candOnlyCPU)
	fmt.Printf("candidate path alone (self-checks cached), 1 worker: %.2fs wall (%.2f ms/task, %.2fx raw), CPU %.2fs (%.2f ms/task, %.2fx raw)\n",
		cb.Seconds(), cb.Seconds()*1000/float64(n), cb.Seconds()/rawBest.Seconds(), cc.Seconds(), cc.Seconds()*1000/float64(n), cc.Seconds()/rc.Seconds())
	fmt.Println("all runs wall (s): raw", secs(raw), "cpu", secs(rawCPU))
	for _, w := range sizes {
		fmt.Printf("all runs wall (s): pool/%d %v cpu %v\n", w, secs(pool[w]), secs(poolCPU[w]))
	}
	return nil
}

// rawLoop compiles and simulates every task sequentially with no sandbox.
func rawLoop(items []engine.Item, cands []engine.Candidate) (time.Duration, error) {
	base, err := os.MkdirTemp("", "crucible-bench-raw-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(base)
	start := time.Now()
	for i, it := range items {
		if err := rawTask(filepath.Join(base, strconv.Itoa(i)), it, cands[i]); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// rawTask compiles and simulates one task in dir (made, then removed) with
// no sandbox, limits or verdict parsing. A design Icarus cannot compile is
// not an error: it costs what the pool's failed build costs.
func rawTask(dir string, it engine.Item, cand engine.Candidate) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for name, text := range map[string]string{"test.sv": it.Verifier.Harness, "ref.sv": it.Reference, "top.sv": cand.Code} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	c := exec.Command("iverilog", "-g2012", "-s", "tb", "-o", "sim.vvp", "test.sv", "ref.sv", "top.sv")
	c.Dir = dir
	if err := c.Run(); err != nil {
		return nil
	}
	c = exec.Command("vvp", "-n", "sim.vvp")
	c.Dir = dir
	_, _ = c.Output()
	return nil
}

func poolRun(items []engine.Item, cands []engine.Candidate, workers int) (time.Duration, map[string]int, error) {
	return poolRunCached(items, cands, workers, "")
}

// poolRunCached runs the pool with the reference self-checks persisted in
// cacheDir ("" = none).
func poolRunCached(items []engine.Item, cands []engine.Candidate, workers int, cacheDir string) (time.Duration, map[string]int, error) {
	v, err := newPoolVerifier(workers, cacheDir)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	evs, err := v.Verify(context.Background(), items, cands)
	if err != nil {
		return 0, nil, err
	}
	d := time.Since(start)
	counts := map[string]int{}
	for _, ev := range evs {
		counts[ev.Status+"/"+ev.FailureStage]++
	}
	return d, counts, nil
}

// newPoolVerifier is the pool both measurements run: the verdict path
// against the plain loop; the harness-strength audit (about 20 more
// candidates per task) is measured by bench/rtlstrength.
func newPoolVerifier(workers int, cacheDir string) (*rtl.Verifier, error) {
	cfg := rtl.DefaultConfig()
	cfg.Workers = workers
	cfg.CacheDir = cacheDir
	cfg.StrengthAudit = false
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return rtl.NewVerifier(cfg)
}

func best(ds []time.Duration) time.Duration {
	b := ds[0]
	for _, d := range ds[1:] {
		b = min(b, d)
	}
	return b
}

func secs(ds []time.Duration) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return out
}
