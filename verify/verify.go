// Package verify is the verify stage over every domain: each item is
// self-checked, and each candidate judged, by the judge of its item's
// domain (the RTL verifier, the kernel verifier), through one
// engine.Judges set and engine.RunVerifyStage — the same runner the
// one-domain stage types verify_rtl and verify_kernel use. It also builds
// the judges a command needs for a set of items (JudgesFor).
package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
)

// StageConfig is the `config:` block of a verify stage: one block per
// domain (the keys of verify_rtl's and verify_kernel's blocks), and the
// bound on concurrent judge calls.
type StageConfig struct {
	RTL     rtl.StageConfig     `yaml:"rtl"`
	Kernel  kernels.StageConfig `yaml:"kernel"`
	Workers int                 `yaml:"workers"` // 0 = all cores
}

// RegisterStages adds the "verify" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "verify", Config: StageConfig{}, Parallelism: engine.PerPart,
		Outputs: []string{"items", "evidence", "rejections"},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			sc := StageConfig{RTL: rtl.DefaultStageConfig(), Kernel: kernels.DefaultStageConfig()}
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			if sc.Workers < 0 {
				return nil, fmt.Errorf("%w: stage %s: workers %d (want >= 0)", engine.ErrConfig, c.Name, sc.Workers)
			}
			rc, rerr := sc.RTL.VerifierConfig(c.Path)
			kc, kerr := sc.Kernel.VerifierConfig()
			if rerr != nil || kerr != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, errors.Join(rerr, kerr))
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error {
				rc.Logger = st.Log
				judges := LazyJudges(sc.Workers, rc, kc, sc.Kernel.DropUnjudged, st.Log)
				defer judges.Close()
				return engine.RunVerifyStage(ctx, st, judges)
			}), nil
		}, Doc: "self-checks every item's reference and judges upstream candidates, each by its domain's judge (RTL: sandboxed Icarus/Verilator with harness-strength audit; kernels: cpu/cuda/triton); writes items, evidence, rejections"})
}

// LazyJudges is the RTL and the kernel judge, each built from its config on
// first use, so a run that never judges a domain never probes its
// toolchain (the verify stage; rollouts that come without a verdict). The
// kernel judge keeps unjudged GPU tasks in a verify stage unless
// dropUnjudged. A judge that cannot be built is a configuration error.
func LazyJudges(workers int, rc rtl.Config, kc kernels.Config, dropUnjudged bool, log *slog.Logger) *engine.Judges {
	rtlJudge := engine.LazyJudge(engine.DomainRTL, func() (engine.Judge, error) {
		v, err := rtl.NewVerifier(rc)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrConfig, err)
		}
		return v, nil
	})
	kernelJudge := engine.LazyJudge(engine.DomainKernel, func() (engine.Judge, error) {
		v, err := kernels.NewVerifier(kc, log)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrConfig, err)
		}
		return kernels.StageJudge{Verifier: v, DropUnjudged: dropUnjudged}, nil
	})
	js, err := engine.NewJudges(workers, rtlJudge, kernelJudge)
	if err != nil {
		panic(err) // one judge per domain: the two cannot clash
	}
	return js
}

// JudgesFor builds the judge of every domain items hold (RTL, kernels), so a
// command probes no toolchain it does not need; items of other domains are
// left to the set's toolchain_unsupported rows.
func JudgesFor(items []engine.Item, workers int, rc rtl.Config, kc kernels.Config, log *slog.Logger) (*engine.Judges, error) {
	has := map[string]bool{}
	for _, it := range items {
		has[it.Domain] = true
	}
	var js []engine.Judge
	if has[engine.DomainRTL] {
		v, err := rtl.NewVerifier(rc)
		if err != nil {
			return nil, err
		}
		js = append(js, v)
	}
	if has[engine.DomainKernel] {
		v, err := kernels.NewVerifier(kc, log)
		if err != nil {
			return nil, err
		}
		js = append(js, v)
	}
	return engine.NewJudges(workers, js...)
}
