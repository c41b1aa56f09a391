package gates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// auditGate checks the contract itself under the trusted toolchain: the
// evolved reference compiles and passes its own verifier (the rtl
// reference self-check, Icarus), Yosys reads the same ports the item
// declares, and the generator's audit role accepts the instruction.
type auditGate struct {
	cfg AuditConfig
	env Env
}

func (g *auditGate) Name() string { return GateAudit }

func (g *auditGate) Check(ctx context.Context, cands []*Candidate) error {
	var items []engine.Item
	var idx []*Candidate
	var kernelCands []*Candidate
	for _, c := range cands {
		switch c.Item.Domain {
		case engine.DomainRTL:
			items = append(items, c.Item)
			idx = append(idx, c)
		case engine.DomainKernel:
			kernelCands = append(kernelCands, c)
		default:
			c.reject(GateAudit, ReasonUnjudged, "no verifier for domain "+c.Item.Domain)
		}
	}
	if err := g.checkKernels(ctx, kernelCands); err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	evs, err := g.env.Judges.SelfCheckAll(ctx, items)
	if err != nil {
		return err
	}
	var passed []*Candidate
	for k, ev := range evs {
		c := idx[k]
		if ev.Status == engine.StatusPass {
			// The reference's evidence carries its verifier's strength.
			ev.Measurements = append(ev.Measurements, strengthOf(ctx, g.env.Judges, items[k]).Measurements()...)
		}
		c.addEvidence(ev)
		switch {
		case ev.Status == engine.StatusPass:
			if m, ok := ev.Measurement("expected_samples"); ok {
				c.Work = float64(m.Int)
			}
			passed = append(passed, c)
		case ev.FailureStage == engine.StageReferenceSelfCheck && strings.Contains(ev.Cause, ": compile:"):
			c.reject(GateAudit, ReasonReferenceCompile, ev.Cause+firstLog(ev))
		case ev.FailureStage == engine.StageReferenceSelfCheck:
			c.reject(GateAudit, ReasonReferenceFailed, ev.Cause)
		default:
			c.reject(GateAudit, ReasonUnjudged, ev.FailureStage+": "+ev.Cause)
		}
	}
	g2, gctx := errgroup.WithContext(ctx)
	g2.SetLimit(g.env.Judges.Workers())
	for _, c := range passed {
		g2.Go(func() error { return g.contract(gctx, c) })
	}
	if err := g2.Wait(); err != nil {
		return err
	}
	return nil
}

// checkKernels runs each evolved kernel reference as its own candidate:
// it must compile, run and match itself (determinism included).
func (g *auditGate) checkKernels(ctx context.Context, cands []*Candidate) error {
	if len(cands) == 0 {
		return nil
	}
	if g.env.Judges.For(engine.DomainKernel) == nil {
		for _, c := range cands {
			c.reject(GateAudit, ReasonUnjudged, "no kernel verifier configured")
		}
		return nil
	}
	items := map[string]engine.Item{}
	runs := make([]engine.Candidate, len(cands))
	for i, c := range cands {
		items[c.Item.ItemID] = c.Item
		runs[i] = engine.Candidate{ItemID: c.Item.ItemID, CandidateID: engine.ReferenceCandidateID, Code: c.Item.Reference}
	}
	start := time.Now()
	evs, err := g.env.Judges.JudgeAll(ctx, items, runs)
	if err != nil {
		return err
	}
	shareWallTime(evs, time.Since(start))
	for i, ev := range evs {
		c := cands[i]
		c.addEvidence(ev)
		switch {
		case ev.Status == engine.StatusPass:
			c.Deferred = ""
			c.Item.ReferenceStatus = engine.RefVerified
			c.Work = kernelWork(c.Item, ev)
		case ev.FailureStage == engine.StageCompile || ev.FailureStage == engine.StageElaborate:
			c.reject(GateAudit, ReasonReferenceCompile, ev.Cause)
		case ev.Status == engine.StatusFail:
			c.reject(GateAudit, ReasonReferenceFailed, ev.FailureStage+": "+ev.Cause)
		default:
			c.reject(GateAudit, ReasonUnjudged, ev.FailureStage+": "+ev.Cause)
		}
	}
	return nil
}

// kernelWork is trials × output elements.
func kernelWork(it engine.Item, ev engine.Evidence) float64 {
	trials := int64(1)
	if m, ok := ev.Measurement("trials"); ok && m.Int > 0 {
		trials = m.Int
	}
	var elems int64
	for _, a := range it.Interface.Args {
		if a.Role != "output" {
			continue
		}
		n := int64(1)
		for _, d := range a.Shape {
			n *= d
		}
		elems += n
	}
	return float64(trials * elems)
}

// yosysBlind reports whether Yosys reads the parent's reset exactly as it
// reads the evolved one although the operator changed it: then no
// flip-flop shows the reset to Yosys (it falls back to the port name), so
// its reading cannot contradict the declaration — the behavioural checks
// (the parent fails, the reference passes) stand on their own.
func (g *auditGate) yosysBlind(ctx context.Context, c *Candidate, evolved engine.Interface) bool {
	if c.Parent == nil || strings.TrimSpace(c.Parent.Reference) == "" {
		return false
	}
	p, err := rtl.ExtractInterface(ctx, c.Parent.Reference, rtl.RefModuleName)
	return err == nil && p.Reset == evolved.Reset && p.ResetPolarity == evolved.ResetPolarity && p.ResetKind == evolved.ResetKind
}

func firstLog(ev engine.Evidence) string {
	l := strings.TrimSpace(ev.LogExcerpt)
	if l == "" {
		return ""
	}
	if i := strings.IndexByte(l, '\n'); i > 0 {
		l = l[:i]
	}
	return " | " + l
}

func (g *auditGate) contract(ctx context.Context, c *Candidate) error {
	it := &c.Item
	if g.cfg.CheckInterface {
		got, err := rtl.ExtractInterface(ctx, it.Reference, rtl.RefModuleName)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.reject(GateAudit, ReasonReferenceCompile, "Yosys cannot read the reference: "+err.Error())
			return nil
		}
		if !evolve.SamePorts(got, it.Interface) {
			c.reject(GateAudit, ReasonInterfaceMismatch, fmt.Sprintf("declared ports %s, Yosys reads %s", portList(it.Interface), portList(got)))
			return nil
		}
		// Clock/reset claims are checked where Yosys proves them from flip-flops.
		if it.Route == engine.RouteContractMutation && got.Reset != "" && got.Reset == it.Interface.Reset &&
			(got.ResetPolarity != it.Interface.ResetPolarity || got.ResetKind != it.Interface.ResetKind) &&
			!g.yosysBlind(ctx, c, got) {
			c.reject(GateAudit, ReasonInterfaceMismatch, fmt.Sprintf("declared reset %s %s/%s, Yosys reads %s/%s", it.Interface.Reset,
				it.Interface.ResetPolarity, it.Interface.ResetKind, got.ResetPolarity, got.ResetKind))
			return nil
		}
	}
	if g.cfg.SpecAudit {
		resp, err := g.env.Generator.Generate(ctx, textgen.Request{Role: textgen.RoleAudit, ItemID: it.ItemID, Instruction: it.Instruction, Interface: it.Interface})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.reject(GateAudit, ReasonUnjudged, "spec audit: "+err.Error())
			return nil
		}
		if !textgen.AuditPassed(resp.Text) {
			c.reject(GateAudit, ReasonSpecAudit, resp.Model+": "+resp.Text)
			return nil
		}
	}
	c.Deferred = ""
	it.ReferenceStatus = engine.RefVerified
	return nil
}
