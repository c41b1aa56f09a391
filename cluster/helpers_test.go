package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/filter"
	"github.com/crucible-data/crucible/ops/pack"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// crucibleBinary builds the CLI once per test process: cluster tasks run a
// real `crucible build`, not this test binary.
func crucibleBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crucible-cluster-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "crucible")
		// -tags crashpoints: CRUCIBLE_CRASH_AT lets a test kill a task at a
		// counted commit step (cmd/crucible/crashpoints_on.go); unset, the
		// binary behaves as a release build.
		cmd := exec.Command("go", "build", "-tags", "crashpoints", "-o", binPath, "./cmd/crucible")
		cmd.Dir = testenv.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	slurmOnce sync.Once
	slurmConf string
	slurmErr  error
)

// startSlurm brings up the single-node cluster of scripts/slurm-local.sh
// and points SLURM_CONF at it. Outside CI a machine where that cannot work
// (no root, no apt) skips; in CI it fails.
func startSlurm(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		slurmConf, slurmErr = StartLocalSlurm(ctx, filepath.Join(testenv.RepoRoot(t), "scripts", "slurm-local.sh"))
	})
	if slurmErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Slurm could not be started (CI is set): %v", slurmErr)
		}
		t.Skipf("Slurm could not be started on this machine; skipping: %v", slurmErr)
	}
	t.Setenv("SLURM_CONF", slurmConf)
}

// testRegistry has the stage types the fixtures and plans use, declared
// by their own packages (so the planner's parallelism is theirs).
func testRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	dedup.RegisterStages(reg)
	dedup.RegisterShardStages(reg)
	pack.RegisterStages(reg)
	pack.RegisterShardStages(reg)
	kernels.RegisterStages(reg)
	return reg
}

// writeItemsFixture writes files JSONL files of rows items each (a fifth
// kernel items, the rest RTL, a few malformed) and returns their dir.
func writeItemsFixture(t testing.TB, dir string, files, rows int) string {
	t.Helper()
	in := filepath.Join(dir, "items")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("The counter increments on every rising clock edge when enable is high. ", 20)
	for f := 0; f < files; f++ {
		fh, err := os.Create(filepath.Join(in, fmt.Sprintf("items-%02d.jsonl", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(fh)
		for i := 0; i < rows; i++ {
			n := f*rows + i
			domain := "rtl"
			if n%5 == 0 {
				domain = "kernel"
			}
			row := map[string]any{
				"item_id": fmt.Sprintf("item-%07d", n), "domain": domain, "family": fmt.Sprintf("fam%d", n%7),
				"instruction": fmt.Sprintf("Task %d. %s", n, filler), "reference": "module RefModule(); endmodule",
				"verifier": map[string]any{"kind": map[string]string{"rtl": "differential", "kernel": "kernel"}[domain], "harness": "module tb; endmodule"},
			}
			if n%997 == 0 {
				row["domain"] = "bogus"
			}
			b, _ := json.Marshal(row)
			w.Write(append(b, '\n'))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	return in
}

// writePipeline writes a pipeline file and returns its path.
func writePipeline(t testing.TB, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// stageRows returns every row of a stage's output as sorted JSON lines, so
// runs split differently (different file names, different shard order)
// compare by content.
func stageRows(t *testing.T, work, stage string) []string {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, stage))
	if err != nil {
		t.Fatalf("stage %s: %v", stage, err)
	}
	var lines []string
	items, err := engine.ReadAll[engine.Item](out.Shards("items")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		b, _ := json.Marshal(it)
		lines = append(lines, "item "+string(b))
	}
	rej, err := engine.ReadAll[engine.Rejection](out.Shards("rejections")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rej {
		b, _ := json.Marshal(r)
		lines = append(lines, "rejection "+string(b))
	}
	sort.Strings(lines)
	return lines
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the reference has no rows; the fixture is wrong", what)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, the local run has %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d differs:\n got %.200s\nwant %.200s", what, i, got[i], want[i])
		}
	}
}

// loadPipeline loads a pipeline with a work dir override.
func loadPipeline(t *testing.T, path, work string) *engine.PipelineConfig {
	t.Helper()
	cfg, err := engine.LoadPipeline(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WorkDir = work
	return cfg
}
