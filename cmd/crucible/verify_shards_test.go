package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func crucibleExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(crucibleBinary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatal(err)
	return 0, ""
}

// TestVerifyShardsAndBuildRedoCorruptShard: a byte flipped (same size) in a
// committed shard of a built work dir makes `verify-shards` exit 6 naming the
// file; the next `build` redoes that stage (it used to log "stage up to date,
// skipped") and verify-shards exits 0 again with the same shards as before.
func TestVerifyShardsAndBuildRedoCorruptShard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := t.TempDir()
	var rows []string
	for i := 0; i < 300; i++ {
		dom, kind := "rtl", "differential"
		if i%3 == 0 {
			dom, kind = "kernel", "kernel"
		}
		rows = append(rows, fmt.Sprintf(`{"item_id":"it-%03d","domain":%q,"family":"f","instruction":"Task %d","reference":"module RefModule(); endmodule","verifier":{"kind":%q,"harness":"module tb; endmodule"}}`, i, dom, i, kind))
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(cfg, []byte("name: v\nwork_dir: work\nstages:\n  - name: ingest\n    type: ingest\n    inputs: [items.jsonl]\n  - name: rtl-only\n    type: filter\n    from: [ingest]\n    config: {domains: [rtl]}\n"), 0o644)
	work := filepath.Join(dir, "work")
	build := []string{"build", "--config", cfg, "--no-progress"}
	if code, out := crucibleExit(t, build...); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	clean := outputHashes(t, work)
	if code, out := crucibleExit(t, "verify-shards", work); code != 0 || !strings.Contains(out, "all match") {
		t.Fatalf("verify-shards on a clean work dir: exit %d\n%s", code, out)
	}
	m, err := engine.ReadManifest(filepath.Join(work, "rtl-only", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(work, "rtl-only", m.Shards[0].Path)
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 0x01
	os.WriteFile(victim, data, 0o644)
	if code, out := crucibleExit(t, "verify-shards", work); code != exitFindings || !strings.Contains(out, victim) {
		t.Fatalf("verify-shards after a flipped byte: exit %d, want %d naming %s\n%s", code, exitFindings, victim, out)
	}
	code, out := crucibleExit(t, build...)
	if code != 0 || !strings.Contains(out, "does not match its manifest") || !strings.Contains(out, victim) {
		t.Fatalf("build over a corrupt shard: exit %d, want 0 with a warning naming %s\n%s", code, victim, out)
	}
	if code, out := crucibleExit(t, "verify-shards", work); code != 0 {
		t.Fatalf("verify-shards after the rebuild: exit %d\n%s", code, out)
	}
	for f, h := range outputHashes(t, work) {
		if clean[f] != h && !strings.HasPrefix(filepath.Base(f), "history") {
			t.Errorf("%s differs from the clean build after the redo", f)
		}
	}
	if code, _ := crucibleExit(t, "verify-shards", filepath.Join(dir, "nothing-here")); code != exitInput {
		t.Fatalf("verify-shards on a directory without manifests: exit %d, want %d", code, exitInput)
	}
}
