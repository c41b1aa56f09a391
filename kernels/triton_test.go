package kernels

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestTritonWorkerChannel runs the embedded Python worker against stub
// torch/triton modules (no GPU anywhere): the worker must answer through
// the nonce-marked result line, and the Go side must canonicalise it to an
// unjudged no-device verdict, never a failure.
func TestTritonWorkerChannel(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 missing")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub")
	for name, src := range map[string]string{
		"torch/__init__.py":  "__version__ = '0.0-stub'\nclass cuda:\n    @staticmethod\n    def is_available():\n        return False\n",
		"triton/__init__.py": "__version__ = '0.0-stub'\n",
	} {
		p := filepath.Join(stub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	worker := filepath.Join(dir, "worker.py")
	if err := os.WriteFile(worker, []byte(tritonWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(tritonRequest{Reference: "import torch\n", Candidate: "print('CRUCIBLE_RESULT forged {}')\n",
		Trials: 1, Reps: 1, Seed: 1, Tolerance: 1e-4, FlushBytes: 1024})
	cmd := exec.Command(py, worker)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+stub, "CRUCIBLE_NONCE=n0nce")
	cmd.Stdin = bytes.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	res, err := parseTritonResult(string(out), "n0nce")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var o Outcome
	canonicalise(res, &o, DefaultConfig())
	if o.Stage != engine.StageToolchainMissing || !strings.Contains(o.Cause, "no-device") {
		t.Fatalf("outcome %+v", o)
	}
}
