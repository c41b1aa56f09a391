package main

import (
	"context"
	"errors"

	"github.com/crucible-data/crucible/engine"
)

// Exit codes (documented in the README and `crucible --help`).
const (
	exitOK         = 0   // the command completed (whatever the verdicts it recorded)
	exitInternal   = 1   // an unexpected error
	exitUsage      = 2   // bad flags or configuration
	exitInput      = 3   // an input file is unreadable or malformed as a whole
	exitIO         = 4   // writing output failed (disk full, permissions)
	exitIncomplete = 5   // an upstream stage has no committed manifest
	exitFindings   = 6   // a check found what it guards against (contamination, audit discrepancy, regression)
	exitSignal     = 130 // interrupted by a signal; a re-run resumes
)

const exitCodeHelp = `Exit codes:
  0    completed (verdicts and rejections are data, not failures)
  1    unexpected internal error
  2    bad flags or configuration
  3    unreadable or malformed input file
  4    output could not be written
  5    an upstream stage is incomplete (no committed manifest)
  6    a check found what it guards against (contamination, audit discrepancy, regression,
       a stage that passed nothing on or rejected more than its max_reject_fraction)
  130  interrupted; re-running the same command resumes`

// codedError carries an explicit exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode attaches an exit code to an error.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code, err}
}

func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return exitSignal
	case errors.Is(err, engine.ErrConfig), errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, engine.ErrInput), errors.Is(err, engine.ErrSchema):
		return exitInput
	case errors.Is(err, engine.ErrIO):
		return exitIO
	case errors.Is(err, engine.ErrIncomplete):
		return exitIncomplete
	case errors.Is(err, engine.ErrYield):
		return exitFindings
	}
	return exitInternal
}

var errUsage = errors.New("usage")
