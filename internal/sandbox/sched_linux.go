//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// schedSample is how long the live tasks of a tree had waited on a run
// queue, read from /proc/<pid>/task/<tid>/schedstat ("on-cpu-ns
// run-delay-ns timeslices").
type schedSample struct {
	ok       bool
	runDelay time.Duration
}

// sampleSched sums the run-queue wait of every task in the PID namespace
// whose init is the host process initPid.
func sampleSched(initPid int) schedSample {
	// The init was created in the new namespace: its "pid" link names it.
	ns, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(initPid), "ns", "pid"))
	if err != nil {
		return schedSample{}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return schedSample{}
	}
	var s schedSample
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if l, err := os.Readlink(filepath.Join(dir, "ns", "pid")); err != nil || l != ns {
			continue
		}
		tasks, err := os.ReadDir(filepath.Join(dir, "task"))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				continue
			}
			d, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				continue
			}
			s.ok = true
			s.runDelay += time.Duration(d)
		}
	}
	return s
}
