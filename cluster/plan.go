package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/crucible-data/crucible/engine"
)

// StagePlan is one stage as the scheduler sees it: N parts with the same
// resources.
type StagePlan struct {
	Name      string
	Type      string
	Shards    int
	From      []string // upstream stages, i.e. the jobs this one waits for
	Resources Resources
}

// Plan is a pipeline laid out for a scheduler. Every path in it is
// absolute, since tasks start in whatever directory the node gives them.
type Plan struct {
	Pipeline   string
	ConfigPath string
	WorkDir    string
	LogDir     string
	Stages     []StagePlan
	// Registry declares the stage types: parallelism and broadcast inputs.
	Registry *engine.Registry
}

// NewPlan lays cfg out with the executor config ec. only, when not empty,
// keeps those stages (their upstreams must be complete already, as with
// `crucible build --stage`).
// Parallelism comes from reg: a global stage runs as one task (a policy
// asking to split one is an error), every other stage as ec.Shards parts.
func NewPlan(reg *engine.Registry, cfg *engine.PipelineConfig, configPath string, ec Config, only []string) (*Plan, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: no stage registry: the planner takes each stage's parallelism from it", engine.ErrConfig)
	}
	if err := ec.Validate(cfg); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrConfig, err)
	}
	work, err := filepath.Abs(cfg.ResolvedWorkDir())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrConfig, err)
	}
	p := &Plan{Pipeline: cfg.Name, ConfigPath: abs, WorkDir: work, LogDir: ec.LogDir, Registry: reg}
	if p.LogDir == "" {
		p.LogDir = filepath.Join(work, "logs")
	} else if !filepath.IsAbs(p.LogDir) {
		p.LogDir = filepath.Join(filepath.Dir(abs), p.LogDir)
	}
	if err := cfg.CheckStageNames(only); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, o := range only {
		keep[o] = true
	}
	for _, s := range cfg.Stages {
		if len(keep) > 0 && !keep[s.Name] {
			continue
		}
		delete(keep, s.Name)
		sp := ec.Stages[s.Name]
		st, ok := reg.Type(s.Type)
		if !ok {
			return nil, fmt.Errorf("%w: stage %s: unknown stage type %q", engine.ErrConfig, s.Name, s.Type)
		}
		global := st.Parallelism == engine.Global
		n := sp.Shards
		switch {
		case n == 0 && global:
			n = 1
		case n == 0:
			n = ec.Shards
		case n > 1 && global:
			return nil, fmt.Errorf("%w: executor config: stages: %s: shards: %d, but stage type %s is global (it reads every part "+
				"of its upstreams and runs once)", engine.ErrConfig, s.Name, n, s.Type)
		}
		p.Stages = append(p.Stages, StagePlan{Name: s.Name, Type: s.Type, Shards: n,
			From: append([]string(nil), s.From...), Resources: sp.Resources.merged(ec.Resources)})
	}
	for name := range keep {
		return nil, fmt.Errorf("%w: --stage %s: the pipeline has no such stage", engine.ErrConfig, name)
	}
	return p, nil
}

// Stage returns the plan of a stage by name.
func (p *Plan) Stage(name string) (StagePlan, bool) {
	for _, s := range p.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return StagePlan{}, false
}

// TaskArgs are the crucible arguments of one task of stage s. shardIndex is
// how the scheduler names the part ("${SLURM_ARRAY_TASK_ID}",
// "$(JOB_COMPLETION_INDEX)"); a one-part stage runs unsharded so it writes
// manifest.json, which every downstream stage can read.
func (p *Plan) TaskArgs(s StagePlan, shardIndex string, force bool) []string {
	args := []string{"build", "--config", p.ConfigPath, "--stage", s.Name, "--work-dir", p.WorkDir,
		"--no-progress", "--log-format", "json"}
	if s.Shards > 1 {
		args = append(args, "--shard", shardIndex+"/"+strconv.Itoa(s.Shards))
	}
	if force {
		args = append(args, "--force")
	}
	return args
}

// Shard is part i of stage s.
func (s StagePlan) Shard(i int) engine.Shard { return engine.Shard{Index: i, Count: s.Shards} }
