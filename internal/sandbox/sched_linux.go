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
	// cpu is the CPU time of the live tasks plus what the init has reaped:
	// a tree killed with its init does not always hand its children's
	// times to the init's rusage, so the sample is kept as a floor.
	cpu time.Duration
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
			run, err1 := strconv.ParseInt(f[0], 10, 64)
			d, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			s.ok = true
			s.cpu += time.Duration(run)
			s.runDelay += time.Duration(d)
		}
	}
	s.cpu += reapedCPU(initPid)
	return s
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// reapedCPU is the cutime+cstime of pid: its waited-for descendants.
func reapedCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The fields after the parenthesised comm: state is field 3, cutime 16,
	// cstime 17.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0
	}
	cu, err1 := strconv.ParseInt(f[13], 10, 64)
	cs, err2 := strconv.ParseInt(f[14], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(cu+cs) * time.Second / clockTicks
}
