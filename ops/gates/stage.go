package gates

import (
	"context"
	"fmt"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// Output kinds of the admit stage (besides "items" and "rejections").
const (
	KindYield        = "yield"         // YieldRow per operator
	KindGateEvidence = "gate_evidence" // every verifier run the gates made (engine.Evidence)
)

// StageConfig is the admit stage's `config:` block.
type StageConfig struct {
	Config      `yaml:",inline"`
	Simulator   string             `yaml:"simulator"`    // icarus | verilator
	Workers     int                `yaml:"workers"`      // simulator jobs in parallel (0 = all cores)
	CacheDir    string             `yaml:"cache_dir"`    // persist reference self-checks
	Retries     int                `yaml:"retries"`      // verifier retries of infrastructure failures (worker crash, disk full); never of findings
	PassParents bool               `yaml:"pass_parents"` // copy the upstream items (the seeds) to "items" before the admitted ones (default true)
	Generator   string             `yaml:"generator"`    // template | chat (the audit role)
	Chat        textgen.ChatConfig `yaml:"chat"`
	Kernel      kernels.Config     `yaml:"kernel"` // kernel verifier (built only when kernel candidates are present)
}

// DefaultStageConfig returns the stage defaults.
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Simulator: rtl.SimIcarus, Retries: rtl.DefaultConfig().Retries, PassParents: true, Generator: "template", Chat: textgen.DefaultChatConfig(),
		Kernel: kernels.DefaultConfig()}
}

// Validate reports every bad field.
func (s StageConfig) Validate() error {
	if err := s.Config.Validate(); err != nil {
		return err
	}
	switch s.Generator {
	case "template":
	case "chat":
		if err := s.Chat.Validate(); err != nil {
			return fmt.Errorf("%w: chat: %w", ErrConfig, err)
		}
	default:
		return fmt.Errorf("%w: generator %q (want template or chat)", ErrConfig, s.Generator)
	}
	if s.Workers < 0 {
		return fmt.Errorf("%w: workers must be >= 0", ErrConfig)
	}
	return nil
}

// RegisterStages adds the "admit" stage type.
func RegisterStages(reg *engine.Registry) {
	RegisterMutantSources() // the verify_rtl stage's strength audit uses them too
	reg.RegisterType(engine.StageType{Name: "admit", Config: StageConfig{}, Parallelism: engine.Global, Outputs: []string{"items", "rejections", KindYield, KindGateEvidence, evolve.KindChatLog},
		Factory: func(c engine.StageConfig) (engine.Stage, error) {
			sc := DefaultStageConfig()
			if err := c.Decode(&sc); err != nil {
				return nil, err
			}
			if err := sc.Validate(); err != nil {
				return nil, fmt.Errorf("stage %s: %w", c.Name, err)
			}
			if sc.CacheDir != "" {
				sc.CacheDir = c.Path(sc.CacheDir)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error { return runStage(ctx, st, sc) }), nil
		}, Doc: "runs evolved candidates through ordered admission gates; writes items (parents + admitted), rejections, yield, gate_evidence"})
}

// runStage admits the candidates. It holds every parent and candidate (and
// what the gates produce): the gates are global, not per item — the dedup
// gate compares each candidate with every parent and admitted sibling, the
// compose gate caps admissions per lineage — and Admit takes them whole.
func runStage(ctx context.Context, st *engine.StageContext, sc StageConfig) error {
	parents, err := engine.ReadInputs[engine.Item](st, "items")
	if err != nil {
		return err
	}
	cands, err := engine.ReadInputs[engine.Item](st, evolve.KindEvolved)
	if err != nil {
		return err
	}
	var gen textgen.Generator = textgen.Template{}
	if sc.Generator == "chat" {
		w, err := engine.StageWriter[textgen.ChatLog](st, evolve.KindChatLog)
		if err != nil {
			return err
		}
		if gen, err = textgen.NewChat(sc.Chat, func(l textgen.ChatLog) error { return w.Write(l) }); err != nil {
			return err
		}
	}
	ver, err := evolve.NewVerifier(sc.Simulator, sc.Workers, sc.CacheDir, sc.Retries)
	if err != nil {
		return err
	}
	judges, err := evolve.NewJudges(ver, sc.Kernel, cands, st.Log)
	if err != nil {
		return err
	}
	defer judges.Close()
	env := Env{Judges: judges, Generator: gen, Log: st.Log, Stage: st.Name}
	// Progress counts candidates settled (rejected by a gate, or through
	// all of them): the total is the candidates and never moves.
	p := st.Progress(int64(len(cands)))
	env.GateDone = func(_ string, settled int64) { p.Add(settled) }
	a, err := New(sc.Config, env)
	if err != nil {
		return err
	}
	res, err := a.Admit(ctx, parents, cands)
	p.Done()
	if err != nil {
		return err
	}
	items := res.Admitted
	if sc.PassParents {
		items = append(append([]engine.Item(nil), parents...), res.Admitted...)
	}
	if err := engine.WriteRows(st, "items", items); err != nil {
		return err
	}
	if err := engine.WriteRows(st, "rejections", res.Rejections); err != nil {
		return err
	}
	if err := engine.WriteRows(st, KindYield, res.Yield); err != nil {
		return err
	}
	if err := engine.WriteRows(st, KindGateEvidence, res.Evidence); err != nil {
		return err
	}
	for k, v := range res.Counters() {
		st.Count(k, v)
	}
	st.Count("seeds", int64(len(parents)))
	st.PassedOn(int64(len(res.Admitted))) // the parents copied through are not a yield
	st.Log.Info("admit done", "candidates", len(cands), "admitted", len(res.Admitted), "rejected", len(res.Rejections))
	return nil
}
