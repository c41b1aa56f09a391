package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/ops/filter"
)

// newRegistry registers every stage type explicitly (no init() side effects).
func newRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	return reg
}

// verifyCommands lists `crucible verify` subcommands.
func verifyCommands() []*cobra.Command { return nil }

// extraDoctorChecks adds the probes that packages provide (GPU, backends).
func extraDoctorChecks(ctx context.Context) []ToolStatus { return nil }
