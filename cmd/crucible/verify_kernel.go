package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/kernels"
)

// VerifyKernelOptions are `crucible verify kernel`'s inputs.
type VerifyKernelOptions struct {
	Items      string // item shards/JSONL/Parquet, or kernel seed directories (task.json + reference.*)
	Candidates string // JSONL/Parquet rows {item_id, candidate_id, code}
	Out        string
	SelfCheck  bool // submit each item's reference as its candidate
	Config     kernels.Config
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

const verifyKernelLong = `Judge GPU/CPU kernel candidates and write one evidence row per (item, candidate).

Each kernel item names its backend in verifier.harness: cpu (C candidates built
with the system C compiler into a shared object and run in a resource-limited
child process), cuda (CUDA C++ compiled with NVRTC for the GPU it runs on, one
worker process per candidate) or triton (KernelBench-style Python modules
defining ModelNew, one Python worker per candidate pinned to one GPU). Every
trial draws fresh seeded inputs; all trials must match the reference within the
task's tolerance. Reference and candidate are timed interleaved in the same
process, with warm-up, a cache flush and output poisoning before every timed
call; the speedup carries a bootstrap confidence interval and counts as faster
only when its lower bound clears --speedup-threshold.

Exploit gates are recorded separately (measurements exploit_<gate>): launch
evidence, identity stores, stale output, forbidden calls, delegation where the
task forbids it, work hidden on other streams/threads, implausible speedups. Any
fired gate fails the candidate at stage exploit. Tasks whose backend cannot run
here (no GPU, no NVRTC, no torch) end unjudged (toolchain_missing, "no-device"),
never fail.

--backend auto runs each task on its own backend; cpu|cuda|triton restricts the
run to that backend (other tasks end unjudged, toolchain_unsupported).
Writes evidence-*.parquet and manifest.json to --out and prints counts by status
and failure stage. Exit 0 when the run completed, whatever the verdicts.`

func newVerifyKernelCmd() *cobra.Command {
	o := VerifyKernelOptions{Writer: engine.DefaultWriterOptions(), Config: kernels.DefaultConfig()}
	c := &cobra.Command{
		Use:   "kernel --items PATH (--candidates PATH | --self-check) --out DIR [--backend auto|cuda|triton|cpu]",
		Short: "Judge kernel candidates (cpu, cuda, triton backends) with timing and exploit gates; write evidence shards",
		Long:  verifyKernelLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runVerifyKernel(cmd.Context(), o)
		},
	}
	f := c.Flags()
	verifyIOFlags(c, &o.Items, &o.Candidates, &o.Out, &o.SelfCheck,
		"item shards directory, item JSONL/Parquet, or a kernel seed directory (required)")
	f.StringVar(&o.Config.Backend, "backend", o.Config.Backend, "auto | cpu | cuda | triton")
	f.IntVar(&o.Config.Trials, "trials", o.Config.Trials, "trials with fresh seeded inputs (all must pass)")
	f.IntVar(&o.Config.Reps, "reps", o.Config.Reps, "timed calls per side per trial")
	f.IntVar(&o.Config.Warmup, "warmup", o.Config.Warmup, "untimed warm-up calls per side")
	f.IntVar(&o.Config.Workers, "workers", o.Config.Workers, "concurrent candidates (GPU jobs still take one GPU each)")
	f.DurationVar(&o.Config.Timeout, "timeout", o.Config.Timeout, "wall-clock limit per candidate run")
	f.Float64Var(&o.Config.SpeedupThreshold, "speedup-threshold", o.Config.SpeedupThreshold, "faster only if the speedup CI's lower bound >= this")
	f.Float64Var(&o.Config.SuspiciousSpeedup, "suspicious-speedup", o.Config.SuspiciousSpeedup, "a reference whose fastest call is over this many times the candidate's fastest fires the suspicious_speedup gate")
	f.IntVar(&o.Config.SuspiciousSamples, "suspicious-min-samples", o.Config.SuspiciousSamples, "timed calls per side before the suspicious_speedup gate may fire (fewer: not armed)")
	return c
}

func runVerifyKernel(ctx context.Context, o VerifyKernelOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	switch {
	case verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck) != nil:
		return verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck)
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	items, inputs, rejected, err := loadKernelItems(ctx, o.Items)
	if err != nil {
		return err
	}
	cands, candInputs, err := verifyCandidates(o.SelfCheck, o.Candidates, items)
	if err != nil {
		return err
	}
	inputs = append(inputs, candInputs...)
	v, err := kernels.NewVerifier(o.Config, slog.Default())
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	judges, err := engine.NewJudges(o.Config.Workers, v)
	if err != nil {
		return err
	}
	defer judges.Close()
	start := time.Now()
	evs, err := judges.JudgeAll(ctx, engine.ItemsByID(items), cands)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	counts := map[string]int64{"items": int64(len(items)), "candidates": int64(len(cands)), "items_rejected": rejected}
	for _, ev := range evs {
		for _, m := range ev.Measurements {
			if strings.HasPrefix(m.Name, "exploit_") {
				counts["gate."+strings.TrimPrefix(m.Name, "exploit_")]++
			}
		}
	}
	if err := writeEvidenceDir(o.Out, o.Writer, "verify-kernel", "verify_kernel", inputs, evs, counts); err != nil {
		return err
	}
	printVerifySummary(o.Stdout, fmt.Sprintf("verified %d kernel candidates for %d items in %.1fs (backend %s, %d trials x %d reps)",
		len(evs), len(items), elapsed.Seconds(), o.Config.Backend, o.Config.Trials, o.Config.Reps), evs, items, rejected, o.Out)
	return nil
}

// loadKernelItems reads --items: a kernel seed directory (one task dir with
// task.json, or a directory of them) through kernels.LoadSeedDir, anything
// else like `verify rtl` does (item shards as they are, files through ingest).
func loadKernelItems(ctx context.Context, path string) ([]engine.Item, []string, int64, error) {
	if _, err := os.Stat(filepath.Join(path, "task.json")); err == nil {
		it, err := kernels.LoadSeedDir(path)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		return []engine.Item{it}, []string{filepath.Join(path, "task.json")}, 0, nil
	}
	if matches, _ := filepath.Glob(filepath.Join(path, "*", "task.json")); len(matches) > 0 {
		items, err := kernels.LoadSeeds(path)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		return items, matches, 0, nil
	}
	return loadRTLItems(ctx, path, ingest.PresetItems)
}

// kernelDoctorChecks reports each kernel backend for `crucible doctor`
// (call it from extraDoctorChecks).
func kernelDoctorChecks(ctx context.Context) []ToolStatus {
	var out []ToolStatus
	for _, b := range kernels.Backends(kernels.DefaultConfig()) {
		st := ToolStatus{Name: "kernel backend " + b.Name, Found: b.Available, Enables: "crucible verify kernel --backend " + b.Name}
		if b.Available {
			st.Version = b.Detail
		} else {
			st.Why = b.Detail
		}
		out = append(out, st)
	}
	return out
}
