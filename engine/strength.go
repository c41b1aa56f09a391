package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Harness strength, once for every domain.
//
// A pass means something only if the verifier could have failed. A judge
// that can measure that implements StrengthAuditor: it judges, through the
// path candidates take, candidates known to be wrong — trivial ones built
// from the task's interface (RTL: floating, constant, stuck or inverted
// outputs; kernels: zeros, a constant, a copy of an input, the reference's
// answer for other inputs) and mutants of the reference (its own, e.g.
// RTL netlist mutants, and those of every MutantSource registered for its
// domain: ops/gates registers the evolution operators) — and reports a
// StrengthReport. The admission gates read every domain's report through
// Judges.Audit and one verdict rule (ops/gates strengthVerdict); the audit
// gate records it on the reference's evidence (Measurements) and the item
// (ItemStrength).

// StrengthCandidate is one known-wrong candidate of an audit.
type StrengthCandidate struct {
	Name string // e.g. trivial:all_x, mutant:netlist_3, mutant:arith_swap
	Code string // candidate code, judged against the item like any candidate
}

// Candidate-name prefixes of audit candidates.
const (
	StrengthTrivialPrefix = "trivial:"
	StrengthMutantPrefix  = "mutant:"
)

// StrengthTally counts one class of audit candidates.
type StrengthTally struct {
	Tried      int      `json:"tried"`  // judged, neither invalid nor equivalent
	Killed     int      `json:"killed"` // of those, failed by the verifier
	Survivors  []string `json:"survivors,omitempty"`
	Equivalent []string `json:"equivalent,omitempty"` // passed, and behave like the reference
	Invalid    []string `json:"invalid,omitempty"`    // did not build: they test nothing
}

// StrengthReport is the measured strength of one task's verifier.
type StrengthReport struct {
	// Measured is false when the audit could not run (Stage, Cause say why);
	// then nothing is known about the verifier and passes are not trusted.
	Measured bool          `json:"measured"`
	Stage    string        `json:"stage,omitempty"`
	Cause    string        `json:"cause,omitempty"`
	Trivial  StrengthTally `json:"trivial"`
	Mutants  StrengthTally `json:"mutants"`
	// Notes say what the audit could not generate (e.g. no netlist mutants
	// when Yosys cannot read the reference).
	Notes []string `json:"notes,omitempty"`
	// NothingToMutate: the reference has nothing a mutant could change (an
	// RTL netlist with no cell, a kernel no operator applies to), so the
	// kill rate does not apply.
	NothingToMutate bool `json:"nothing_to_mutate,omitempty"`
	Candidates      int  `json:"candidates"` // audit candidates judged
	// Definitive: no transient infrastructure failure (engine.Transient)
	// shaped the report, so it may be cached.
	Definitive bool `json:"-"`
}

// Weak reports whether a trivial candidate passed the verifier.
func (r StrengthReport) Weak() bool { return r.Measured && len(r.Trivial.Survivors) > 0 }

// MutantKillRate is killed/tried of the mutants; ok is false when no
// mutant could be judged.
func (r StrengthReport) MutantKillRate() (rate float64, ok bool) {
	if r.Mutants.Tried == 0 {
		return 0, false
	}
	return float64(r.Mutants.Killed) / float64(r.Mutants.Tried), true
}

// Survivors lists every surviving candidate's name.
func (r StrengthReport) Survivors() []string {
	return append(append([]string(nil), r.Trivial.Survivors...), r.Mutants.Survivors...)
}

// Summary is a one-line account for causes and logs.
func (r StrengthReport) Summary() string {
	if !r.Measured {
		return "verifier strength not measured: " + r.Stage + ": " + r.Cause
	}
	s := fmt.Sprintf("verifier kills %d/%d trivial candidates and %d/%d mutants", r.Trivial.Killed, r.Trivial.Tried, r.Mutants.Killed, r.Mutants.Tried)
	if sv := r.Survivors(); len(sv) > 0 {
		s += "; survivors: " + strings.Join(sv, ", ")
	}
	return s
}

// ItemStrength is the report in the item's schema (Item.VerifierStrength).
func (r StrengthReport) ItemStrength() VerifierStrength {
	if !r.Measured {
		return VerifierStrength{}
	}
	return VerifierStrength{Measured: true,
		TrivialKilled: int32(r.Trivial.Killed), TrivialTried: int32(r.Trivial.Tried),
		MutantKilled: int32(r.Mutants.Killed), MutantTried: int32(r.Mutants.Tried),
		Survivors: r.Survivors()}
}

// Measurements are the report as evidence measurements (on the reference's
// row): verifier_strength is killed/tried over all audit candidates.
func (r StrengthReport) Measurements() []Measurement {
	if !r.Measured {
		return []Measurement{TextM("verifier_strength_unmeasured", clip(r.Stage+": "+r.Cause, 300))}
	}
	killed, tried := r.Trivial.Killed+r.Mutants.Killed, r.Trivial.Tried+r.Mutants.Tried
	rate := 0.0
	if tried > 0 {
		rate = float64(killed) / float64(tried)
	}
	ms := []Measurement{
		FloatM("verifier_strength", rate),
		IntM("strength_killed", int64(killed)), IntM("strength_tried", int64(tried)),
		IntM("strength_trivial_killed", int64(r.Trivial.Killed)), IntM("strength_trivial_tried", int64(r.Trivial.Tried)),
		IntM("strength_mutants_killed", int64(r.Mutants.Killed)), IntM("strength_mutants_tried", int64(r.Mutants.Tried)),
		IntM("strength_equivalent", int64(len(r.Trivial.Equivalent)+len(r.Mutants.Equivalent))),
	}
	if sv := r.Survivors(); len(sv) > 0 {
		ms = append(ms, TextM("strength_survivors", clip(strings.Join(sv, ", "), 1000)))
	}
	return ms
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// StrengthAuditor is a judge that measures its verifier's strength on an
// item. The error is for the call (a cancelled context); everything the
// audit found, an unmeasurable task included, is in the report.
type StrengthAuditor interface {
	Audit(ctx context.Context, item Item) (StrengthReport, error)
}

// Audit routes an item's strength audit to its domain's judge. A domain
// with no judge, or whose judge has no audit, gets an unmeasured report
// (stage toolchain_unsupported): its passes are not trusted.
func (s *Judges) Audit(ctx context.Context, item Item) (StrengthReport, error) {
	j := s.For(item.Domain)
	if j == nil {
		return StrengthReport{Stage: StageToolchainUnsupported, Cause: "no judge for domain " + item.Domain, Definitive: true}, nil
	}
	if a, ok := j.(StrengthAuditor); ok {
		return a.Audit(ctx, item)
	}
	return noAudit(item.Domain), nil
}

// noAudit is the report for a domain whose judge measures no strength.
func noAudit(domain string) StrengthReport {
	return StrengthReport{Stage: StageToolchainUnsupported, Cause: "the " + domain + " judge measures no verifier strength", Definitive: true}
}

// Audit forwards to the built judge's audit (see Judges.Audit).
func (l *lazyJudge) Audit(ctx context.Context, item Item) (StrengthReport, error) {
	j, err := l.get()
	if err != nil {
		return StrengthReport{}, err
	}
	if a, ok := j.(StrengthAuditor); ok {
		return a.Audit(ctx, item)
	}
	return noAudit(item.Domain), nil
}

// MutantSource derives up to max mutants of item's reference, given as ref
// in the candidate form the domain's judge takes, whose top module (RTL:
// the DUT name) or entry point (kernels) is top; item.Interface is the
// interface the audit measured. Names come without the "mutant:" prefix; a
// source that does not apply returns none.
type MutantSource func(item Item, ref, top string, max int) []StrengthCandidate

var mutantSources struct {
	mu  sync.Mutex
	fns map[string]map[string]MutantSource // domain -> name -> source
}

// RegisterMutantSource adds a mutant source to every audit of a domain's
// judges (ops/gates registers the evolution operators, which the verifier
// packages cannot import). Its name is part of the audits' cache keys; a
// second registration under one name replaces the first.
func RegisterMutantSource(domain, name string, fn MutantSource) {
	mutantSources.mu.Lock()
	defer mutantSources.mu.Unlock()
	if mutantSources.fns == nil {
		mutantSources.fns = map[string]map[string]MutantSource{}
	}
	if mutantSources.fns[domain] == nil {
		mutantSources.fns[domain] = map[string]MutantSource{}
	}
	mutantSources.fns[domain][name] = fn
}

// MutantSources are a domain's registered sources, sorted by name.
func MutantSources(domain string) (names []string, fns []MutantSource) {
	mutantSources.mu.Lock()
	defer mutantSources.mu.Unlock()
	for n := range mutantSources.fns[domain] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fns = append(fns, mutantSources.fns[domain][n])
	}
	return names, fns
}
