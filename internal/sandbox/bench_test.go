//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkSandboxTrue is the per-job cost of the sandbox: namespaces, the
// mount view, the init and the traced start of /bin/true. Compare with
// BenchmarkPlainTrue (the same program started directly).
func BenchmarkSandboxTrue(b *testing.B) {
	requireSandbox(b)
	dir := b.TempDir()
	for b.Loop() {
		res := Run(context.Background(), Spec{Argv: []string{"true"}, Dir: dir, Limits: testLimits, Timeout: time.Minute})
		if !res.Exited0() {
			b.Fatalf("%+v", res)
		}
	}
}

func BenchmarkPlainTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
