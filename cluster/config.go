// Package cluster runs a pipeline's stages on a cluster scheduler instead of
// in one process: every stage becomes an array of shard-part tasks
// (`crucible build --stage S --shard i/N`) on Slurm, or an Indexed Job on
// Kubernetes. It keeps no state of its own: what is done is what the stage
// manifests on the shared work directory say, and what is running is what
// the scheduler says.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
)

// ErrScheduler: a scheduler command (sbatch, squeue, scancel) failed or
// answered something this package cannot read.
var ErrScheduler = errors.New("scheduler failure")

// Resources are what one task of a stage asks the scheduler for. Zero
// values leave the scheduler's defaults.
type Resources struct {
	CPUs      int           `yaml:"cpus"`
	Memory    string        `yaml:"memory"`    // per task: "512M", "4G" (K, M, G, T; binary units)
	Time      time.Duration `yaml:"time"`      // wall-clock limit per task: "30m", "2h"
	Partition string        `yaml:"partition"` // Slurm partition (GPU stages usually need another)
	GPUs      int           `yaml:"gpus"`      // GPUs per task (kernel verification)
	// MaxParallel caps how many tasks of the stage run at once (Slurm's
	// --array=...%M, Kubernetes parallelism); 0 means no cap.
	MaxParallel int `yaml:"max_parallel"`
	// SbatchArgs are passed to sbatch as they are (--account, --qos, ...).
	SbatchArgs []string `yaml:"sbatch_args"`
}

// StagePolicy sets one stage's split and resources.
type StagePolicy struct {
	// Shards is the number of parts the stage runs as. 1 runs it as one
	// task over all its inputs, which stages needing a global view
	// (selection, composition, dedup, packing) must.
	Shards    int `yaml:"shards"`
	Resources `yaml:",inline"`
}

// Config is the executor configuration: a file given with
// --executor-config, or the `executor:` block of the pipeline file.
//
//	shards: 4
//	resources: {cpus: 2, memory: 4G, time: 2h}
//	stages:
//	  verify: {partition: gpu, gpus: 1}
//	  select: {shards: 1}
//	k8s: {image: registry.example/crucible:v1, volume_claim: corpus, mount_path: /data}
type Config struct {
	// Shards is the number of parts of every per-part stage; global stages
	// (engine.Global, declared where the type is registered) run as one
	// task.
	Shards int `yaml:"shards"`
	// LogDir holds per-task logs and the generated batch scripts; the
	// default is <work_dir>/logs. It must be on storage the nodes share.
	LogDir string `yaml:"log_dir"`
	// Poll is how often squeue is asked about the submitted jobs.
	Poll      time.Duration          `yaml:"poll"`
	Resources Resources              `yaml:"resources"` // defaults for every stage
	Stages    map[string]StagePolicy `yaml:"stages"`
	K8s       K8sConfig              `yaml:"k8s"`
}

// DefaultConfig splits every stage that can be split into 4 parts, one CPU
// each.
func DefaultConfig() Config {
	return Config{Shards: 4, Poll: 2 * time.Second, Resources: Resources{CPUs: 1}}
}

var memoryPattern = regexp.MustCompile(`^[0-9]+[KMGT]?$`)

// Validate reports every bad field at once. With a pipeline it also checks
// that every stage named under stages: exists.
func (c Config) Validate(p *engine.PipelineConfig) error {
	var errs []error
	if c.Shards < 1 {
		errs = append(errs, fmt.Errorf("shards: %d, need >= 1", c.Shards))
	}
	if c.Poll < 0 {
		errs = append(errs, fmt.Errorf("poll: %v is negative", c.Poll))
	}
	errs = append(errs, c.Resources.validate("resources")...)
	names := make([]string, 0, len(c.Stages))
	for name := range c.Stages {
		names = append(names, name)
	}
	sort.Strings(names)
	known := map[string]bool{}
	if p != nil {
		for _, s := range p.Stages {
			known[s.Name] = true
		}
	}
	for _, name := range names {
		sp := c.Stages[name]
		where := "stages." + name
		if p != nil && !known[name] {
			errs = append(errs, fmt.Errorf("%s: the pipeline has no stage %q", where, name))
		}
		if sp.Shards < 0 {
			errs = append(errs, fmt.Errorf("%s.shards: %d is negative", where, sp.Shards))
		}
		errs = append(errs, sp.Resources.validate(where)...)
	}
	errs = append(errs, c.K8s.validate()...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: executor config: %w", engine.ErrConfig, errors.Join(errs...))
	}
	return nil
}

func (r Resources) validate(where string) []error {
	var errs []error
	if r.CPUs < 0 {
		errs = append(errs, fmt.Errorf("%s.cpus: %d is negative", where, r.CPUs))
	}
	if r.GPUs < 0 {
		errs = append(errs, fmt.Errorf("%s.gpus: %d is negative", where, r.GPUs))
	}
	if r.MaxParallel < 0 {
		errs = append(errs, fmt.Errorf("%s.max_parallel: %d is negative", where, r.MaxParallel))
	}
	if r.Time < 0 {
		errs = append(errs, fmt.Errorf("%s.time: %v is negative", where, r.Time))
	}
	if r.Memory != "" && !memoryPattern.MatchString(r.Memory) {
		errs = append(errs, fmt.Errorf("%s.memory: %q, want a number with an optional K, M, G or T suffix", where, r.Memory))
	}
	return errs
}

// merged returns r with every zero field taken from def; sbatch arguments
// add up (defaults first, so a stage's own come last and win).
func (r Resources) merged(def Resources) Resources {
	out := r
	if out.CPUs == 0 {
		out.CPUs = def.CPUs
	}
	if out.Memory == "" {
		out.Memory = def.Memory
	}
	if out.Time == 0 {
		out.Time = def.Time
	}
	if out.Partition == "" {
		out.Partition = def.Partition
	}
	if out.GPUs == 0 {
		out.GPUs = def.GPUs
	}
	if out.MaxParallel == 0 {
		out.MaxParallel = def.MaxParallel
	}
	out.SbatchArgs = append(append([]string(nil), def.SbatchArgs...), r.SbatchArgs...)
	return out
}

// LoadConfig reads the executor configuration. With executorPath it reads
// that file; otherwise the `executor:` block of the pipeline file, if it
// has one; otherwise the defaults. Fields not given keep DefaultConfig's
// values. Unknown keys are errors.
func LoadConfig(pipelinePath, executorPath string) (Config, error) {
	cfg := DefaultConfig()
	var node *yaml.Node
	src := executorPath
	if executorPath != "" {
		data, err := os.ReadFile(executorPath)
		if err != nil {
			return cfg, fmt.Errorf("%w: executor config: %v", engine.ErrConfig, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", engine.ErrConfig, executorPath, err)
		}
		if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
			node = doc.Content[0]
		}
	} else if pipelinePath != "" {
		data, err := os.ReadFile(pipelinePath)
		if err != nil {
			return cfg, fmt.Errorf("%w: %v", engine.ErrConfig, err)
		}
		// Only the executor block; the engine validates everything else.
		var doc struct {
			Executor yaml.Node `yaml:"executor"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", engine.ErrConfig, pipelinePath, err)
		}
		if doc.Executor.Kind != 0 {
			node, src = &doc.Executor, pipelinePath+": executor"
		}
	}
	if node == nil {
		return cfg, nil
	}
	data, err := yaml.Marshal(node)
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%w: %s: %v", engine.ErrConfig, src, err)
	}
	return cfg, nil
}
