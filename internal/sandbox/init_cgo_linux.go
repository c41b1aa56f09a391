//go:build linux && cgo

package sandbox

// The init (init_linux.c) is linked into every binary that imports this
// package: its constructor runs before the Go runtime and returns at once
// unless the process is a sandbox's init.

import "C"

// errNoInit is nil: this binary carries the init.
var errNoInit error
