package kernels

import (
	"context"
	"errors"
	"fmt"

	"github.com/crucible-data/crucible/engine"
)

// Verifier is the kernel domain's engine.Judge.
var _ engine.Judge = (*Verifier)(nil)

// Domain implements engine.Judge.
func (v *Verifier) Domain() string { return engine.DomainKernel }

// Judge implements engine.Judge. Every failure is a verdict in the
// evidence; the error is the context's.
// The reference judged as its own candidate is remembered (memo): the
// strength gate's audit and the audit gate both ask for it, and it is the
// run whose cost (wall_time_ms) both report.
func (v *Verifier) Judge(ctx context.Context, item engine.Item, cand engine.Candidate) (engine.Evidence, error) {
	isRef := cand.CandidateID == ReferenceCandidateID && cand.Code == item.Reference && cand.ItemID == item.ItemID
	key := ""
	if isRef {
		key = itemKey(item)
		if ev, ok := v.refRuns.get(key); ok {
			return cloneEvidence(ev), nil
		}
	}
	ev := v.Verify(ctx, map[string]engine.Item{item.ItemID: item}, cand)
	if isRef && ctx.Err() == nil && !engine.Transient(ev.FailureStage) {
		v.refRuns.put(key, cloneEvidence(ev))
	}
	return ev, ctx.Err()
}

// SelfCheck implements engine.Judge: the reference runs as its own
// candidate (against itself, in separate processes, with the task's
// trivial-candidate audit). A reference its own task rejects is the
// item's fault: unjudged at reference_self_check, with the stage it
// failed at in the cause.
func (v *Verifier) SelfCheck(ctx context.Context, item engine.Item) (engine.Evidence, error) {
	ev, err := v.Judge(ctx, item, engine.Candidate{ItemID: item.ItemID, CandidateID: ReferenceCandidateID, Code: item.Reference})
	if ev.Status == engine.StatusFail {
		ev.Status, ev.Cause = engine.StatusUnjudged, fmt.Sprintf("the reference fails its own task at %s: %s", ev.FailureStage, ev.Cause)
		ev.FailureStage = engine.StageReferenceSelfCheck
	}
	return ev, err
}

// Check implements engine.Judge: nil when the backend this verifier is
// restricted to (or, for auto, any backend) can run here.
func (v *Verifier) Check(context.Context) error {
	if v.cfg.Backend != BackendAuto {
		b, ok := v.backends[v.cfg.Backend]
		if !ok {
			return fmt.Errorf("unknown backend %q", v.cfg.Backend)
		}
		return b.Available()
	}
	var errs []error
	for _, name := range []string{BackendCPU, BackendCUDA, BackendTriton} {
		err := v.backends[name].Available()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return errors.Join(errs...)
}

// retryPolicy is the engine's one retry rule with this verifier's limits.
func (v *Verifier) retryPolicy() engine.RetryPolicy {
	return engine.RetryPolicy{Attempts: v.cfg.MaxAttempts, Log: v.log}
}
