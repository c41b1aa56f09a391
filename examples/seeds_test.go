// Package examples holds the bundled corpus; this test keeps it honest.
package examples

import (
	"os"
	"os/exec"
	"testing"
)

// TestBundledRTLSeeds runs examples/seeds/check.sh: every seed's reference
// passes its own testbench under Icarus with >= 200 samples, Yosys reads it
// with the declared ports, the instruction does not leak the code, and
// stuck-at and reset-kind mutants of every output and input are caught.
func TestBundledRTLSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ~400 simulations")
	}
	for _, tool := range []string{"iverilog", "vvp", "yosys", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing (CI is set): make test installs it through scripts/setup.sh", tool)
			}
			t.Skipf("%s missing; skipping", tool)
		}
	}
	out, err := exec.Command("bash", "seeds/check.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("seeds/check.sh failed: %v\n%s", err, out)
	}
}
