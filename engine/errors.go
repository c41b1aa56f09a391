package engine

import "errors"

// Error categories. Callers wrap them with %w and context (file, row, field);
// the CLI maps them to exit codes. A rejected row or a failed candidate is
// data, never one of these.
var (
	// ErrInput: an input file is unreadable or malformed as a whole.
	ErrInput = errors.New("bad input")
	// ErrConfig: a configuration or flag value is invalid.
	ErrConfig = errors.New("bad config")
	// ErrSchema: a row type or a file's columns do not fit the expected schema.
	ErrSchema = errors.New("schema mismatch")
	// ErrIO: writing or syncing output failed.
	ErrIO = errors.New("i/o failure")
	// ErrIncomplete: a stage's upstream has no committed manifest.
	ErrIncomplete = errors.New("upstream stage incomplete")
)
