package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/cluster"
)

// PlanOptions are `crucible plan`'s flags.
type PlanOptions struct {
	Config         string
	Executor       string // k8s | slurm
	ExecutorConfig string
	WorkDir        string
	OutDir         string // k8s: where the Job manifests go
	Image          string // k8s: container image (overrides k8s.image)
	Stages         []string
	Out            io.Writer
}

func newPlanCmd() *cobra.Command {
	var o PlanOptions
	c := &cobra.Command{
		Use:   "plan --config FILE --executor k8s|slurm",
		Short: "Lay a pipeline out for a cluster without running it: Kubernetes Indexed Jobs, or the Slurm array jobs build --executor slurm would submit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out = cmd.OutOrStdout()
			return runPlan(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&o.Config, "config", "", "pipeline YAML file (required)")
	c.Flags().StringVar(&o.Executor, "executor", "k8s", "k8s (write Indexed Job manifests) | slurm (print the array jobs)")
	c.Flags().StringVar(&o.ExecutorConfig, "executor-config", "", "executor config YAML; default: the pipeline file's executor: block")
	c.Flags().StringVar(&o.WorkDir, "work-dir", "", "override the pipeline's work_dir")
	c.Flags().StringVar(&o.OutDir, "out", "k8s", "directory for the Kubernetes manifests and apply.sh")
	c.Flags().StringSliceVar(&o.Stages, "stage", nil, "plan only these stages")
	c.Flags().StringVar(&o.Image, "image", "", "k8s: container image with crucible on PATH (default: the executor config's k8s.image, else "+cluster.DefaultK8sImage+")")
	_ = c.MarkFlagRequired("config")
	return c
}

func runPlan(ctx context.Context, o PlanOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Executor != "k8s" && o.Executor != "slurm" {
		return fmt.Errorf("%w: --executor %q: want k8s|slurm", errUsage, o.Executor)
	}
	cfg, ec, err := loadForExecutor(o.Config, o.WorkDir, o.ExecutorConfig)
	if err != nil {
		return err
	}
	plan, err := cluster.NewPlan(newRegistry(), cfg, o.Config, ec, o.Stages)
	if err != nil {
		return err
	}
	if o.Executor == "k8s" {
		k := ec.K8s
		if o.Image != "" {
			k.Image = o.Image
		}
		if k.Image == "" {
			k.Image = cluster.DefaultK8sImage
		}
		files, err := cluster.WriteK8s(plan, k, o.OutDir)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(o.Out, f)
		}
		fmt.Fprintf(o.Out, "image %s (set k8s.image or --image to change it)\nrun the stages in order with: sh %s/apply.sh\n", k.Image, o.OutDir)
		return nil
	}
	fmt.Fprintf(o.Out, "pipeline %s: work dir %s, task logs under %s\n", plan.Pipeline, plan.WorkDir, plan.LogDir)
	for _, s := range plan.Stages {
		states, err := cluster.PartStates(ctx, plan.Registry, cfg, s, cfg.WriterOptions())
		if err != nil {
			return err
		}
		committed := 0
		for _, st := range states {
			if st.Committed {
				committed++
			}
		}
		r := s.Resources
		fmt.Fprintf(o.Out, "  %-14s %3d part(s), %d committed; cpus=%d mem=%s time=%v gpus=%d partition=%s after=%s\n",
			s.Name, s.Shards, committed, r.CPUs, orDash(r.Memory), r.Time, r.GPUs, orDash(r.Partition), orDash(strings.Join(s.From, ",")))
	}
	return nil
}
