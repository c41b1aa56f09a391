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
	Force      bool // judge even when the manifest in Out is current
	Config     kernels.StageConfig
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

// verifyKernelFlags keep the names and help texts `verify kernel`'s flags
// had before they were derived from kernels.StageConfig.
var verifyKernelFlags = map[string]flagDoc{
	"backend":                {Help: "auto | cpu | cuda | triton"},
	"trials":                 {Help: "trials with fresh seeded inputs (all must pass)"},
	"reps":                   {Help: "timed calls per side per trial"},
	"warmup":                 {Help: "untimed warm-up calls per side"},
	"workers":                {Help: "concurrent candidates (GPU jobs still take one GPU each; 0: number of cores)"},
	"timeout":                {Help: "wall-clock limit per candidate run"},
	"speedup_threshold":      {Help: "faster only if the speedup CI's lower bound >= this"},
	"suspicious_speedup":     {Help: "a reference whose fastest call is over this many times the candidate's fastest fires the suspicious_speedup gate"},
	"suspicious_min_samples": {Help: "timed calls per side before the suspicious_speedup gate may fire (fewer: not armed)"},
	"drop_unjudged":          {Skip: true}, // the stage's item filter; the command writes evidence only
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
	o := VerifyKernelOptions{Writer: engine.DefaultWriterOptions(), Config: kernels.DefaultStageConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "kernel --items PATH (--candidates PATH | --self-check) --out DIR [--backend auto|cuda|triton|cpu]",
		Short: "Judge kernel candidates (cpu, cuda, triton backends) with timing and exploit gates; write evidence shards",
		Long:  verifyKernelLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runVerifyKernel(cmd.Context(), o)
		},
	}
	verifyIOFlags(c, &o.Items, &o.Candidates, &o.Out, &o.SelfCheck, &o.Force,
		"item shards directory, item JSONL/Parquet, or a kernel seed directory (required)")
	sf = bindStageFlags(c.Flags(), &o.Config, verifyKernelFlags)
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
	cfg, err := o.Config.VerifierConfig()
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	load := func(ctx context.Context) ([]engine.Item, []engine.Candidate, int64, error) {
		items, _, rejected, err := loadKernelItems(ctx, o.Items)
		if err != nil {
			return nil, nil, 0, err
		}
		cands, err := verifyCandidates(o.SelfCheck, o.Candidates, items)
		return items, cands, rejected, err
	}
	judges := func([]engine.Item) (*engine.Judges, error) {
		v, err := kernels.NewVerifier(cfg, slog.Default())
		if err != nil {
			return nil, err
		}
		return engine.NewJudges(cfg.Workers, v)
	}
	count := func(evs []engine.Evidence, _ []engine.Item, counts map[string]int64) {
		for _, ev := range evs {
			for _, m := range ev.Measurements {
				if strings.HasPrefix(m.Name, "exploit_") {
					counts["gate."+strings.TrimPrefix(m.Name, "exploit_")]++
				}
			}
		}
	}
	header := func(evs []engine.Evidence, items []engine.Item, _ *engine.Judges, elapsed time.Duration) string {
		return fmt.Sprintf("verified %d kernel candidates for %d items in %.1fs (backend %s, %d trials x %d reps)",
			len(evs), len(items), elapsed.Seconds(), cfg.Backend, cfg.Trials, cfg.Reps)
	}
	return runEvidenceCommand(ctx, o.Stdout, evidenceCommand{name: "verify-kernel", typ: "verify_kernel",
		config: verifyKernelConfig{o.Config, o.SelfCheck}, items: o.Items, candidates: o.Candidates,
		out: o.Out, force: o.Force, writer: o.Writer, load: load, judges: judges, count: count, header: header})
}

// verifyKernelConfig is what decides `verify kernel`'s verdicts: its
// manifest's config hash.
type verifyKernelConfig struct {
	kernels.StageConfig `yaml:",inline"`
	SelfCheck           bool `yaml:"self_check"`
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
