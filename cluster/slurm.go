package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// SlurmOptions control a run on Slurm.
type SlurmOptions struct {
	ConfigPath string // the pipeline file; tasks read it from the shared filesystem
	Executor   Config
	// Binary is the crucible executable the tasks run; it must be at the
	// same path on every node. Empty means this process's executable.
	Binary string
	Only   []string // run only these stages (as `build --stage`)
	// Registry declares the stage types (parallelism, broadcast inputs).
	Registry *engine.Registry
	// Force submits every part and passes --force to the tasks.
	Force bool
	Log   *slog.Logger
}

// SlurmJob is one submitted stage: an array job whose task i is part i.
type SlurmJob struct {
	Stage  string
	JobID  string
	Parts  []int  // the parts submitted (the others were committed)
	Script string // the batch script, kept next to the logs
	LogDir string // task i logs to <LogDir>/<JobID>_<iiii>.log
}

// LogPath is where part i of the job logs.
func (j SlurmJob) LogPath(part int) string {
	return filepath.Join(j.LogDir, fmt.Sprintf("%s_%04d.log", j.JobID, part))
}

// SlurmRun is a submitted pipeline. The scheduler and the manifests hold
// all its state; this value only remembers the job ids to wait for.
type SlurmRun struct {
	Plan    *Plan
	Jobs    []SlurmJob
	Skipped []string // stages with every part committed and current
	cfg     *engine.PipelineConfig
	opts    SlurmOptions
	cli     slurmCLI
	log     *slog.Logger
}

// RunSlurm submits the pipeline's stages as array jobs and waits for them.
// Parts already committed are not submitted, so after a failure running the
// same command again finishes the pipeline. When ctx ends (Ctrl-C) the
// submitted jobs are cancelled.
func RunSlurm(ctx context.Context, cfg *engine.PipelineConfig, opts SlurmOptions) (*SlurmRun, error) {
	run, err := SubmitSlurm(ctx, cfg, opts)
	if err != nil {
		return run, err
	}
	return run, run.Wait(ctx)
}

// SubmitSlurm submits every stage that has parts to run, in pipeline order,
// each waiting (afterok) for the jobs of the upstream stages it reads.
func SubmitSlurm(ctx context.Context, cfg *engine.PipelineConfig, opts SlurmOptions) (*SlurmRun, error) {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: locating the crucible binary: %v", engine.ErrConfig, err)
		}
		opts.Binary = exe
	}
	plan, err := NewPlan(opts.Registry, cfg, opts.ConfigPath, opts.Executor, opts.Only)
	if err != nil {
		return nil, err
	}
	// Tasks start in the work dir (--chdir), so it must exist first.
	if err := os.MkdirAll(plan.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	run := &SlurmRun{Plan: plan, cfg: cfg, opts: opts, log: log}
	submitted := map[string]SlurmJob{}
	for _, s := range plan.Stages {
		parts, err := run.partsToRun(ctx, s, submitted)
		if err != nil {
			run.Cancel()
			return run, err
		}
		if len(parts) == 0 {
			log.Info("stage committed, not submitted", "stage", s.Name, "parts", s.Shards)
			run.Skipped = append(run.Skipped, s.Name)
			continue
		}
		var deps []string
		for _, from := range s.From {
			if j, ok := submitted[from]; ok {
				deps = append(deps, j.JobID)
			}
		}
		job, err := run.submit(ctx, s, parts, deps)
		if err != nil {
			run.Cancel()
			return run, fmt.Errorf("stage %s: %w", s.Name, err)
		}
		log.Info("stage submitted", "stage", s.Name, "job", job.JobID, "parts", len(parts), "of", s.Shards,
			"after", strings.Join(deps, ","), "logs", job.LogDir)
		submitted[s.Name] = job
		run.Jobs = append(run.Jobs, job)
	}
	return run, nil
}

// partsToRun is the parts of s not committed and current, plus the parts
// whose upstream is being rerun: the same part when the upstream is split
// the same way (part i reads upstream part i), every part otherwise.
func (r *SlurmRun) partsToRun(ctx context.Context, s StagePlan, submitted map[string]SlurmJob) ([]int, error) {
	run := map[int]bool{}
	if r.opts.Force {
		for i := 0; i < s.Shards; i++ {
			run[i] = true
		}
	}
	for _, from := range s.From {
		j, ok := submitted[from]
		if !ok {
			continue
		}
		up, _ := r.Plan.Stage(from)
		for i := 0; i < s.Shards; i++ {
			if up.Shards != s.Shards || contains(j.Parts, i) {
				run[i] = true
			}
		}
	}
	if len(run) < s.Shards {
		states, err := PartStates(ctx, r.Plan.Registry, r.cfg, s, r.cfg.WriterOptions())
		if err != nil {
			return nil, err
		}
		for _, st := range states {
			if !st.Committed {
				r.log.Debug("part to run", "stage", s.Name, "part", st.Shard.Index, "reason", st.Reason)
				run[st.Shard.Index] = true
			}
		}
	}
	parts := make([]int, 0, len(run))
	for i := range run {
		parts = append(parts, i)
	}
	sort.Ints(parts)
	return parts, nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// submit writes the stage's batch script next to its logs and sbatches it.
func (r *SlurmRun) submit(ctx context.Context, s StagePlan, parts []int, deps []string) (SlurmJob, error) {
	logDir := filepath.Join(r.Plan.LogDir, s.Name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return SlurmJob{}, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	script := filepath.Join(logDir, "job.sbatch")
	if err := engine.WriteFileAtomic(script, []byte(r.batchScript(s))); err != nil {
		return SlurmJob{}, err
	}
	id, err := r.cli.sbatch(ctx, sbatchArgs(r.Plan, s, parts, deps, logDir, script))
	if err != nil {
		return SlurmJob{}, err
	}
	return SlurmJob{Stage: s.Name, JobID: id, Parts: parts, Script: script, LogDir: logDir}, nil
}

// batchScript is one task: crucible build for part $SLURM_ARRAY_TASK_ID.
func (r *SlurmRun) batchScript(s StagePlan) string {
	const index = "@@INDEX@@"
	args := r.Plan.TaskArgs(s, index, r.opts.Force)
	quoted := []string{shellQuote(r.opts.Binary)}
	for _, a := range args {
		quoted = append(quoted, strings.ReplaceAll(shellQuote(a), index, `'"${SLURM_ARRAY_TASK_ID}"'`))
	}
	return fmt.Sprintf(`#!/bin/sh
# crucible pipeline %s, stage %s (%s): %d part(s).
# Written by crucible build --executor slurm. Array task i runs shard part i
# and commits %s.
exec %s
`, r.Plan.Pipeline, s.Name, s.Type, s.Shards,
		filepath.Join(r.Plan.WorkDir, s.Name, engine.ManifestName(engine.Shard{Index: 0, Count: s.Shards})),
		strings.Join(quoted, " "))
}

// sbatchArgs are the sbatch flags of one stage's array job.
func sbatchArgs(p *Plan, s StagePlan, parts []int, deps []string, logDir, script string) []string {
	res := s.Resources
	args := []string{
		"--job-name=crucible." + p.Pipeline + "." + s.Name,
		"--array=" + arraySpec(parts, res.MaxParallel),
		"--output=" + filepath.Join(logDir, "%A_%4a.log"),
		"--chdir=" + p.WorkDir,
	}
	if len(deps) > 0 {
		// The job can never start once an upstream task failed; let Slurm
		// drop it rather than leave it pending forever.
		args = append(args, "--dependency=afterok:"+strings.Join(deps, ":"), "--kill-on-invalid-dep=yes")
	}
	if res.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(res.CPUs))
	}
	if res.Memory != "" {
		args = append(args, "--mem="+res.Memory)
	}
	if res.Time > 0 {
		args = append(args, "--time="+strconv.Itoa(int(math.Ceil(res.Time.Minutes()))))
	}
	if res.Partition != "" {
		args = append(args, "--partition="+res.Partition)
	}
	if res.GPUs > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(res.GPUs))
	}
	args = append(args, res.SbatchArgs...)
	return append(args, script)
}

// Cancel cancels every submitted job (their running tasks end, the pending
// ones never start). Committed parts stay committed.
func (r *SlurmRun) Cancel() {
	ids := make([]string, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		ids = append(ids, j.JobID)
	}
	if len(ids) == 0 {
		return
	}
	if err := r.cli.scancel(ids...); err != nil {
		r.log.Error("cancelling the submitted jobs failed; cancel them by hand", "jobs", strings.Join(ids, ","), "err", err)
		return
	}
	r.log.Warn("cancelled the submitted jobs", "jobs", strings.Join(ids, ","))
}

// maxSqueueFailures is how many squeue calls in a row may fail before Wait
// gives up.
const maxSqueueFailures = 5

// Wait polls squeue until no submitted job is left, then checks the
// manifests of every submitted part. A job that can never start because an
// upstream task failed is cancelled. When ctx ends, every job is cancelled.
func (r *SlurmRun) Wait(ctx context.Context) error {
	poll := r.opts.Executor.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	byID := map[string]SlurmJob{}
	var ids []string
	for _, j := range r.Jobs {
		byID[j.JobID] = j
		ids = append(ids, j.JobID)
	}
	last := map[string]string{}
	failures := 0
	for len(ids) > 0 {
		entries, err := r.cli.squeue(ctx, ids)
		if err != nil {
			if ctx.Err() != nil {
				r.Cancel()
				return ctx.Err()
			}
			// slurmctld may be restarting or busy; the jobs go on without
			// us, so only give up waiting after a run of failures.
			if failures++; failures >= maxSqueueFailures {
				return fmt.Errorf("%w (the jobs were left running: watch them with squeue; once they end, running the same command again submits whatever did not commit)", err)
			}
			r.log.Warn("squeue failed, retrying", "err", err)
			select {
			case <-ctx.Done():
				r.Cancel()
				return ctx.Err()
			case <-time.After(poll):
			}
			continue
		}
		failures = 0
		live := map[string][]queueEntry{}
		for _, e := range entries {
			live[e.JobID] = append(live[e.JobID], e)
		}
		var still []string
		for _, id := range ids {
			es, ok := live[id]
			if !ok {
				r.log.Info("job finished", "stage", byID[id].Stage, "job", id)
				continue
			}
			still = append(still, id)
			running, pending, neverReason := 0, 0, false
			for _, e := range es {
				switch e.State {
				case "RUNNING", "COMPLETING":
					running++
				case "PENDING":
					pending++
					neverReason = neverReason || e.Reason == "DependencyNeverSatisfied"
				}
			}
			if neverReason {
				// An upstream part failed; the job cannot start this run.
				r.log.Warn("upstream failed, cancelling the dependent job", "stage", byID[id].Stage, "job", id)
				if err := r.cli.scancel(id); err != nil {
					return err
				}
			}
			if st := fmt.Sprintf("%d running, %d pending", running, pending); last[id] != st {
				last[id] = st
				r.log.Info("job", "stage", byID[id].Stage, "job", id, "tasks", st)
			}
		}
		ids = still
		if len(ids) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			r.Cancel()
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	return r.check(ctx)
}

// check reads the manifests of every submitted part: the run succeeded
// exactly when all of them are committed and current.
func (r *SlurmRun) check(ctx context.Context) error {
	var failed []string
	total := 0
	for _, j := range r.Jobs {
		s, _ := r.Plan.Stage(j.Stage)
		states, err := PartStates(ctx, r.Plan.Registry, r.cfg, s, r.cfg.WriterOptions())
		if err != nil {
			return err
		}
		for _, i := range j.Parts {
			total++
			if states[i].Committed {
				continue
			}
			msg := fmt.Sprintf("%s part %d/%d (%s)", j.Stage, i, s.Shards, states[i].Reason)
			if tail := logTail(j.LogPath(i), 3); tail != "" {
				msg += fmt.Sprintf("; log %s ends: %s", j.LogPath(i), tail)
			} else {
				msg += "; no log, so it never started (an upstream part failed or it was cancelled)"
			}
			failed = append(failed, msg)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: slurm: %d of %d submitted parts did not commit; running the same command again submits only those:\n  %s",
			engine.ErrIncomplete, len(failed), total, strings.Join(failed, "\n  "))
	}
	return nil
}

// logTail returns the last n non-empty lines of a task log, joined.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
