package kernels

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as a GPU worker child, as the CLI does.
func TestMain(m *testing.M) {
	RunWorkerIfRequested()
	os.Exit(m.Run())
}
