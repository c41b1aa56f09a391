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

// RegisterStages adds the "verify_rtl" stage type: it self-checks every RTL
// item's reference (reference_status verified, or a rejection row with
// reason reference_failed / unjudged), audits its harness's strength
// (strength.go; recorded on the item and the reference's evidence, a weak
// harness is a rejection with reason weak_verifier), passes other items through, judges
// any upstream "candidates" rows, and writes "items", "evidence" and
// "rejections".
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "verify_rtl", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "evidence", "rejections"},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			def := DefaultConfig()
			sc := StageConfig{Simulator: def.Simulator, Retries: def.Retries, SimTimeout: def.Limits.SimTimeout,
				CPUSeconds: def.Limits.CPUSeconds, CPUFloor: def.Limits.CPUFloorSeconds, CPUFactor: def.Limits.CPUFactor,
				StrengthAudit: def.StrengthAudit, StrengthMutants: def.StrengthMutants}
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			cfg := def
			cfg.Simulator, cfg.Retries, cfg.Limits.SimTimeout = sc.Simulator, sc.Retries, sc.SimTimeout
			cfg.Limits.CPUSeconds, cfg.Limits.CPUFloorSeconds, cfg.Limits.CPUFactor = sc.CPUSeconds, sc.CPUFloor, sc.CPUFactor
			cfg.TrustTwoState, cfg.Synth = sc.TrustTwoState, sc.Synth
			cfg.StrengthAudit, cfg.StrengthMutants = sc.StrengthAudit, sc.StrengthMutants
			if sc.Workers > 0 {
				cfg.Workers = sc.Workers
			}
			if sc.CacheDir != "" {
				cfg.CacheDir = c.Path(sc.CacheDir)
			}
			if err := cfg.Validate(); err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
				return runStage(ctx, st, cfg)
			}), nil
		}, Doc: "self-checks RTL references under their harness (Icarus/Verilator pool), marks reference_status, audits harness strength (rejects weak_verifier), judges upstream candidates into evidence rows"})
}

func runStage(ctx context.Context, sc *engine.StageContext, cfg Config) error {
	cfg.Logger = sc.Log
	items, err := engine.ReadInputs[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	cands, err := engine.ReadInputs[engine.Candidate](sc, "candidates")
	if err != nil {
		return err
	}
	v, err := NewVerifier(cfg)
	if err != nil {
		return err
	}
	var rtlItems []engine.Item
	var rtlIdx []int
	for i, it := range items {
		if it.Domain == engine.DomainRTL {
			rtlItems = append(rtlItems, it)
			rtlIdx = append(rtlIdx, i)
		}
	}
	p := sc.Progress(int64(len(rtlItems) + len(cands)))
	defer p.Done()
	refs, err := v.VerifyReferences(ctx, rtlItems)
	if err != nil {
		return err
	}
	strengths, err := v.strengthOfItems(ctx, rtlItems, refs)
	if err != nil {
		return err
	}
	p.Add(int64(len(rtlItems)))
	var evs []engine.Evidence
	if len(cands) > 0 {
		if evs, err = v.Verify(ctx, items, cands); err != nil {
			return err
		}
		p.Add(int64(len(cands)))
	}
	itemsW, err := engine.StageWriter[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	evW, err := engine.StageWriter[engine.Evidence](sc, "evidence")
	if err != nil {
		return err
	}
	rejW, err := engine.StageWriter[engine.Rejection](sc, "rejections")
	if err != nil {
		return err
	}
	refOf := map[int]engine.Evidence{}
	strengthOf := map[int]*StrengthReport{}
	for k, i := range rtlIdx {
		refOf[i] = refs[k]
		strengthOf[i] = strengths[k]
	}
	for i, it := range items {
		ev, isRTL := refOf[i]
		if isRTL {
			sc.Count("reference."+ev.Status, 1)
			switch {
			case ev.Status == engine.StatusPass:
				it.ReferenceStatus = engine.RefVerified
				if rep := strengthOf[i]; rep != nil {
					it.VerifierStrength = rep.ItemStrength()
					if reason := strengthRejection(*rep); reason != "" {
						sc.Count("rejected."+reason, 1)
						if err := rejW.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "verifier_strength",
							Reason: reason, Detail: truncate(rep.Summary(), 1000)}); err != nil {
							return err
						}
						continue
					}
				}
			default:
				reason := "unjudged"
				it.ReferenceStatus = engine.RefUnjudged
				if ev.FailureStage == engine.StageReferenceSelfCheck {
					reason, it.ReferenceStatus = "reference_failed", engine.RefFailed
				}
				sc.Count("rejected."+reason, 1)
				if err := rejW.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "reference_self_check",
					Reason: reason, Detail: ev.FailureStage + ": " + ev.Cause}); err != nil {
					return err
				}
				continue
			}
		}
		if err := itemsW.Write(it); err != nil {
			return err
		}
	}
	for _, group := range [][]engine.Evidence{refs, evs} {
		for _, ev := range group {
			if err := evW.Write(ev); err != nil {
				return err
			}
		}
	}
	for _, ev := range evs {
		sc.Count("candidates."+ev.Status, 1)
	}
	sc.Log.Info("verify_rtl done", "items", len(items), "rtl_items", len(rtlItems), "candidates", len(cands))
	return nil
}
