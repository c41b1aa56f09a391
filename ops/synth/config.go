package synth

import (
	"errors"
	"fmt"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// Config configures a synthesis run.
type Config struct {
	Rounds        int     `yaml:"rounds"`         // K: turns per trajectory at most
	Samples       int     `yaml:"samples"`        // trajectories per task
	Concurrency   int     `yaml:"concurrency"`    // trajectories in flight at most
	RealLimit     int     `yaml:"real_limit"`     // real-backend executions in flight at most
	WorldLimit    int     `yaml:"world_limit"`    // world-model calls in flight at most
	InfraRetries  int     `yaml:"infra_retries"`  // re-executions of a turn whose verdict was an infrastructure failure
	MaxDiagnostic int     `yaml:"max_diagnostic"` // bytes of diagnostic text per observation
	Seed          uint64  `yaml:"seed"`           // drives backend choice and audit sampling
	WorldFraction float64 `yaml:"world_fraction"` // share of trajectories run on the world model (needs world_model)
	AuditFraction float64 `yaml:"audit_fraction"` // share of world-model turns re-executed on the real backend
	// ReplayFraction is the share of world-model trajectories replayed
	// whole on the real backend (every turn audited), for trajectory agreement.
	ReplayFraction float64 `yaml:"replay_fraction"`
	// FidelityFloor: once a domain has MinAudits audited turns, a
	// single-turn accuracy below this stops admitting its world-model trajectories.
	FidelityFloor float64             `yaml:"fidelity_floor"`
	MinAudits     int                 `yaml:"min_audits"`
	WMRetries     int                 `yaml:"wm_retries"` // re-asks of a malformed world-model answer
	Generator     textgen.ChatConfig  `yaml:"generator"`
	WorldModel    *textgen.ChatConfig `yaml:"world_model"` // nil: real backend only
}

// DefaultConfig returns the defaults: K = 4, one trajectory per task,
// real backend only.
func DefaultConfig() Config {
	return Config{Rounds: 4, Samples: 1, Concurrency: 8, RealLimit: 4, WorldLimit: 8, InfraRetries: 2, MaxDiagnostic: 1500,
		Seed: 1, AuditFraction: 0.1, ReplayFraction: 0.05, FidelityFloor: 0.8, MinAudits: 20, WMRetries: 2,
		Generator: textgen.DefaultChatConfig()}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if c.Rounds < 1 {
		bad("rounds: %d < 1", c.Rounds)
	}
	if c.Samples < 1 {
		bad("samples: %d < 1", c.Samples)
	}
	for name, v := range map[string]int{"concurrency": c.Concurrency, "real_limit": c.RealLimit, "world_limit": c.WorldLimit} {
		if v < 1 {
			bad("%s: %d < 1", name, v)
		}
	}
	if c.InfraRetries < 0 || c.WMRetries < 0 {
		bad("infra_retries and wm_retries must be >= 0")
	}
	if c.MaxDiagnostic < 64 {
		bad("max_diagnostic: %d < 64", c.MaxDiagnostic)
	}
	for name, v := range map[string]float64{"world_fraction": c.WorldFraction, "audit_fraction": c.AuditFraction,
		"replay_fraction": c.ReplayFraction, "fidelity_floor": c.FidelityFloor} {
		if v < 0 || v > 1 {
			bad("%s: %g not in [0,1]", name, v)
		}
	}
	if c.MinAudits < 1 {
		bad("min_audits: %d < 1", c.MinAudits)
	}
	if err := c.Generator.Validate(); err != nil {
		bad("generator: %v", err)
	}
	if c.WorldModel != nil {
		if err := c.WorldModel.Validate(); err != nil {
			bad("world_model: %v", err)
		}
	} else if c.WorldFraction > 0 {
		bad("world_fraction: %g > 0 needs a world_model endpoint", c.WorldFraction)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: synthesize: %w", engine.ErrConfig, errors.Join(errs...))
	}
	return nil
}
