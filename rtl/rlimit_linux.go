package rtl

import (
	"sync"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// sandboxLimits are the limits of one tool's process tree. They are set by
// the sandbox on the tool's first process before its first instruction, so
// they bind every process it spawns: ivlpp and ivl under iverilog, make,
// g++ and cc1plus under Verilator (a compile-time memory bomb is stopped
// by RLIMIT_AS like a simulation-time one).
func sandboxLimits(l Limits) sandbox.Limits {
	return sandbox.Limits{
		AddressSpaceBytes: l.AddressSpaceBytes,
		CPUSeconds:        l.CPUSeconds,
		FileSizeBytes:     l.FileSizeBytes,
		Processes:         l.Processes,
		OpenFiles:         4096,
		TmpBytes:          min(l.FileSizeBytes, 64<<20),
	}
}

var (
	isolationOnce  sync.Once
	isolationCause string
)

// isolationUnavailable reports, as an infra stage, that candidates cannot be
// isolated on this machine (no user/PID/mount/network namespaces). Every
// verdict is then unjudged: the verifier never runs a candidate unsandboxed.
func isolationUnavailable() (stage, cause string) {
	isolationOnce.Do(func() {
		if err := sandbox.Check(); err != nil {
			isolationCause = "cannot isolate candidate processes on this machine (user, PID, mount and network namespaces are required): " + err.Error()
		}
	})
	if isolationCause != "" {
		return engine.StageToolchainMissing, isolationCause
	}
	return "", ""
}

// Isolation says how candidate processes are isolated here, for `crucible
// doctor`: "namespaces" or the reason they cannot be.
func Isolation() string {
	if _, cause := isolationUnavailable(); cause != "" {
		return cause
	}
	return "namespaces"
}
