package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// perTask measures every task alone, raw loop then cold pool, and prints
// where the pool's extra CPU goes: the tasks with the largest excess first
// and the excess split between the 10% of tasks with the longest raw run
// and the rest.
func perTask(items []engine.Item, cands []engine.Candidate, top int) error {
	type row struct {
		id        string
		raw, pool time.Duration
	}
	v, err := newPoolVerifier(1, "")
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("", "crucible-bench-pertask-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	var rows []row
	var rawSum, poolSum time.Duration
	for i, it := range items {
		c0 := cpuTime()
		if err := rawTask(filepath.Join(base, fmt.Sprint(i)), it, cands[i]); err != nil {
			return err
		}
		raw := cpuTime() - c0
		c0 = cpuTime()
		if _, err := v.Verify(context.Background(), []engine.Item{it}, []engine.Candidate{cands[i]}); err != nil {
			return err
		}
		pool := cpuTime() - c0
		rows = append(rows, row{it.ItemID, raw, pool})
		rawSum += raw
		poolSum += pool
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].pool-rows[i].raw > rows[j].pool-rows[j].raw })
	fmt.Printf("per task (CPU ms): raw %.1f, cold pool %.1f per task (%.2fx)\n", ms(rawSum)/float64(len(rows)), ms(poolSum)/float64(len(rows)), ms(poolSum)/ms(rawSum))
	fmt.Printf("%-28s %10s %10s %10s %8s\n", "task", "raw ms", "pool ms", "excess ms", "ratio")
	for _, r := range rows[:min(top, len(rows))] {
		fmt.Printf("%-28s %10.1f %10.1f %10.1f %7.2fx\n", r.id, ms(r.raw), ms(r.pool), ms(r.pool-r.raw), ms(r.pool)/ms(r.raw))
	}
	byRaw := append([]row(nil), rows...)
	sort.Slice(byRaw, func(i, j int) bool { return byRaw[i].raw < byRaw[j].raw })
	med := byRaw[len(byRaw)/2]
	fmt.Printf("median task by raw cost: %s raw %.1f pool %.1f ms\n", med.id, ms(med.raw), ms(med.pool))
	var longEx, shortEx time.Duration
	for _, r := range byRaw[len(byRaw)*9/10:] {
		longEx += r.pool - r.raw
	}
	for _, r := range byRaw[:len(byRaw)*9/10] {
		shortEx += r.pool - r.raw
	}
	fmt.Printf("excess: the 10%% longest tasks %.0f ms, the other 90%% %.0f ms\n", ms(longEx), ms(shortEx))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
