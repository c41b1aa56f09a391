package rtl

import (
	"context"
	"errors"
	"fmt"

	"github.com/crucible-data/crucible/engine"
)

// Verifier is the RTL domain's engine.Judge: Judge is VerifyOne, SelfCheck
// the reference self-check (VerifyReferences' row), Check the simulator
// and isolation probes every job makes first.
var _ engine.Judge = (*Verifier)(nil)

// Domain implements engine.Judge.
func (v *Verifier) Domain() string { return engine.DomainRTL }

// Judge implements engine.Judge.
func (v *Verifier) Judge(ctx context.Context, item engine.Item, cand engine.Candidate) (engine.Evidence, error) {
	return v.VerifyOne(ctx, item, cand)
}

// SelfCheck implements engine.Judge.
func (v *Verifier) SelfCheck(ctx context.Context, item engine.Item) (engine.Evidence, error) {
	return v.verifyReference(ctx, item)
}

// Check implements engine.Judge: nil when the configured simulator runs
// and candidate processes can be isolated here.
func (v *Verifier) Check(context.Context) error {
	var errs []error
	if st, cause := v.sim.Check(); st != "" {
		errs = append(errs, fmt.Errorf("%s: %s", st, cause))
	}
	if st, cause := isolationUnavailable(); st != "" {
		errs = append(errs, fmt.Errorf("%s: %s", st, cause))
	}
	return errors.Join(errs...)
}

// Close implements engine.Judge; the verifier holds no workers between
// calls (every job is its own sandboxed process).
func (v *Verifier) Close() error { return nil }

// retryPolicy is the engine's one retry rule with this verifier's limits.
func (v *Verifier) retryPolicy() engine.RetryPolicy {
	return engine.RetryPolicy{Attempts: v.cfg.Retries + 1, Backoff: v.cfg.RetryBackoff, Log: v.log}
}
