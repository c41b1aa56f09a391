package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/compose"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/filter"
	"github.com/crucible-data/crucible/ops/gates"
	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/ops/selection"
	"github.com/crucible-data/crucible/ops/synth"
	"github.com/crucible-data/crucible/rtl"
	"github.com/crucible-data/crucible/verify"
)

// newRegistry registers every stage type explicitly (no init() side effects).
func newRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	dedup.RegisterStages(reg)
	dedup.RegisterShardStages(reg)
	decontam.RegisterStages(reg)
	selection.RegisterStages(reg, selection.WithJudges(rolloutJudges("", 0)))
	compose.RegisterStages(reg)
	pack.RegisterStages(reg)
	pack.RegisterShardStages(reg)
	kernels.RegisterStages(reg)
	rtl.RegisterStages(reg)
	verify.RegisterStages(reg)
	evolve.RegisterStages(reg)
	gates.RegisterStages(reg)
	synth.RegisterStages(reg)
	return reg
}

// rolloutJudges judge rollouts that come without a verdict, by their
// item's domain. Each judge is built on first use, so a run without such
// rollouts never probes a toolchain. The select stage and `crucible select`
// take the same set.
func rolloutJudges(simulator string, workers int) *engine.Judges {
	rc, kc := rtl.DefaultConfig(), kernels.DefaultConfig()
	if simulator != "" {
		rc.Simulator = simulator
	}
	if workers > 0 {
		rc.Workers, kc.Workers = workers, workers
	}
	return verify.LazyJudges(workers, rc, kc, false, nil)
}

// verifyCommands lists `crucible verify` subcommands.
func verifyCommands() []*cobra.Command {
	return []*cobra.Command{newVerifyRTLCmd(), newVerifyKernelCmd()}
}

// extraDoctorChecks adds the probes that packages provide (GPU, backends).
func extraDoctorChecks(ctx context.Context) []ToolStatus { return kernelDoctorChecks(ctx) }
