// Command rtlstrength measures the RTL harness-strength audit
// (rtl.Verifier.Strength): what it finds and what it costs per task.
//
//	go run ./bench/rtlstrength [-preset taskdir|verilog-eval] [-items PATH] [-workers N] [-mutants N] [-v]
//
// Defaults: the bundled seeds (examples/seeds/rtl). Tasks are audited one
// after another (each audit fans its candidates out over -workers jobs), so
// the wall time per task is that task's; CPU time is this process's
// children (every simulator, compiler and Yosys process) over the run,
// divided by the tasks. No cache: every audit runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/ops/gates"
	"github.com/crucible-data/crucible/rtl"
)

func main() {
	preset := flag.String("preset", ingest.PresetTaskDir, "taskdir | verilog-eval")
	items := flag.String("items", "examples/seeds/rtl", "task folder (taskdir) or JSONL (verilog-eval)")
	workers := flag.Int("workers", 2, "concurrent jobs inside one audit")
	mutants := flag.Int("mutants", rtl.DefaultConfig().StrengthMutants, "mutants of each kind")
	verbose := flag.Bool("v", false, "one line per task")
	flag.Parse()
	if err := run(*preset, *items, *workers, *mutants, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rtlstrength:", err)
		os.Exit(1)
	}
}

func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(preset, path string, workers, mutants int, verbose bool) error {
	var items []engine.Item
	g, err := ingest.New(preset, ingest.Sink{
		Item:   func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { return fmt.Errorf("rejected %s: %s", r.ItemID, r.Detail) },
	})
	if err != nil {
		return err
	}
	if err := g.IngestPaths(context.Background(), []string{path}); err != nil {
		return err
	}
	gates.RegisterMutantSources() // as in crucible build
	cfg := rtl.DefaultConfig()
	cfg.Workers, cfg.StrengthMutants = workers, mutants
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	tmp, err := os.MkdirTemp("", "rtlstrength-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.TempDir = filepath.Join(tmp, "jobs")
	v, err := rtl.NewVerifier(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// The reference self-checks first, so the audit's own cost is measured.
	if _, err := v.VerifyReferences(ctx, items); err != nil {
		return err
	}
	var weak, measured, candidates, equivalent, invalid int
	var rates []float64
	var walls []time.Duration
	unmeasured := map[string]int{}
	var weakIDs []string
	cpu0, start := childCPU(), time.Now()
	for _, it := range items {
		t0 := time.Now()
		rep, err := v.Strength(ctx, it)
		if err != nil {
			return err
		}
		wall := time.Since(t0)
		if !rep.Measured {
			unmeasured[rep.Stage]++
			if verbose {
				fmt.Printf("%-50s unmeasured %s: %.120s\n", it.ItemID, rep.Stage, rep.Cause)
			}
			continue
		}
		measured++
		walls = append(walls, wall)
		candidates += rep.Candidates
		equivalent += len(rep.Trivial.Equivalent) + len(rep.Mutants.Equivalent)
		invalid += len(rep.Trivial.Invalid) + len(rep.Mutants.Invalid)
		if rep.Weak() {
			weak++
			weakIDs = append(weakIDs, it.ItemID+" ("+strings.Join(rep.Trivial.Survivors, ", ")+")")
		}
		if r, ok := rep.MutantKillRate(); ok {
			rates = append(rates, r)
		}
		if verbose {
			fmt.Printf("%-50s %6.2fs  %s; equivalent %v; invalid %v\n", it.ItemID, wall.Seconds(), rep.Summary(),
				append(rep.Trivial.Equivalent, rep.Mutants.Equivalent...), append(rep.Trivial.Invalid, rep.Mutants.Invalid...))
		}
	}
	cpu, total := childCPU()-cpu0, time.Since(start)
	n := len(items)
	fmt.Printf("tasks %d, measured %d, weak %d, unmeasured %v; audit candidates equivalent to the reference %d, invalid (did not build) %d\n",
		n, measured, weak, unmeasured, equivalent, invalid)
	var mean float64
	for _, r := range rates {
		mean += r
	}
	if len(rates) > 0 {
		mean /= float64(len(rates))
	}
	below := 0
	for _, r := range rates {
		if r < 0.8 {
			below++
		}
	}
	fmt.Printf("mutant kill rate: mean %.3f over %d tasks with judged mutants; %d tasks below 0.8\n", mean, len(rates), below)
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	if len(walls) > 0 {
		fmt.Printf("cost per task: %.1f audit candidates; wall median %.2fs max %.2fs (workers %d); child CPU %.2fs/task; total wall %.1fs\n",
			float64(candidates)/float64(measured), walls[len(walls)/2].Seconds(), walls[len(walls)-1].Seconds(), workers,
			cpu.Seconds()/float64(n), total.Seconds())
	}
	for _, w := range weakIDs {
		fmt.Println("weak:", w)
	}
	return nil
}
