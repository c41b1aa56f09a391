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

// RegisterStages adds the "verify_kernel" stage type: it runs every kernel
// item's reference as its own candidate (reference_status verified, or a
// rejection row reference_failed), passes other items through, judges any
// upstream "candidates" rows, and writes "items", "evidence" and
// "rejections".
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "verify_kernel", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{"items", "evidence", "rejections"},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			def := DefaultConfig()
			sc := StageConfig{Backend: def.Backend, Trials: def.Trials, Warmup: def.Warmup, Reps: def.Reps, Timeout: def.Timeout,
				Threshold: def.SpeedupThreshold, Suspicious: def.SuspiciousSpeedup, SuspiciousN: def.SuspiciousSamples}
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			cfg := def
			cfg.Backend, cfg.Trials, cfg.Warmup, cfg.Reps, cfg.Timeout = sc.Backend, sc.Trials, sc.Warmup, sc.Reps, sc.Timeout
			cfg.SpeedupThreshold, cfg.SuspiciousSpeedup, cfg.SuspiciousSamples = sc.Threshold, sc.Suspicious, sc.SuspiciousN
			if sc.Workers > 0 {
				cfg.Workers = sc.Workers
			}
			if err := cfg.Validate(); err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
				return runStage(ctx, st, cfg, sc.DropUnjudged)
			}), nil
		}, Doc: "self-checks kernel references (cpu/cuda/triton backends), marks reference_status, judges upstream candidates into evidence rows with timing, speedup CI and exploit gates"})
}

// ReferenceCandidateID is the candidate id of a reference self-check.
const ReferenceCandidateID = engine.ReferenceCandidateID

func runStage(ctx context.Context, sc *engine.StageContext, cfg Config, dropUnjudged bool) error {
	items, err := engine.ReadInputs[engine.Item](sc, "items")
	if err != nil {
		return err
	}
	cands, err := engine.ReadInputs[engine.Candidate](sc, "candidates")
	if err != nil {
		return err
	}
	v, err := NewVerifier(cfg, sc.Log)
	if err != nil {
		return err
	}
	defer v.Close()
	byID := map[string]engine.Item{}
	var selfChecks []engine.Candidate
	for _, it := range items {
		byID[it.ItemID] = it
		if it.Domain == engine.DomainKernel {
			selfChecks = append(selfChecks, engine.Candidate{ItemID: it.ItemID, CandidateID: ReferenceCandidateID, Code: it.Reference})
		}
	}
	p := sc.Progress(int64(len(selfChecks) + len(cands)))
	defer p.Done()
	refs, err := v.VerifyAll(ctx, byID, selfChecks)
	if err != nil {
		return err
	}
	p.Add(int64(len(refs)))
	evs, err := v.VerifyAll(ctx, byID, cands)
	if err != nil {
		return err
	}
	p.Add(int64(len(evs)))
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
	refOf := map[string]engine.Evidence{}
	for _, ev := range refs {
		refOf[ev.ItemID] = ev
	}
	for _, it := range items {
		if ev, ok := refOf[it.ItemID]; ok && it.Domain == engine.DomainKernel {
			sc.Count("reference."+ev.Status, 1)
			reason := ""
			switch {
			case ev.Status == engine.StatusPass:
				it.ReferenceStatus = engine.RefVerified
			case ev.Status == engine.StatusFail || ev.FailureStage == engine.StageReferenceSelfCheck:
				it.ReferenceStatus, reason = engine.RefFailed, "reference_failed"
			case ev.FailureStage == engine.StageWeakVerifier:
				// The task's comparison accepts trivial candidates: nothing
				// judged on it is evidence, so the item is not admitted.
				it.ReferenceStatus, reason = engine.RefUnjudged, "weak_verifier"
			default:
				it.ReferenceStatus = engine.RefUnjudged
				if dropUnjudged {
					reason = "unjudged"
				}
			}
			if reason != "" {
				sc.Count("rejected."+reason, 1)
				gate := "reference_self_check"
				if reason == "weak_verifier" {
					gate = "verifier_strength"
				}
				if err := rejW.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: gate,
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
		if err := evW.Write(group...); err != nil {
			return err
		}
	}
	for _, ev := range evs {
		sc.Count("candidates."+ev.Status, 1)
	}
	sc.Log.Info("verify_kernel done", "items", len(items), "kernel_items", len(selfChecks), "candidates", len(cands))
	return nil
}
