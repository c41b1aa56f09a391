package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Judge is the one contract of every verifier (rtl.Verifier,
// kernels.Verifier, and the test doubles of the conformance suite in
// engine/judgetest). Every stage that needs verdicts — verify, admit's
// gates, evolution's reference checks, selection, synthesis — reaches its
// verifiers through a Judges set, so routing by domain, the fan-out, the
// retry policy and the verdict rules below exist once.
//
// Verdicts are data: Judge and SelfCheck return an error only when the whole
// call cannot go on (ctx cancelled). A missing toolchain, an unknown item or
// a crashed worker are unjudged evidence rows, never errors.
type Judge interface {
	// Domain is the item domain judged (DomainRTL, DomainKernel).
	Domain() string
	// Judge judges one candidate against its item.
	Judge(ctx context.Context, item Item, cand Candidate) (Evidence, error)
	// SelfCheck runs the item's reference under its own verifier, candidate
	// id ReferenceCandidateID: pass when the three parts of the item agree;
	// a reference its verifier rejects is unjudged at reference_self_check
	// (the item's fault, never a candidate's); a harness that accepts
	// trivial candidates is unjudged at weak_verifier.
	SelfCheck(ctx context.Context, item Item) (Evidence, error)
	// Check is nil when this machine can judge the domain; otherwise it
	// says what is missing (the doctor command and `verify` print it).
	Check(ctx context.Context) error
	// Close releases workers and devices; a closed judge is not used again.
	Close() error
}

// ReferenceCandidateID is the candidate id of a reference self-check.
const ReferenceCandidateID = "reference"

// ErrVerdict: a verifier returned evidence that breaks the verdict rules
// (a pass with a failure stage, a failure stage outside the taxonomy, an
// infrastructure fault blamed on the candidate). A verifier bug: the run
// stops rather than write a verdict nobody can trust.
var ErrVerdict = errors.New("verifier broke the verdict rules")

// CheckVerdict enforces the verdict rules on one evidence row: the status
// is pass, fail or unjudged; pass carries no failure stage; every stage is
// in the closed taxonomy; an infrastructure stage is never a fail.
func CheckVerdict(ev Evidence) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: item %q candidate %q: %s", ErrVerdict, ev.ItemID, ev.CandidateID, why)
	}
	switch ev.Status {
	case StatusPass:
		if ev.FailureStage != StageNone {
			return bad("pass with failure stage " + ev.FailureStage)
		}
	case StatusFail:
		if ev.FailureStage == StageNone {
			return bad("fail without a failure stage")
		}
		if IsInfraStage(ev.FailureStage) {
			return bad("fail at infrastructure stage " + ev.FailureStage)
		}
	case StatusUnjudged:
	default:
		return bad(fmt.Sprintf("status %q", ev.Status))
	}
	if !IsKnownStage(ev.FailureStage) {
		return bad(fmt.Sprintf("failure stage %q is not in the taxonomy", ev.FailureStage))
	}
	return nil
}

// ReferenceStatusOf maps a self-check's evidence to an item's
// reference_status, the same way for every domain.
func ReferenceStatusOf(ev Evidence) string {
	switch {
	case ev.Status == StatusPass:
		return RefVerified
	case ev.FailureStage == StageReferenceSelfCheck:
		return RefFailed
	default:
		return RefUnjudged
	}
}

// Transient reports whether an infrastructure stage may clear on its own
// (a worker crash, a full disk, a device fault): the only stages retried.
// A missing toolchain, a corrupt payload, a failing reference or a weak
// harness give the same answer every time.
func Transient(s FailureStage) bool {
	return s == StageWorkerCrash || s == StageDiskFull || s == StageDeviceFault
}

// RetryPolicy is the one retry rule of every verifier: a job whose outcome
// is a Transient stage runs again, up to Attempts times in all, waiting
// attempt×Backoff before each rerun.
type RetryPolicy struct {
	Attempts int
	Backoff  time.Duration
	Log      *slog.Logger // told about each retry; nil: slog.Default()
}

// Run calls job (attempt counts from 1) until its stage is not Transient or
// the attempts are spent, and returns how many attempts ran. job's error
// stops the loop at once (the caller's context ended).
func (p RetryPolicy) Run(ctx context.Context, what string, job func(ctx context.Context, attempt int) (stage FailureStage, cause string, err error)) (int32, error) {
	attempts := max(p.Attempts, 1)
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	var n int32
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 && p.Backoff > 0 {
			t := time.NewTimer(p.Backoff * time.Duration(attempt-1))
			select {
			case <-ctx.Done():
				t.Stop()
				return n, ctx.Err()
			case <-t.C:
			}
		}
		stage, cause, err := job(ctx, attempt)
		if err != nil {
			return n, err
		}
		n++
		if !Transient(stage) || attempt == attempts || ctx.Err() != nil {
			break
		}
		log.Warn(what+": infrastructure failure, retrying", "stage", stage, "cause", cause, "attempt", attempt)
	}
	return n, nil
}

// Judges is the set of judges a run uses, one per domain, and the one
// fan-out over them: bounded by Workers, results indexed like the
// candidates (never by completion order), every verdict checked by
// CheckVerdict.
type Judges struct {
	byDomain map[string]Judge
	workers  int
}

// NewJudges builds a set. workers bounds the concurrent Judge calls
// (<= 0: the number of CPUs); a judge bounds its own processes inside a
// call. Two judges of one domain are a configuration error.
func NewJudges(workers int, js ...Judge) (*Judges, error) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	s := &Judges{byDomain: map[string]Judge{}, workers: workers}
	for _, j := range js {
		if j == nil {
			continue
		}
		d := j.Domain()
		if _, dup := s.byDomain[d]; dup {
			return nil, fmt.Errorf("%w: two judges for domain %q", ErrConfig, d)
		}
		s.byDomain[d] = j
	}
	return s, nil
}

// Workers is the fan-out's bound.
func (s *Judges) Workers() int { return s.workers }

// For returns the judge of a domain, nil when the set has none.
func (s *Judges) For(domain string) Judge {
	if s == nil {
		return nil
	}
	return s.byDomain[domain]
}

// Domains lists the set's domains, sorted.
func (s *Judges) Domains() []string {
	var ds []string
	for d := range s.byDomain {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	return ds
}

// Judge routes one candidate to its item's domain. With no judge for the
// domain the candidate is unjudged at toolchain_unsupported.
func (s *Judges) Judge(ctx context.Context, item Item, cand Candidate) (Evidence, error) {
	j := s.For(item.Domain)
	if j == nil {
		return noJudge(item, cand.CandidateID, s.Domains()), nil
	}
	ev, err := j.Judge(ctx, item, cand)
	if err != nil {
		return ev, err
	}
	ev.ItemID, ev.CandidateID = cand.ItemID, cand.CandidateID
	return ev, CheckVerdict(ev)
}

// SelfCheck routes one item's reference self-check to its domain.
func (s *Judges) SelfCheck(ctx context.Context, item Item) (Evidence, error) {
	j := s.For(item.Domain)
	if j == nil {
		return noJudge(item, ReferenceCandidateID, s.Domains()), nil
	}
	ev, err := j.SelfCheck(ctx, item)
	if err != nil {
		return ev, err
	}
	ev.ItemID, ev.CandidateID = item.ItemID, ReferenceCandidateID
	return ev, CheckVerdict(ev)
}

// JudgeAll judges cands[i] against items[cands[i].ItemID] and returns the
// evidence indexed like cands. A candidate whose item is missing is
// unjudged at payload_corrupt; the error is for the whole call.
func (s *Judges) JudgeAll(ctx context.Context, items map[string]Item, cands []Candidate) ([]Evidence, error) {
	out := make([]Evidence, len(cands))
	err := s.fanOut(ctx, len(cands), func(ctx context.Context, i int) error {
		c := cands[i]
		it, ok := items[c.ItemID]
		if !ok {
			out[i] = Evidence{ItemID: c.ItemID, CandidateID: c.CandidateID, Status: StatusUnjudged,
				FailureStage: StagePayloadCorrupt, Cause: "no item with item_id " + c.ItemID, Attempts: 1,
				Provenance: EvidenceProvenance{Verifier: "judges"}}
			return nil
		}
		ev, err := s.Judge(ctx, it, c)
		out[i] = ev
		return err
	})
	return out, err
}

// SelfCheckAll self-checks every item's reference; out[i] is items[i]'s.
func (s *Judges) SelfCheckAll(ctx context.Context, items []Item) ([]Evidence, error) {
	out := make([]Evidence, len(items))
	err := s.fanOut(ctx, len(items), func(ctx context.Context, i int) error {
		ev, err := s.SelfCheck(ctx, items[i])
		out[i] = ev
		return err
	})
	return out, err
}

// ItemsByID indexes items for JudgeAll; the first of a repeated id wins.
func ItemsByID(items []Item) map[string]Item {
	m := make(map[string]Item, len(items))
	for _, it := range items {
		if _, dup := m[it.ItemID]; !dup {
			m[it.ItemID] = it
		}
	}
	return m
}

func (s *Judges) fanOut(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	return FanOut(ctx, s.workers, n, f)
}

// FanOut runs f(ctx, i) for i in [0, n) with at most limit at once, each
// writing its result into a slot indexed by i (never by completion order):
// the one fan-out of Judges and of the verifiers' own batch calls. The first
// error cancels the rest and is returned; so is the caller's cancellation.
func FanOut(ctx context.Context, limit, n int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := 0; i < n; i++ {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// Check asks every judge whether it can judge here; the map holds the
// domains that cannot, with why.
func (s *Judges) Check(ctx context.Context) map[string]error {
	out := map[string]error{}
	for d, j := range s.byDomain {
		if err := j.Check(ctx); err != nil {
			out[d] = err
		}
	}
	return out
}

// Close closes every judge.
func (s *Judges) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, d := range s.Domains() {
		errs = append(errs, s.byDomain[d].Close())
	}
	return errors.Join(errs...)
}

func noJudge(item Item, candID string, have []string) Evidence {
	return Evidence{ItemID: item.ItemID, CandidateID: candID, Status: StatusUnjudged, Attempts: 1,
		FailureStage: StageToolchainUnsupported, Provenance: EvidenceProvenance{Verifier: "judges"},
		Cause: fmt.Sprintf("no judge for domain %q in this run (judges: %s)", item.Domain, strings.Join(have, ", "))}
}

// LazyJudge builds its judge on first use, so a run that never judges a
// domain never probes its toolchain. A build error makes every call fail
// with it (Check reports it; Judge and SelfCheck return it as the call's
// error, since no verdict can be given by a judge that does not exist).
func LazyJudge(domain string, build func() (Judge, error)) Judge {
	return &lazyJudge{domain: domain, build: build}
}

type lazyJudge struct {
	domain string
	build  func() (Judge, error)
	once   sync.Once
	j      Judge
	err    error
	mu     sync.Mutex
	built  bool
}

func (l *lazyJudge) get() (Judge, error) {
	l.once.Do(func() {
		l.j, l.err = l.build()
		if l.err != nil {
			l.j = nil
		} else if l.j.Domain() != l.domain {
			l.err = fmt.Errorf("%w: lazy judge for %q built a judge for %q", ErrConfig, l.domain, l.j.Domain())
		}
		l.mu.Lock()
		l.built = true
		l.mu.Unlock()
	})
	return l.j, l.err
}

func (l *lazyJudge) Domain() string { return l.domain }

func (l *lazyJudge) Judge(ctx context.Context, item Item, cand Candidate) (Evidence, error) {
	j, err := l.get()
	if err != nil {
		return Evidence{}, err
	}
	return j.Judge(ctx, item, cand)
}

func (l *lazyJudge) SelfCheck(ctx context.Context, item Item) (Evidence, error) {
	j, err := l.get()
	if err != nil {
		return Evidence{}, err
	}
	return j.SelfCheck(ctx, item)
}

func (l *lazyJudge) Check(ctx context.Context) error {
	j, err := l.get()
	if err != nil {
		return err
	}
	return j.Check(ctx)
}

// RuleReference forwards to the built judge's ReferenceRuler, else rules
// as DefaultReferenceRuling does.
func (l *lazyJudge) RuleReference(ctx context.Context, it Item, ev Evidence) (Item, Evidence, *Rejection, error) {
	j, err := l.get()
	if err != nil {
		return it, ev, nil, err
	}
	if r, ok := j.(ReferenceRuler); ok {
		return r.RuleReference(ctx, it, ev)
	}
	it, rej := DefaultReferenceRuling(it, ev, false)
	return it, ev, rej, nil
}

// Close closes the judge if it was built; it does not build one to close.
func (l *lazyJudge) Close() error {
	l.mu.Lock()
	built := l.built
	l.mu.Unlock()
	if !built || l.j == nil {
		return nil
	}
	return l.j.Close()
}

// JudgeFunc makes a Judge of a function (test doubles, adapters): its
// self-check judges the item's reference as candidate "reference", Check
// is nil and Close does nothing.
func JudgeFunc(domain string, f func(ctx context.Context, item Item, cand Candidate) (Evidence, error)) Judge {
	return funcJudge{domain: domain, f: f}
}

type funcJudge struct {
	domain string
	f      func(ctx context.Context, item Item, cand Candidate) (Evidence, error)
}

func (j funcJudge) Domain() string { return j.domain }
func (j funcJudge) Judge(ctx context.Context, item Item, cand Candidate) (Evidence, error) {
	return j.f(ctx, item, cand)
}
func (j funcJudge) SelfCheck(ctx context.Context, item Item) (Evidence, error) {
	return j.f(ctx, item, Candidate{ItemID: item.ItemID, CandidateID: ReferenceCandidateID, Code: item.Reference})
}
func (funcJudge) Check(context.Context) error { return nil }
func (funcJudge) Close() error                { return nil }
