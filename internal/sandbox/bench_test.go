//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// cpuNow is this process's CPU time plus that of its reaped children.
func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// benchRun reports wall time per op (ns/op) and CPU time per op (cpu-ms/op:
// this process and its children, far less sensitive to other load on the
// machine than wall time).
func benchRun(b *testing.B, run func() error) {
	c0 := cpuNow()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuNow()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkSandboxTrue is the per-job cost of the sandbox: namespaces, the
// mount view, the init and the traced start of /bin/true. Compare with
// BenchmarkPlainTrue (the same program started directly):
//
//	go test -run XXX -bench . -benchmem ./internal/sandbox/
func BenchmarkSandboxTrue(b *testing.B) {
	requireSandbox(b)
	dir := b.TempDir()
	benchRun(b, func() error {
		res := Run(context.Background(), Spec{Argv: []string{"true"}, Dir: dir, Limits: testLimits, Timeout: time.Minute})
		if !res.Exited0() {
			b.Fatalf("%+v", res)
		}
		return nil
	})
}

func BenchmarkPlainTrue(b *testing.B) {
	benchRun(b, func() error { return exec.Command("true").Run() })
}
