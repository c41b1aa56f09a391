// Package evolve derives new tasks from seed tasks. A seed is routed by its
// contract state: a verified reference goes to contract-bound mutation (an
// operator changes the reference; instruction and verifier are derived from
// the same declared change) and to solution-first reconstruction (a new
// specification from the verified implementation, behaviour and verifier
// kept); a specification-only seed goes to instruction-first evolution.
// Every derived item records its route, operator, parent and lineage root.
// Whether a derived item is admitted is decided by the gates (ops/gates).
//
// RTL operators (Operators) edit the token stream of the parsed design
// (package vlog) with the clock/reset contract from Yosys extraction; the
// derived verifier is a seeded differential testbench generated from the
// declared interface with the mutated reference as golden model. Kernel
// operators (KernelOperators) rewrite the stores to output buffers of C
// and CUDA references; the kernel verifier judges against the item's
// (mutated) reference with the parent's harness settings.
package evolve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
	"github.com/crucible-data/crucible/rtl"
)

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("evolve config")

// Operator name of solution-first and instruction-first items.
const (
	OpRespecify = "respecify"
	OpReword    = "reword"
)

// Config configures evolution.
type Config struct {
	Operators        []string `yaml:"operators"`         // mutation operators (default: every non-control one)
	KernelOperators  []string `yaml:"kernel_operators"`  // kernel mutation operators (default: all)
	SolutionFirst    bool     `yaml:"solution_first"`    // emit a re-specified item per verified seed
	InstructionFirst bool     `yaml:"instruction_first"` // evolve specification-only seeds
	// VerifyReferences self-checks references whose status is not yet
	// verified (unverified seeds straight from ingest); failing ones are
	// not evolved. Off, only reference_status "verified" counts.
	VerifyReferences bool               `yaml:"verify_references"`
	TBCycles         int                `yaml:"tb_cycles"` // cycles of each generated differential testbench
	Seed             int32              `yaml:"seed"`      // mixed into every testbench seed
	Workers          int                `yaml:"workers"`   // concurrent seeds (0 = all cores)
	Generator        string             `yaml:"generator"` // template | chat
	Chat             textgen.ChatConfig `yaml:"chat"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Operators: DefaultOperatorNames(), KernelOperators: DefaultKernelOperatorNames(), SolutionFirst: true, InstructionFirst: true, VerifyReferences: true,
		TBCycles: 200, Seed: 1, Generator: "template", Chat: textgen.DefaultChatConfig()}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var bad []string
	if len(c.Operators) == 0 && !c.SolutionFirst {
		bad = append(bad, "operators is empty and solution_first is off: nothing to do")
	}
	seen := map[string]bool{}
	for _, n := range c.Operators {
		if _, ok := OperatorByName(n); !ok {
			bad = append(bad, fmt.Sprintf("operators: unknown operator %q", n))
		}
		if seen[n] {
			bad = append(bad, fmt.Sprintf("operators: %q listed twice", n))
		}
		seen[n] = true
	}
	for _, n := range c.KernelOperators {
		if _, ok := KernelOperatorByName(n); !ok {
			bad = append(bad, fmt.Sprintf("kernel_operators: unknown operator %q", n))
		}
	}
	if c.TBCycles < 10 || c.TBCycles > 100000 {
		bad = append(bad, fmt.Sprintf("tb_cycles %d (want 10..100000)", c.TBCycles))
	}
	if c.Workers < 0 {
		bad = append(bad, "workers must be >= 0")
	}
	switch c.Generator {
	case "template":
	case "chat":
		if err := c.Chat.Validate(); err != nil {
			bad = append(bad, "chat: "+err.Error())
		}
	default:
		bad = append(bad, fmt.Sprintf("generator %q (want template or chat)", c.Generator))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// Result is what Evolve produced.
type Result struct {
	Candidates []engine.Item
	Counts     map[string]int64   // funnel counters: seeds, candidates, candidates.<op>, skipped.<why>, not_applicable.<op>
	Skipped    []engine.Rejection // seeds that could not be evolved and why (data, not errors)
}

// Evolver derives candidate items from seeds.
type Evolver struct {
	cfg Config
	gen textgen.Generator
	// judges self-check seed references (RTL required when
	// VerifyReferences is on; kernel seeds without a kernel judge are
	// skipped until verified elsewhere).
	judges *engine.Judges
	log    *slog.Logger
	ops    []Operator
	kops   []KernelOperator
}

// New builds an Evolver. judges may be nil when VerifyReferences is off.
func New(cfg Config, gen textgen.Generator, judges *engine.Judges, log *slog.Logger) (*Evolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if gen == nil {
		gen = textgen.Template{}
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.NumCPU()
	}
	e := &Evolver{cfg: cfg, gen: gen, judges: judges, log: log}
	for _, n := range cfg.Operators {
		op, _ := OperatorByName(n)
		e.ops = append(e.ops, op)
	}
	for _, n := range cfg.KernelOperators {
		op, _ := KernelOperatorByName(n)
		e.kops = append(e.kops, op)
	}
	return e, nil
}

// Route names the route a seed takes ("" when it cannot be evolved).
func Route(it engine.Item) string {
	switch {
	case strings.TrimSpace(it.Reference) == "":
		return engine.RouteInstructionFirst
	case it.ReferenceStatus == engine.RefVerified:
		return engine.RouteContractMutation
	}
	return ""
}

type seedOut struct {
	cands   []engine.Item
	skipped []engine.Rejection
	counts  map[string]int64
}

// Evolve derives candidates from every seed; output order is seed order,
// then operator order, so runs are deterministic. With VerifyReferences it
// sets reference_status on seeds in place (the caller's slice).
func (e *Evolver) Evolve(ctx context.Context, seeds []engine.Item) (*Result, error) {
	if e.cfg.VerifyReferences {
		if err := e.verifyReferences(ctx, seeds); err != nil {
			return nil, err
		}
	}
	outs := make([]seedOut, len(seeds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Workers)
	for i := range seeds {
		g.Go(func() error {
			o, err := e.evolveSeed(gctx, seeds[i])
			outs[i] = o
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res := &Result{Counts: map[string]int64{"seeds": int64(len(seeds))}}
	for _, o := range outs {
		res.Candidates = append(res.Candidates, o.cands...)
		res.Skipped = append(res.Skipped, o.skipped...)
		for k, v := range o.counts {
			res.Counts[k] += v
		}
	}
	res.Counts["candidates"] = int64(len(res.Candidates))
	return res, nil
}

// verifyReferences self-checks the references that are not verified yet
// through the run's judges and sets reference_status on the seeds (in
// place). RTL seeds need an RTL judge; kernel seeds without a kernel judge
// keep their status (the gates reject an unverified reference).
func (e *Evolver) verifyReferences(ctx context.Context, seeds []engine.Item) error {
	var idx []int
	var todo []engine.Item
	for i, s := range seeds {
		if strings.TrimSpace(s.Reference) == "" || s.ReferenceStatus == engine.RefVerified {
			continue
		}
		switch {
		case s.Domain == engine.DomainRTL && e.judges.For(engine.DomainRTL) == nil:
			return fmt.Errorf("%w: verify_references is on but no RTL verifier was given", ErrConfig)
		case s.Domain == engine.DomainRTL, s.Domain == engine.DomainKernel && e.judges.For(engine.DomainKernel) != nil:
			idx = append(idx, i)
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	evs, err := e.judges.SelfCheckAll(ctx, todo)
	if err != nil {
		return err
	}
	for k, ev := range evs {
		seeds[idx[k]].ReferenceStatus = engine.ReferenceStatusOf(ev)
	}
	return nil
}

func skip(it engine.Item, reason, detail string) engine.Rejection {
	return engine.Rejection{ItemID: it.ItemID, Stage: "evolve", Gate: "route", Reason: reason, Detail: detail}
}

func (e *Evolver) evolveSeed(ctx context.Context, seed engine.Item) (seedOut, error) {
	o := seedOut{counts: map[string]int64{}}
	if seed.Domain != engine.DomainRTL && seed.Domain != engine.DomainKernel {
		o.counts["skipped.domain_"+seed.Domain]++
		o.skipped = append(o.skipped, skip(seed, "unsupported_domain", "no operators for domain "+seed.Domain))
		return o, nil
	}
	route := Route(seed)
	if seed.Domain == engine.DomainKernel {
		if route != engine.RouteContractMutation {
			o.counts["skipped.kernel_reference_"+seed.ReferenceStatus]++
			o.skipped = append(o.skipped, skip(seed, "reference_not_verified", "kernel reference_status "+seed.ReferenceStatus+" (kernel seeds need a verified reference; configure a kernel backend)"))
			return o, nil
		}
		return e.evolveKernel(ctx, seed, o)
	}
	switch route {
	case "":
		o.counts["skipped.reference_"+seed.ReferenceStatus]++
		o.skipped = append(o.skipped, skip(seed, "reference_not_verified", "reference_status "+seed.ReferenceStatus))
		return o, nil
	case engine.RouteInstructionFirst:
		if !e.cfg.InstructionFirst {
			return o, nil
		}
		it, err := e.instructionFirst(ctx, seed)
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			o.counts["skipped.generator"]++
			o.skipped = append(o.skipped, skip(seed, "generator_failed", err.Error()))
			return o, nil
		}
		o.cands = append(o.cands, it)
		o.counts["candidates."+OpReword]++
		return o, nil
	}
	parentIface, err := rtl.ExtractInterface(ctx, seed.Reference, rtl.RefModuleName)
	if err != nil {
		if ctx.Err() != nil {
			return o, ctx.Err()
		}
		o.counts["skipped.extract"]++
		o.skipped = append(o.skipped, skip(seed, "interface_extraction_failed", err.Error()))
		return o, nil
	}
	d, err := vlog.Parse(seed.Reference, rtl.RefModuleName)
	if err != nil {
		o.counts["skipped.parse"]++
		o.skipped = append(o.skipped, skip(seed, "parse_failed", err.Error()))
		return o, nil
	}
	if e.cfg.SolutionFirst {
		it, err := e.solutionFirst(ctx, seed, parentIface)
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			o.counts["generator_failed."+OpRespecify]++
		} else {
			o.cands = append(o.cands, it)
			o.counts["candidates."+OpRespecify]++
		}
	}
	for _, op := range e.ops {
		m, err := op.Apply(d, parentIface)
		if errors.Is(err, ErrNotApplicable) {
			o.counts["not_applicable."+op.Name]++
			continue
		}
		if err != nil {
			o.counts["operator_error."+op.Name]++
			e.log.Warn("evolve: operator failed", "seed", seed.ItemID, "operator", op.Name, "err", err)
			continue
		}
		it, err := e.mutationItem(ctx, seed, parentIface, op, m)
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			o.counts["derive_failed."+op.Name]++
			e.log.Warn("evolve: deriving the item failed", "seed", seed.ItemID, "operator", op.Name, "err", err)
			continue
		}
		o.cands = append(o.cands, it)
		o.counts["candidates."+op.Name]++
	}
	return o, nil
}

func (e *Evolver) evolveKernel(ctx context.Context, seed engine.Item, o seedOut) (seedOut, error) {
	if e.cfg.SolutionFirst {
		it, err := e.solutionFirst(ctx, seed, seed.Interface)
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			o.counts["generator_failed."+OpRespecify]++
		} else {
			o.cands = append(o.cands, it)
			o.counts["candidates."+OpRespecify]++
		}
	}
	for _, op := range e.kops {
		m, err := op.Apply(seed.Reference, seed.Interface, seed.Verifier.Harness)
		if errors.Is(err, ErrNotApplicable) {
			o.counts["not_applicable."+op.Name]++
			continue
		}
		if err != nil {
			o.counts["operator_error."+op.Name]++
			continue
		}
		it := e.derived(seed, engine.RouteContractMutation, op.Name)
		resp, err := e.gen.Generate(ctx, textgen.Request{Role: textgen.RoleProposal, ItemID: it.ItemID, Family: seed.Family,
			ParentInstruction: seed.Instruction, Change: m.Change, Interface: m.Interface})
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			o.counts["derive_failed."+op.Name]++
			continue
		}
		// The kernel verifier judges against the item's reference: the
		// mutated reference is the golden model, the harness (backend,
		// entry, trials) is the parent's.
		it.Instruction, it.Interface, it.Reference, it.Verifier = resp.Text, m.Interface, m.Source, seed.Verifier
		seal(&it)
		o.cands = append(o.cands, it)
		o.counts["candidates."+op.Name]++
	}
	return o, nil
}
