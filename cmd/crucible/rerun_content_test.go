package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// copyDir copies a small directory tree (task folders).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func stageContentHashes(t *testing.T, work string, stages []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range stages {
		m, err := engine.ReadManifest(filepath.Join(work, s, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		out[s] = m.ContentHash
	}
	return out
}

// TestRTLRerunsKeepContentHashes runs a real ingest → verify-rtl (Icarus) →
// filter → dedup build twice into two work dirs: every stage's content hash
// agrees although the evidence files carry different wall times. Then
// `--stage verify-rtl --force` (identical verdicts) leaves the next build's
// downstream stages skipped instead of rerunning them.
func TestRTLRerunsKeepContentHashes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and simulates")
	}
	testenv.Tools(t, "iverilog")
	dir := t.TempDir()
	seeds := filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl")
	for _, task := range []string{"counter_gray4", "comparator8_signed", "arbiter_fixed4"} {
		copyDir(t, filepath.Join(seeds, task), filepath.Join(dir, "seeds", task))
	}
	cfg := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(cfg, []byte(`name: rerun
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [seeds]
    config: {preset: taskdir}
  - name: verify-rtl
    type: verify_rtl
    from: [ingest]
    config: {simulator: icarus}
  - name: rtl-only
    type: filter
    from: [verify-rtl]
    config: {domains: [rtl]}
  - name: dedup
    type: dedup
    from: [rtl-only]
`), 0o644)
	stages := []string{"ingest", "verify-rtl", "rtl-only", "dedup"}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, work := range []string{a, b} {
		if code, out := crucibleExit(t, "build", "--config", cfg, "--work-dir", work, "--no-progress"); code != 0 {
			t.Fatalf("build into %s: exit %d\n%s", work, code, out)
		}
	}
	ha, hb := stageContentHashes(t, a, stages), stageContentHashes(t, b, stages)
	for _, s := range stages {
		if ha[s] == "" || ha[s] != hb[s] {
			t.Errorf("stage %s: content hash %s in one run, %s in the other", s, ha[s], hb[s])
		}
	}
	ma, _ := engine.ReadManifest(filepath.Join(a, "verify-rtl", "manifest.json"))
	mb, _ := engine.ReadManifest(filepath.Join(b, "verify-rtl", "manifest.json"))
	if ma == nil || mb == nil || len(ma.Shards) == 0 || ma.Shards[0].SHA256 == mb.Shards[0].SHA256 {
		t.Fatal("the two runs' evidence files are byte-identical: the test does not exercise timings")
	}
	if code, out := crucibleExit(t, "build", "--config", cfg, "--work-dir", a, "--no-progress", "--stage", "verify-rtl", "--force"); code != 0 {
		t.Fatalf("forced verify-rtl: exit %d\n%s", code, out)
	}
	code, out := crucibleExit(t, "build", "--config", cfg, "--work-dir", a, "--no-progress")
	if code != 0 {
		t.Fatalf("build after the forced stage: exit %d\n%s", code, out)
	}
	if n := strings.Count(out, "stage up to date, skipped"); n != len(stages) {
		t.Fatalf("after forcing verify-rtl with identical verdicts, %d of %d stages were skipped:\n%s", n, len(stages), out)
	}
}
