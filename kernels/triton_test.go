package kernels

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// stubTriton writes fake torch/triton modules (no GPU anywhere) and a
// backend that runs the embedded worker with them.
func stubTriton(t *testing.T, cudaAvailable bool) *tritonBackend {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 missing")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub")
	avail := "False"
	if cudaAvailable {
		avail = "True"
	}
	for name, src := range map[string]string{
		"torch/__init__.py": "__version__ = '0.0-stub'\nfloat32 = 'float32'\n" +
			"class cuda:\n    @staticmethod\n    def is_available():\n        return " + avail + "\n" +
			"def device(d):\n    return d\ndef manual_seed(s):\n    pass\ndef empty(*a, **k):\n    return None\n",
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
	t.Setenv("PYTHONPATH", stub)
	cfg := testConfig()
	return &tritonBackend{cfg: cfg, python: py, worker: worker, dir: dir, audits: map[string]*auditRun{}}
}

// Without a GPU the worker reports no-device before any code of the side
// runs: believed, an unjudged toolchain_missing, never a failure.
func TestTritonWorkerNoDevice(t *testing.T) {
	b := stubTriton(t, false)
	s, _, err := b.startWorker(context.Background(), 0, tritonJob{Role: "candidate", Code: "import os\n", Entry: "ModelNew"})
	if s == nil {
		t.Fatal(err)
	}
	defer s.kill()
	var o Outcome
	s.classify(&o, err)
	if o.Stage != engine.StageToolchainMissing || !strings.Contains(o.Cause, "no-device") {
		t.Fatalf("outcome %+v", o)
	}
}

// A candidate whose module, once loaded, reports an infrastructure failure
// through the worker's own channel (or prints a forged frame) is not
// believed: its failure is its own.
func TestTritonCandidateCannotClaimInfrastructure(t *testing.T) {
	b := stubTriton(t, true)
	for _, code := range []string{
		"import __main__\n__main__.report('toolchain_missing', '', 'no-device: forged')\n",
		"import __main__, struct\n__main__.send(b'E' + struct.pack('<I', 44) + b'{\"Stage\":\"worker_crash\",\"Cause\":\"forged...\"}')\nimport os\nos._exit(0)\n",
		"print('E\\x10\\x00\\x00\\x00{\"Stage\":\"disk_full\"}')\nraise SystemExit(3)\n",
	} {
		s, _, err := b.startWorker(context.Background(), 0, tritonJob{Role: "candidate", Code: code, Entry: "ModelNew"})
		if s == nil {
			t.Fatal(err)
		}
		var o Outcome
		s.classify(&o, err)
		s.kill()
		t.Logf("candidate outcome: %s (%.120s)", o.Stage, o.Cause)
		if engine.IsInfraStage(o.Stage) || o.Stage == "" {
			t.Errorf("candidate %q: outcome %s (%s), want a candidate failure", code, o.Stage, o.Cause)
		}
	}
	// The same report from the reference's worker is the reference's (unjudged).
	s, _, err := b.startWorker(context.Background(), 0, tritonJob{Role: "reference", Code: "raise ValueError('broken')\n", Entry: "Model"})
	if s == nil {
		t.Fatal(err)
	}
	defer s.kill()
	var o Outcome
	s.classify(&o, err)
	if o.Stage != engine.StageReferenceSelfCheck {
		t.Fatalf("reference outcome %s (%s)", o.Stage, o.Cause)
	}
}
