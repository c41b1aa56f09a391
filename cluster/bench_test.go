package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// benchSlurm starts the local cluster for a benchmark, or skips.
func benchSlurm(b *testing.B) {
	if os.Getenv("SLURM_CONF") == "" {
		b.Skip("set SLURM_CONF (scripts/slurm-local.sh prints it) to measure scheduling overhead")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		b.Skip("no sbatch")
	}
}

// waitGone polls squeue until the job has left the queue.
func waitGone(b *testing.B, id string) {
	var cli slurmCLI
	for {
		es, err := cli.squeue(context.Background(), []string{id})
		if err != nil {
			b.Fatal(err)
		}
		if len(es) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkSlurmEmptyTask measures the scheduler's own cost per array
// task: one array job of b.N tasks that run `true`, from sbatch to the job
// leaving squeue. ns/op is wall time per task with every CPU of the node
// busy; multiply by the node's task slots for the per-slot latency.
func BenchmarkSlurmEmptyTask(b *testing.B) {
	benchSlurm(b)
	dir := b.TempDir()
	var cli slurmCLI
	b.ResetTimer()
	id, err := cli.sbatch(context.Background(), []string{"--array=0-" + fmt.Sprint(b.N-1), "--output=" + filepath.Join(dir, "%A_%a.log"), "--wrap", "true"})
	if err != nil {
		b.Fatal(err)
	}
	waitGone(b, id)
}

// BenchmarkSlurmCommittedPartTask measures a real crucible task that finds
// its part committed: scheduling plus crucible's start-up, pipeline load
// and fingerprint check, the floor under every task of a resubmission.
func BenchmarkSlurmCommittedPartTask(b *testing.B) {
	benchSlurm(b)
	bin := crucibleBinary(b)
	dir := b.TempDir()
	items := writeItemsFixture(b, dir, b.N, 10)
	cfgPath := writePipeline(b, dir, fmt.Sprintf("name: bench\nwork_dir: work\nstages:\n  - name: ingest\n    type: ingest\n    inputs: [%s]\n", items))
	cfg, err := engine.LoadPipeline(cfgPath, nil)
	if err != nil {
		b.Fatal(err)
	}
	ec := DefaultConfig()
	ec.Shards = b.N
	ec.Poll = 50 * time.Millisecond
	if !runnerIsPartSafe {
		ec.Resources.MaxParallel = 1 // the setup run; see TestConcurrentPartsRace
	}
	opts := SlurmOptions{ConfigPath: cfgPath, Executor: ec, Binary: bin, Registry: testRegistry(), Log: slog.New(slog.DiscardHandler)}
	if _, err := RunSlurm(context.Background(), cfg, opts); err != nil {
		b.Fatal(err)
	}
	ec.Resources.MaxParallel = 0 // measured: all task slots busy, as for empty tasks
	plan, err := NewPlan(testRegistry(), cfg, cfgPath, ec, nil)
	if err != nil {
		b.Fatal(err)
	}
	run := &SlurmRun{Plan: plan, cfg: cfg, opts: opts, log: opts.Log}
	parts := make([]int, b.N)
	for i := range parts {
		parts[i] = i
	}
	b.ResetTimer()
	job, err := run.submit(context.Background(), plan.Stages[0], parts, nil)
	if err != nil {
		b.Fatal(err)
	}
	waitGone(b, job.JobID)
}
