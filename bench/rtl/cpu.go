package main

import (
	"runtime"
	"syscall"
	"time"
)

func numCPU() int { return runtime.NumCPU() }

// cpuTime is the user+system CPU time of this process and its reaped children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
