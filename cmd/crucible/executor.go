package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/cluster"
	"github.com/crucible-data/crucible/engine"
)

// executorFlags are build's --executor and --executor-config.
type executorFlags struct {
	Name   string // local | slurm
	Config string // executor config file; default: the pipeline's executor: block
	// Binary is the crucible executable tasks run (default: this one); the
	// tests set it, since their own executable is the test binary.
	Binary string
}

func addExecutorFlags(c *cobra.Command, f *executorFlags) {
	c.Flags().StringVar(&f.Name, "executor", "local", "where stage parts run: local (this process) | slurm (one array job per stage)")
	c.Flags().StringVar(&f.Config, "executor-config", "", "executor config YAML (shards, per-stage resources); default: the pipeline file's executor: block")
	c.Flags().StringVar(&f.Binary, "crucible-binary", "", "crucible executable the cluster tasks run (default: this one; must exist on every node)")
	_ = c.Flags().MarkHidden("crucible-binary")
}

// runBuildWithExecutor runs `crucible build` on the chosen executor. With
// slurm, every stage becomes an array job of shard-part tasks that run
// `crucible build --stage S --shard i/N`; this process submits them, waits,
// and cancels them on Ctrl-C.
func runBuildWithExecutor(ctx context.Context, o BuildOptions, ex executorFlags) error {
	switch ex.Name {
	case "", "local":
		return runBuild(ctx, o)
	case "slurm":
	default:
		return fmt.Errorf("%w: --executor %q: want local|slurm (for Kubernetes, `crucible plan --executor k8s`)", errUsage, ex.Name)
	}
	if o.Shard != "" {
		return fmt.Errorf("%w: --shard is for one task; --executor slurm sets every task's shard from the executor config", errUsage)
	}
	cfg, ec, err := loadForExecutor(o.Config, o.WorkDir, ex.Config)
	if err != nil {
		return err
	}
	run, err := cluster.RunSlurm(ctx, cfg, cluster.SlurmOptions{ConfigPath: o.Config, Executor: ec, Binary: ex.Binary,
		Only: o.Stages, Force: o.Force, Log: slog.Default(), Registry: newRegistry()})
	if run != nil && o.Out != nil {
		for _, name := range run.Skipped {
			fmt.Fprintf(o.Out, "  %-14s committed, not submitted\n", name)
		}
		for _, j := range run.Jobs {
			fmt.Fprintf(o.Out, "  %-14s job %s, %d part(s), logs %s\n", j.Stage, j.JobID, len(j.Parts), j.LogDir)
		}
		if err == nil {
			fmt.Fprintf(o.Out, "shards and manifests: %s/<stage>/\n", run.Plan.WorkDir)
		}
	}
	return err
}

// loadForExecutor loads the pipeline (with --work-dir applied) and the
// executor config.
func loadForExecutor(config, workDir, executorConfig string) (*engine.PipelineConfig, cluster.Config, error) {
	cfg, err := engine.LoadPipeline(config, newRegistry())
	if err != nil {
		return nil, cluster.Config{}, err
	}
	if workDir != "" {
		abs, err := filepath.Abs(workDir)
		if err != nil {
			return nil, cluster.Config{}, err
		}
		cfg.WorkDir = abs
	}
	ec, err := cluster.LoadConfig(config, executorConfig)
	if err != nil {
		return nil, cluster.Config{}, err
	}
	return cfg, ec, ec.Validate(cfg)
}
