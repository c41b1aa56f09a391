// Package gates decides which evolved items are admitted. Gates run in a
// configured order (default static → strength → audit → dedup → difficulty
// → compose), cheap ones first; a rejected item stops at its gate with an
// engine.Rejection naming the gate, a reason code and a detail. Only
// infrastructure failures are retried (inside the RTL verifier, which
// retries worker crashes and similar per its config); an item whose verdict
// stays unjudged is not admitted (reason "unjudged").
//
// The invariant of a contract mutation is checked by execution: the
// evolved reference passes the evolved verifier (audit: the rtl reference
// self-check under Icarus, or the kernel verifier with the reference as its
// own candidate) and the parent reference fails it (strength). When the
// operator changed the interface, the parent is adapted by a wrapper with
// the evolved ports (evolve.AdaptParent: shared ports connected by name,
// Verilog padding/truncation where widths differ, missing outputs driven
// 0, padded bits following the parent's X); a reset-polarity change keeps
// the port names, so the parent runs as is. A kernel parent runs as is
// against the evolved buffers (a dtype change makes it read float64 data
// as float32, which fails). The fraction of compared samples (RTL) or
// output elements (kernel, first failing output) on which the parent
// differs is the behavioural distance in the yield report.
package gates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// Gate names.
const (
	GateStatic     = "static"
	GateStrength   = "strength"
	GateAudit      = "audit"
	GateDedup      = "dedup"
	GateDifficulty = "difficulty"
	GateCompose    = "compose"
)

// DefaultOrder is the default gate order.
var DefaultOrder = []string{GateStatic, GateStrength, GateAudit, GateDedup, GateDifficulty, GateCompose}

// Reason codes (besides dedup's exact_duplicate / near_duplicate).
const (
	ReasonFormat            = "format"
	ReasonSize              = "size"
	ReasonNoReference       = "no_reference"
	ReasonInterfaceChanged  = "interface_changed"
	ReasonLeakage           = "leakage"
	ReasonParentMissing     = "parent_missing"
	ReasonNotDistinguished  = "parent_not_distinguished"
	ReasonParentUnrunnable  = "parent_unrunnable"
	ReasonWeakVerifier      = "weak_verifier"
	ReasonUnjudged          = "unjudged"
	ReasonReferenceCompile  = "reference_compile"
	ReasonReferenceFailed   = "reference_failed"
	ReasonInterfaceMismatch = "interface_mismatch"
	ReasonSpecAudit         = "spec_audit"
	ReasonTooSmall          = "too_small"
	ReasonTooLarge          = "too_large"
	ReasonTooCostly         = "too_costly"
	ReasonLineageCap        = "lineage_cap"
)

// Candidate is one evolved item on its way through the gates.
type Candidate struct {
	Item   engine.Item
	Parent *engine.Item // nil when the parent is not among the inputs
	// Rejection is set by the gate that stops the item.
	Rejection *engine.Rejection
	// Deferred names a gate that could not judge the item because its
	// reference itself does not pass (the audit gate's question); a later
	// audit gate settles it, otherwise the item is rejected unjudged.
	Deferred string
	// Distance is the fraction of compared output samples on which the
	// (adapted) parent differs from the evolved reference under the evolved
	// verifier; -1 when not measured.
	Distance   float64
	SimSeconds float64 // simulator wall time spent on this item by the gates (reports only: it varies run to run)
	// Work is the deterministic verification cost written to Item.Cost:
	// samples the RTL verifier compares for the reference, or output
	// elements × trials for a kernel.
	Work     float64
	Evidence []engine.Evidence
}

func (c *Candidate) reject(gate, reason, detail string) {
	if c.Rejection == nil {
		c.Rejection = &engine.Rejection{ItemID: c.Item.ItemID, Stage: "admit", Gate: gate, Reason: reason, Detail: detail}
	}
}

func (c *Candidate) addEvidence(evs ...engine.Evidence) {
	for _, ev := range evs {
		if m, ok := ev.Measurement("wall_time_ms"); ok {
			c.SimSeconds += m.Float / 1000
		} else if m, ok := ev.Measurement(measWallShare); ok {
			c.SimSeconds += m.Float / 1000
		}
		c.Evidence = append(c.Evidence, ev)
	}
}

// Gate checks live candidates (not yet rejected), setting Rejection on
// those it stops. The error is for infrastructure the whole batch depends
// on (cancellation, a broken config), never for a finding.
type Gate interface {
	Name() string
	Check(ctx context.Context, cands []*Candidate) error
}

// Env is what gates share: the run's judges (the RTL judge is required by
// the strength and audit gates, and its reference self-check cache is
// shared by them; without a kernel judge kernel items are rejected
// unjudged), the audit generator and a logger.
type Env struct {
	Judges    *engine.Judges
	Generator textgen.Generator
	Log       *slog.Logger
	Stage     string // stage name written into rejections ("admit")
	// GateDone, when set, is told after each gate how many candidates it
	// settled: those it rejected and, after the last gate, those it passed.
	// The settled counts add up to the number of candidates, so a progress
	// bar over the candidates never changes its total.
	GateDone func(gate string, judged int64)
}

// FunnelStep is one gate's throughput.
type FunnelStep struct {
	Gate     string
	In       int64
	Rejected int64
	Passed   int64
}

// Result is an admission run.
type Result struct {
	Admitted   []engine.Item
	Rejections []engine.Rejection
	Evidence   []engine.Evidence
	Funnel     []FunnelStep
	Yield      []YieldRow
	Candidates []*Candidate
}

// Counters flattens the funnel for the run summary: candidates,
// gate<k>.<name>.in / .passed / .rejected, rejected.<gate>.<reason>,
// operator.<op>.candidates / .admitted (the yield), admitted.
func (r *Result) Counters() map[string]int64 {
	m := map[string]int64{"candidates": int64(len(r.Candidates)), "admitted": int64(len(r.Admitted))}
	for k, f := range r.Funnel {
		p := fmt.Sprintf("gate%d.%s.", k+1, f.Gate)
		m[p+"in"], m[p+"rejected"], m[p+"passed"] = f.In, f.Rejected, f.Passed
	}
	for _, rj := range r.Rejections {
		m["rejected."+rj.Gate+"."+rj.Reason]++
	}
	for _, y := range r.Yield {
		if y.Operator != "*" {
			m["operator."+y.Operator+".candidates"] = y.Candidates
			m["operator."+y.Operator+".admitted"] = y.Admitted
		}
	}
	return m
}

// Admitter runs the configured gates.
type Admitter struct {
	cfg   Config
	env   Env
	gates []Gate
}

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("gates config")

// New builds the gates in cfg.Order.
func New(cfg Config, env Env) (*Admitter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	RegisterMutantSources()
	if env.Log == nil {
		env.Log = slog.Default()
	}
	if env.Generator == nil {
		env.Generator = textgen.Template{}
	}
	if env.Stage == "" {
		env.Stage = "admit"
	}
	a := &Admitter{cfg: cfg, env: env}
	for _, name := range cfg.Order {
		switch name {
		case GateStatic:
			a.gates = append(a.gates, &staticGate{cfg.Static})
		case GateStrength:
			a.gates = append(a.gates, &strengthGate{cfg: cfg.Strength, env: env})
		case GateAudit:
			a.gates = append(a.gates, &auditGate{cfg: cfg.Audit, env: env})
		case GateDedup:
			a.gates = append(a.gates, &dedupGate{cfg: cfg.Dedup, log: env.Log})
		case GateDifficulty:
			a.gates = append(a.gates, &difficultyGate{cfg.Difficulty})
		case GateCompose:
			a.gates = append(a.gates, &composeGate{cfg.Compose})
		}
	}
	if a.needsVerifier() && !env.hasRTLAudit() {
		return nil, fmt.Errorf("%w: the strength and audit gates need an RTL judge with a harness-strength audit", ErrConfig)
	}
	return a, nil
}

func (a *Admitter) needsVerifier() bool {
	for _, n := range a.cfg.Order {
		if n == GateStrength || n == GateAudit {
			return true
		}
	}
	return false
}

// Admit runs every candidate through the gates. parents are the items the
// candidates were derived from (looked up by parent_id).
func (a *Admitter) Admit(ctx context.Context, parents, cands []engine.Item) (*Result, error) {
	byID := make(map[string]*engine.Item, len(parents))
	for i := range parents {
		byID[parents[i].ItemID] = &parents[i]
	}
	all := make([]*Candidate, len(cands))
	for i := range cands {
		all[i] = &Candidate{Item: cands[i], Parent: byID[cands[i].ParentID], Distance: -1}
	}
	res := &Result{Candidates: all}
	for gi, g := range a.gates {
		var live []*Candidate
		for _, c := range all {
			if c.Rejection == nil {
				live = append(live, c)
			}
		}
		step := FunnelStep{Gate: g.Name(), In: int64(len(live))}
		if len(live) > 0 {
			if err := g.Check(ctx, live); err != nil {
				return nil, fmt.Errorf("gate %s: %w", g.Name(), err)
			}
		}
		for _, c := range live {
			if c.Rejection != nil {
				c.Rejection.Stage = a.env.Stage
				step.Rejected++
			}
		}
		step.Passed = step.In - step.Rejected
		res.Funnel = append(res.Funnel, step)
		if a.env.GateDone != nil {
			decided := step.Rejected
			if gi == len(a.gates)-1 {
				decided = step.In // the survivors of the last gate are decided too
			}
			a.env.GateDone(g.Name(), decided)
		}
		a.env.Log.Info("gate done", "gate", g.Name(), "in", step.In, "rejected", step.Rejected)
	}
	for _, c := range all {
		if c.Rejection == nil && c.Deferred != "" {
			c.reject(c.Deferred, ReasonUnjudged, "the evolved reference does not pass its own verifier and no audit gate ran to judge it")
			c.Rejection.Stage = a.env.Stage
		}
		if c.Rejection != nil {
			res.Rejections = append(res.Rejections, *c.Rejection)
		} else {
			res.Admitted = append(res.Admitted, c.Item)
		}
		res.Evidence = append(res.Evidence, c.Evidence...)
	}
	res.Yield = BuildYield(all)
	return res, nil
}

// hasRTLAudit reports whether the set's RTL judge measures harness
// strength (engine.StrengthAuditor; a lazy judge forwards it).
func (e Env) hasRTLAudit() bool {
	_, ok := e.Judges.For(engine.DomainRTL).(engine.StrengthAuditor)
	return ok
}
