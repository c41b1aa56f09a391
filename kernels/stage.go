package kernels

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// StageConfig is the `config:` block of a verify_kernel pipeline stage.
type StageConfig struct {
	Backend      string        `yaml:"backend"` // auto | cpu | cuda | triton
	Trials       int           `yaml:"trials"`
	Warmup       int           `yaml:"warmup"`
	Reps         int           `yaml:"reps"`
	Workers      int           `yaml:"workers"` // 0 = all cores (GPU jobs are still one per GPU)
	Timeout      time.Duration `yaml:"timeout"`
	Threshold    float64       `yaml:"speedup_threshold"`
	Suspicious   float64       `yaml:"suspicious_speedup"`
	SuspiciousN  int           `yaml:"suspicious_min_samples"` // timed calls per side before the suspicious_speedup gate may fire
	DropUnjudged bool          `yaml:"drop_unjudged"`          // reject items whose reference could not be judged here (e.g. GPU tasks on a CPU host)
}

// DefaultStageConfig is the stage block's defaults (DefaultConfig's).
func DefaultStageConfig() StageConfig {
	def := DefaultConfig()
	return StageConfig{Backend: def.Backend, Trials: def.Trials, Warmup: def.Warmup, Reps: def.Reps, Timeout: def.Timeout,
		Threshold: def.SpeedupThreshold, Suspicious: def.SuspiciousSpeedup, SuspiciousN: def.SuspiciousSamples}
}

// VerifierConfig is the verifier configuration a stage block asks for.
func (sc StageConfig) VerifierConfig() (Config, error) {
	cfg := DefaultConfig()
	cfg.Backend, cfg.Trials, cfg.Warmup, cfg.Reps, cfg.Timeout = sc.Backend, sc.Trials, sc.Warmup, sc.Reps, sc.Timeout
	cfg.SpeedupThreshold, cfg.SuspiciousSpeedup, cfg.SuspiciousSamples = sc.Threshold, sc.Suspicious, sc.SuspiciousN
	if sc.Workers > 0 {
		cfg.Workers = sc.Workers
	}
	return cfg, cfg.Validate()
}

// StageJudge is the kernel judge as a verify stage uses it: an item whose
// reference cannot be judged here (a GPU task on a host without one) stays,
// marked unjudged, unless DropUnjudged.
type StageJudge struct {
	*Verifier
	DropUnjudged bool
}

// RuleReference implements engine.ReferenceRuler.
func (j StageJudge) RuleReference(_ context.Context, it engine.Item, ev engine.Evidence) (engine.Item, engine.Evidence, *engine.Rejection, error) {
	it, rej := engine.DefaultReferenceRuling(it, ev, !j.DropUnjudged)
	return it, ev, rej, nil
}

// RegisterStages adds the "verify_kernel" stage type: engine.RunVerifyStage
// with the kernel judge alone. It runs every kernel item's reference as its
// own candidate (reference_status verified, or a rejection row
// reference_failed / weak_verifier), passes other items through, judges
// any upstream "candidates" rows, and writes "items", "evidence" and
// "rejections". The "verify" stage (package verify) does the same for
// every domain at once.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "verify_kernel", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "evidence", "rejections"},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			sc := DefaultStageConfig()
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			cfg, err := sc.VerifierConfig()
			if err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
				v, err := NewVerifier(cfg, st.Log)
				if err != nil {
					return err
				}
				judges, err := engine.NewJudges(cfg.Workers, StageJudge{Verifier: v, DropUnjudged: sc.DropUnjudged})
				if err != nil {
					return err
				}
				defer judges.Close()
				return engine.RunVerifyStage(ctx, st, judges)
			}), nil
		}, Doc: "self-checks kernel references (cpu/cuda/triton backends), marks reference_status, judges upstream candidates into evidence rows with timing, speedup CI and exploit gates"})
}

// ReferenceCandidateID is the candidate id of a reference self-check.
const ReferenceCandidateID = engine.ReferenceCandidateID
