package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

func writePlanFixture(t *testing.T) (dir, cfg, ex string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "p.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`name: seeds
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: rtl
    type: filter
    from: [ingest]
    config: {domains: [rtl]}
  - name: dedup
    type: dedup
    from: [rtl]
`, filepath.Join(testenv.RepoRoot(t), "examples", "seeds"))), 0o644)
	ex = filepath.Join(dir, "executor.yaml")
	os.WriteFile(ex, []byte("shards: 3\nresources: {cpus: 2, memory: 2G}\nk8s: {image: crucible:test, volume_claim: corpus}\n"), 0o644)
	return dir, cfg, ex
}

func TestPlanK8sWritesIndexedJobs(t *testing.T) {
	dir, cfg, ex := writePlanFixture(t)
	out := filepath.Join(dir, "k8s")
	var buf bytes.Buffer
	if err := runPlan(context.Background(), PlanOptions{Config: cfg, Executor: "k8s", ExecutorConfig: ex, OutDir: out, Out: &buf}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"01-ingest.yaml": {"completionMode: Indexed", "completions: 3", "$(JOB_COMPLETION_INDEX)/3", "claimName: corpus"},
		"03-dedup.yaml":  {"completions: 1"},
		"apply.sh":       {"wait_job crucible-seeds-rtl"},
	} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	if strings.Contains(mustRead(t, filepath.Join(out, "03-dedup.yaml")), "--shard") {
		t.Error("dedup is global and must run unsharded")
	}
}

func TestPlanSlurmCountsCommittedParts(t *testing.T) {
	dir, cfg, ex := writePlanFixture(t)
	work := filepath.Join(dir, "work")
	// Commit part 1 of 3 of ingest by hand, as a task would.
	if err := runBuild(context.Background(), BuildOptions{Config: cfg, Shard: "1/3", Stages: []string{"ingest"}, Out: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := runPlan(context.Background(), PlanOptions{Config: cfg, Executor: "slurm", ExecutorConfig: ex, WorkDir: work, Out: &buf}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "ingest           3 part(s), 1 committed") || !strings.Contains(buf.String(), "dedup            1 part(s), 0 committed") {
		t.Fatalf("plan:\n%s", buf.String())
	}
}

func TestPlanAndExecutorFlagErrors(t *testing.T) {
	_, cfg, ex := writePlanFixture(t)
	err := runPlan(context.Background(), PlanOptions{Config: cfg, Executor: "nomad", Out: &bytes.Buffer{}})
	if exitCode(context.Background(), err) != exitUsage {
		t.Fatalf("unknown executor: %v", err)
	}
	err = runBuildWithExecutor(context.Background(), BuildOptions{Config: cfg, Shard: "0/2"}, executorFlags{Name: "slurm", Config: ex})
	if !errors.Is(err, errUsage) {
		t.Fatalf("--shard with --executor slurm must be a usage error, got %v", err)
	}
	os.WriteFile(ex, []byte("shards: 0\nstages: {nope: {cpus: 1}}\n"), 0o644)
	err = runBuildWithExecutor(context.Background(), BuildOptions{Config: cfg}, executorFlags{Name: "slurm", Config: ex})
	if !errors.Is(err, engine.ErrConfig) || !strings.Contains(err.Error(), "shards: 0") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("bad executor config must name every field, got %v", err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
