//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// Process is a running tree (Linux only).
type Process struct{}

// ErrJobDirTooLarge: the job directory holds too many entries (Linux only).
var ErrJobDirTooLarge = errors.New("sandbox: the job directory holds too many entries")

var errOS = fmt.Errorf("%w: namespaces need Linux, this is %s", ErrUnavailable, runtime.GOOS)

// Start fails: sandboxes need Linux namespaces.
func Start(Spec) (*Process, error) { return nil, errOS }

// Run fails: sandboxes need Linux namespaces.
func Run(context.Context, Spec) Result { return Result{ExitCode: -1, SandboxErr: errOS} }

// Check fails: sandboxes need Linux namespaces.
func Check() error { return errOS }

// ReadFile fails: sandboxes need Linux namespaces.
func ReadFile(dir, name string, max int64) ([]byte, error) { return nil, errOS }

func (p *Process) Pid() int                    { return 0 }
func (p *Process) Kill()                       {}
func (p *Process) Release()                    {}
func (p *Process) Wait(context.Context) Result { return Result{ExitCode: -1, SandboxErr: errOS} }
