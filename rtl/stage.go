package rtl

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// StageConfig is the `config:` block of a verify_rtl pipeline stage.
type StageConfig struct {
	Simulator     string        `yaml:"simulator"`         // icarus | verilator
	Workers       int           `yaml:"workers"`           // 0 = all cores
	Retries       int           `yaml:"retries"`           // infra retries
	SimTimeout    time.Duration `yaml:"sim_timeout"`       // wall-clock backstop per simulation
	CPUSeconds    int           `yaml:"cpu_seconds"`       // CPU ceiling: the reference's budget, the most a candidate gets
	CPUFloor      int           `yaml:"cpu_floor_seconds"` // the least CPU budget a candidate gets
	CPUFactor     float64       `yaml:"cpu_factor"`        // candidate budget = factor × reference CPU time
	TrustTwoState bool          `yaml:"trust_two_state"`   // let Verilator pass candidates
	Synth         bool          `yaml:"synth"`             // add Yosys cell counts to passes
	CacheDir      string        `yaml:"cache_dir"`         // persist reference self-checks and strength audits
	// StrengthAudit measures every item's harness (strength.go): a weak one
	// is rejected (weak_verifier) and its candidates' passes are unjudged.
	StrengthAudit   bool `yaml:"strength_audit"`
	StrengthMutants int  `yaml:"strength_mutants"` // mutants of each kind in the audit
}

// DefaultStageConfig is the stage block's defaults (DefaultConfig's).
func DefaultStageConfig() StageConfig {
	def := DefaultConfig()
	return StageConfig{Simulator: def.Simulator, Retries: def.Retries, SimTimeout: def.Limits.SimTimeout,
		CPUSeconds: def.Limits.CPUSeconds, CPUFloor: def.Limits.CPUFloorSeconds, CPUFactor: def.Limits.CPUFactor,
		StrengthAudit: def.StrengthAudit, StrengthMutants: def.StrengthMutants}
}

// VerifierConfig is the verifier configuration a stage block asks for;
// path resolves the cache directory against the pipeline file.
func (sc StageConfig) VerifierConfig(path func(string) string) (Config, error) {
	cfg := DefaultConfig()
	cfg.Simulator, cfg.Retries, cfg.Limits.SimTimeout = sc.Simulator, sc.Retries, sc.SimTimeout
	cfg.Limits.CPUSeconds, cfg.Limits.CPUFloorSeconds, cfg.Limits.CPUFactor = sc.CPUSeconds, sc.CPUFloor, sc.CPUFactor
	cfg.TrustTwoState, cfg.Synth = sc.TrustTwoState, sc.Synth
	cfg.StrengthAudit, cfg.StrengthMutants = sc.StrengthAudit, sc.StrengthMutants
	if sc.Workers > 0 {
		cfg.Workers = sc.Workers
	}
	if sc.CacheDir != "" {
		cfg.CacheDir = path(sc.CacheDir)
	}
	return cfg, cfg.Validate()
}

// RegisterStages adds the "verify_rtl" stage type: engine.RunVerifyStage
// with the RTL judge alone. It self-checks every RTL item's reference
// (reference_status verified, or a rejection row with reason
// reference_failed / unjudged), audits its harness's strength (strength.go;
// recorded on the item and the reference's evidence, a weak harness is a
// rejection with reason weak_verifier), passes other items through, judges
// any upstream "candidates" rows, and writes "items", "evidence" and
// "rejections". The "verify" stage (package verify) does the same for
// every domain at once.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "verify_rtl", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "evidence", "rejections"},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			sc := DefaultStageConfig()
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			cfg, err := sc.VerifierConfig(c.Path)
			if err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
				cfg.Logger = st.Log
				v, err := NewVerifier(cfg)
				if err != nil {
					return err
				}
				judges, err := engine.NewJudges(cfg.Workers, v)
				if err != nil {
					return err
				}
				return engine.RunVerifyStage(ctx, st, judges)
			}), nil
		}, Doc: "self-checks RTL references under their harness (Icarus/Verilator pool), marks reference_status, audits harness strength (rejects weak_verifier), judges upstream candidates into evidence rows"})
}

// RuleReference implements engine.ReferenceRuler: a reference that failed
// its self-check is ruled as engine.DefaultReferenceRuling rules it; a
// verified one has its harness audited when the audit is on (the strength
// goes on the item and the reference's evidence, and a weak or unmeasured
// harness is a weak_verifier rejection).
func (v *Verifier) RuleReference(ctx context.Context, it engine.Item, ev engine.Evidence) (engine.Item, engine.Evidence, *engine.Rejection, error) {
	it, rej := engine.DefaultReferenceRuling(it, ev, false)
	if rej != nil || !v.cfg.StrengthAudit {
		return it, ev, rej, nil
	}
	rep, err := v.Strength(ctx, it)
	if err != nil {
		return it, ev, nil, err
	}
	ev.Measurements = append(ev.Measurements, rep.Measurements()...)
	it.VerifierStrength = rep.ItemStrength()
	if reason := strengthRejection(rep); reason != "" {
		return it, ev, &engine.Rejection{ItemID: it.ItemID, Gate: "verifier_strength", Reason: reason, Detail: rep.Summary()}, nil
	}
	return it, ev, nil, nil
}
