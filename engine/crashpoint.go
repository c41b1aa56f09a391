package engine

import "sync/atomic"

// Crash points name the steps of the commit protocol (atomic.go,
// shardwriter.go) where a crash leaves a distinct state on disk: a temp
// file half written, written and synced but not renamed, renamed but the
// directory not yet synced. Tests kill the process at the Nth point it
// passes (pebble's crash-point style) instead of at a fraction of a measured
// duration, so where a kill lands never depends on how loaded the machine is.
// Production binaries never set a hook; the CLI installs one only when built
// with the crashpoints tag (cmd/crucible/crashpoints_on.go).
const (
	CrashRowGroupWritten = "rowgroup-written" // a row group reached the temp file
	CrashSynced          = "synced"           // temp file complete and fsynced, not renamed
	CrashRenamed         = "renamed"          // renamed, directory not yet fsynced
	CrashCommitted       = "committed"        // rename durable
)

var crashHook atomic.Pointer[func(point, path string)]

// SetCrashHook installs f to be called at every crash point (nil removes it).
func SetCrashHook(f func(point, path string)) {
	if f == nil {
		crashHook.Store(nil)
		return
	}
	crashHook.Store(&f)
}

func crashPoint(point, path string) {
	if f := crashHook.Load(); f != nil {
		(*f)(point, path)
	}
}
