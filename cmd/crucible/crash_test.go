package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

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
		// The crashpoints tag compiles in the CRUCIBLE_CRASH_AT hook
		// (crashpoints_on.go); without that variable the binary behaves as
		// a release build.
		out, err := exec.Command("go", "build", "-tags", "crashpoints", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// writeCrashFixture writes a two-stage pipeline with many small shards
// (each fsynced), so every step of the commit protocol is passed many times.
func writeCrashFixture(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	filler := strings.Repeat("The counter increments on every rising clock edge when enable is high. ", 20)
	for i := 0; i < 6000; i++ {
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

func runCrucible(t *testing.T, args ...string) error {
	cmd := exec.Command(crucibleBinary(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("crucible %v: %s", args, out)
	}
	return err
}

// crashTrace runs a build that records every crash point it passes and
// returns them in order ("N point path" lines).
func crashTrace(t *testing.T, cfg, work string) []string {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(crucibleBinary(t), "build", "--config", cfg, "--work-dir", work, "--no-progress", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "CRUCIBLE_CRASH_TRACE="+trace)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("traced build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestKilledBuildResumesToIdenticalOutput SIGKILLs `crucible build` at
// deterministic crash points of the commit protocol (a row group half way
// into a temp file, a synced but unrenamed shard, a renamed shard before
// its directory fsync, a manifest about to be renamed, ...), checks that no
// partial shard is ever listed, re-runs, and compares every manifest and
// shard byte for byte with an uninterrupted run. Where each kill lands is
// chosen by counting points, never by timing, so machine load cannot change
// what is tested.
func TestKilledBuildResumesToIdenticalOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs a multi-second pipeline")
	}
	dir := t.TempDir()
	cfg := writeCrashFixture(t, dir)
	refWork := filepath.Join(dir, "ref")
	points := crashTrace(t, cfg, refWork)
	want := outputHashes(t, refWork)
	if len(want) < 10 {
		t.Fatalf("reference run wrote only %d files; the fixture is too small to kill mid-stage", len(want))
	}
	// Kill points: the first point of each kind, the last synced one (the
	// report), every manifest about to be renamed, and the middle of the run.
	chosen := map[int]string{}
	first, last := map[string]int{}, map[string]int{}
	for i, line := range points {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("bad trace line %q", line)
		}
		if _, ok := first[f[1]]; !ok {
			first[f[1]] = i + 1
		}
		last[f[1]] = i + 1
		if strings.HasPrefix(filepath.Base(f[2]), "manifest") && f[1] == engine.CrashSynced {
			chosen[i+1] = "manifest " + f[1]
		}
	}
	for _, kind := range []string{engine.CrashRowGroupWritten, engine.CrashSynced, engine.CrashRenamed, engine.CrashCommitted} {
		if first[kind] == 0 {
			t.Fatalf("the reference build passed no %q crash point; trace:\n%s", kind, strings.Join(points, "\n"))
		}
		chosen[first[kind]] = "first " + kind
	}
	chosen[last[engine.CrashSynced]] = "last " + engine.CrashSynced
	chosen[1+len(points)/2] = "the middle point"
	for n, what := range chosen {
		work := filepath.Join(dir, fmt.Sprintf("run%d", n))
		cmd := exec.Command(crucibleBinary(t), "build", "--config", cfg, "--work-dir", work, "--no-progress", "--log-level", "warn")
		cmd.Env = append(os.Environ(), fmt.Sprintf("CRUCIBLE_CRASH_AT=%d", n))
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill at point %d (%s, %s): the build was not killed there: %v", n, what, points[n-1], err)
		}
		committed := checkCommitted(t, work)
		t.Logf("killed at point %d of %d (%s): %d manifests committed", n, len(points), what, committed)
		if err := runCrucible(t, "build", "--config", cfg, "--work-dir", work, "--no-progress", "--log-level", "warn"); err != nil {
			t.Fatalf("resume after kill at point %d (%s): %v", n, what, err)
		}
		got := outputHashes(t, work)
		for name, h := range want {
			if got[name] != h {
				t.Errorf("kill at point %d (%s): %s differs after resume (got %q)", n, what, name, got[name])
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("kill at point %d (%s): resume left extra file %s", n, what, name)
			}
		}
	}
}
