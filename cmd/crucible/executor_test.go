package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/cluster"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// TestBuildExecutorSlurm runs `crucible build --executor slurm` (through
// runBuildWithExecutor) on a single-node cluster and compares the filtered
// items with the local executor's. Skipped when Slurm cannot be started
// outside CI; fails in CI.
func TestBuildExecutorSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conf, err := cluster.StartLocalSlurm(ctx, filepath.Join(testenv.RepoRoot(t), "scripts", "slurm-local.sh"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Slurm could not be started (CI is set): %v", err)
		}
		t.Skipf("Slurm could not be started on this machine; skipping: %v", err)
	}
	t.Setenv("SLURM_CONF", conf)
	dir, cfg, _ := writePlanFixture(t)
	ex := filepath.Join(dir, "executor.yaml")
	// Parts of a stage run in parallel: the runner's part locks keep them apart.
	os.WriteFile(ex, []byte("shards: 4\npoll: 200ms\n"), 0o644)
	var buf bytes.Buffer
	err = runBuildWithExecutor(ctx, BuildOptions{Config: cfg, WorkDir: filepath.Join(dir, "slurm"), Out: &buf},
		executorFlags{Name: "slurm", Config: ex, Binary: crucibleBinary(t)})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), "job ") || !strings.Contains(buf.String(), "4 part(s)") {
		t.Fatalf("output:\n%s", buf.String())
	}
	if err := runBuild(ctx, BuildOptions{Config: cfg, WorkDir: filepath.Join(dir, "local"), Out: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"rtl", "dedup"} {
		got, want := itemIDs(t, filepath.Join(dir, "slurm", st)), itemIDs(t, filepath.Join(dir, "local", st))
		if len(want) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("stage %s: slurm items %v, local %v", st, got, want)
		}
	}
}

func itemIDs(t *testing.T, dir string) []string {
	t.Helper()
	out, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	items, err := engine.ReadAll[engine.Item](out.Shards("items")...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ItemID)
	}
	sort.Strings(ids)
	return ids
}
