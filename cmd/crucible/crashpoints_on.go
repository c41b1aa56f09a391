//go:build crashpoints

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/crucible-data/crucible/engine"
)

// installCrashPoints (test builds only, -tags crashpoints) kills the process
// with SIGKILL at the Nth crash point it passes when CRUCIBLE_CRASH_AT=N,
// and appends every point passed to the file CRUCIBLE_CRASH_TRACE names, so
// a test can count a run's points and then kill runs at chosen ones. With
// CRUCIBLE_CRASH_MATCH=S only points on paths containing S count (one part
// of a cluster run: "part-0002-of-0004").
func installCrashPoints() {
	at, _ := strconv.Atoi(os.Getenv("CRUCIBLE_CRASH_AT"))
	trace := os.Getenv("CRUCIBLE_CRASH_TRACE")
	match := os.Getenv("CRUCIBLE_CRASH_MATCH")
	if at <= 0 && trace == "" {
		return
	}
	var mu sync.Mutex
	n := 0
	engine.SetCrashHook(func(point, path string) {
		if !strings.Contains(path, match) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if trace != "" {
			if f, err := os.OpenFile(trace, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintf(f, "%d %s %s\n", n, point, path)
				f.Close()
			}
		}
		if n == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; pass no further point
		}
	})
}
