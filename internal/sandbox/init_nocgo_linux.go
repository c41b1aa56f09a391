//go:build linux && !cgo

package sandbox

import "fmt"

// errNoInit: the init is C (init_linux.c), linked only when cgo is on.
var errNoInit = fmt.Errorf("%w: this binary was built without cgo, and the sandbox's init is C", ErrUnavailable)
