package main

import (
	"context"
	"sync"

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
)

// newRegistry registers every stage type explicitly (no init() side effects).
func newRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	dedup.RegisterStages(reg)
	dedup.RegisterShardStages(reg)
	decontam.RegisterStages(reg)
	selection.RegisterStages(reg, selection.WithVerifier(&lazyVerifier{}))
	compose.RegisterStages(reg)
	pack.RegisterStages(reg)
	pack.RegisterShardStages(reg)
	kernels.RegisterStages(reg)
	rtl.RegisterStages(reg)
	evolve.RegisterStages(reg)
	gates.RegisterStages(reg)
	synth.RegisterStages(reg)
	return reg
}

// lazyVerifier builds the verifiers for unverdicted rollouts on first use,
// so a pipeline without them never probes toolchains.
type lazyVerifier struct {
	once sync.Once
	v    selection.Verifier
	err  error
}

func (l *lazyVerifier) Verify(ctx context.Context, items []engine.Item, cands []engine.Candidate) ([]engine.Evidence, error) {
	l.once.Do(func() {
		rv, err := rtl.NewVerifier(rtl.DefaultConfig())
		if err != nil {
			l.err = err
			return
		}
		l.v = selection.DomainVerifiers{engine.DomainRTL: rv}
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.v.Verify(ctx, items, cands)
}

// verifyCommands lists `crucible verify` subcommands.
func verifyCommands() []*cobra.Command {
	return []*cobra.Command{newVerifyRTLCmd(), newVerifyKernelCmd()}
}

// extraDoctorChecks adds the probes that packages provide (GPU, backends).
func extraDoctorChecks(ctx context.Context) []ToolStatus { return kernelDoctorChecks(ctx) }
