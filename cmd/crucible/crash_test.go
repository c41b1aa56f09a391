package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// crucibleBinary builds the real CLI once per test process.
func crucibleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crucible-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "crucible")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// writeCrashFixture writes a pipeline big enough to take a couple of
// seconds (many small shards, each fsynced) with two stages.
func writeCrashFixture(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	filler := strings.Repeat("The counter increments on every rising clock edge when enable is high. ", 20)
	for i := 0; i < 30000; i++ {
		domain := "rtl"
		if i%5 == 0 {
			domain = "kernel"
		}
		row := map[string]any{
			"item_id": fmt.Sprintf("item-%06d", i), "domain": domain, "family": fmt.Sprintf("fam%d", i%7),
			"instruction": fmt.Sprintf("Task %d. %s", i, filler), "reference": "module RefModule(); endmodule",
			"verifier": map[string]any{"kind": map[string]string{"rtl": "differential", "kernel": "kernel"}[domain], "harness": "module tb; endmodule"},
		}
		if i%997 == 0 {
			row["domain"] = "bogus" // a few rejection rows too
		}
		b, _ := json.Marshal(row)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg := `name: crash
work_dir: work
row_group_bytes: 131072
shard_bytes: 262144
stages:
  - name: ingest
    type: ingest
    inputs: [items.jsonl]
  - name: rtl-only
    type: filter
    from: [ingest]
    config: {domains: [rtl]}
`
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// outputHashes maps every output file (run summaries and the HTML/JSON
// report aside, they hold times) to its sha256.
func outputHashes(t *testing.T, work string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(work, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "run-summary") || strings.HasPrefix(d.Name(), "report.") {
			return err
		}
		h, err := engine.HashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(work, p)
		out[rel] = h
		return nil
	})
	return out
}

// checkCommitted asserts that every manifest present lists only complete
// shards: each exists with the size and sha256 recorded.
func checkCommitted(t *testing.T, work string) int {
	t.Helper()
	manifests, _ := filepath.Glob(filepath.Join(work, "*", "manifest*.json"))
	for _, mp := range manifests {
		m, err := engine.ReadManifest(mp)
		if err != nil {
			t.Fatalf("torn manifest %s: %v", mp, err)
		}
		for _, s := range m.Shards {
			p := filepath.Join(filepath.Dir(mp), s.Path)
			h, err := engine.HashFile(p)
			if err != nil || h != s.SHA256 {
				t.Fatalf("manifest %s lists %s which is missing or partial (%v)", mp, s.Path, err)
			}
		}
	}
	return len(manifests)
}

func runCrucible(t *testing.T, args ...string) (time.Duration, error) {
	bin := crucibleBinary(t)
	start := time.Now()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("crucible %v: %s", args, out)
	}
	return time.Since(start), err
}

// TestKilledBuildResumesToIdenticalOutput SIGKILLs `crucible build` at
// several points, checks that no partial shard is ever listed, re-runs, and
// compares every manifest and shard byte for byte with an uninterrupted run.
func TestKilledBuildResumesToIdenticalOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs a multi-second pipeline")
	}
	dir := t.TempDir()
	cfg := writeCrashFixture(t, dir)
	refWork := filepath.Join(dir, "ref")
	took, err := runCrucible(t, "build", "--config", cfg, "--work-dir", refWork, "--no-progress", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	want := outputHashes(t, refWork)
	if len(want) < 10 {
		t.Fatalf("reference run wrote only %d files; the fixture is too small to kill mid-stage", len(want))
	}
	killedMidway := 0
	for i, frac := range []float64{0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.95} {
		work := filepath.Join(dir, fmt.Sprintf("run%d", i))
		cmd := exec.Command(crucibleBinary(t), "build", "--config", cfg, "--work-dir", work, "--no-progress", "--log-level", "warn")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(frac * float64(took)))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err != nil {
			killedMidway++
		}
		n := checkCommitted(t, work)
		t.Logf("killed at %.0f%% of %v: %d manifests committed, exit %v", frac*100, took, n, err)
		if _, err := runCrucible(t, "build", "--config", cfg, "--work-dir", work, "--no-progress", "--log-level", "warn"); err != nil {
			t.Fatalf("resume after kill at %.0f%%: %v", frac*100, err)
		}
		got := outputHashes(t, work)
		for name, h := range want {
			if got[name] != h {
				t.Errorf("kill at %.0f%%: %s differs after resume (got %q)", frac*100, name, got[name])
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("kill at %.0f%%: resume left extra file %s", frac*100, name)
			}
		}
	}
	if killedMidway < 3 {
		t.Fatalf("only %d of the runs were killed before finishing; the fixture is too fast", killedMidway)
	}
}
