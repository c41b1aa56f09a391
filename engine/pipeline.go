package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// PipelineConfig is a pipeline file: an ordered list of stages.
//
//	name: nightly
//	work_dir: ../out/nightly        # relative to this file
//	stages:
//	  - name: ingest
//	    type: ingest
//	    inputs: [seeds/rtl]         # raw files or directories, relative to this file
//	    config: {preset: taskdir}
//	  - name: verify
//	    type: verify_rtl
//	    from: [ingest]              # upstream stages whose shards this stage reads
//	    max_reject_fraction: 0.2    # fail the build (exit 6) when more is rejected
type PipelineConfig struct {
	Name    string      `yaml:"name"`
	WorkDir string      `yaml:"work_dir"`
	Stages  []StageSpec `yaml:"stages"`
	// Output sizing (bytes); zero means the defaults (64 MiB row groups,
	// 512 MiB shards).
	RowGroupBytes int64 `yaml:"row_group_bytes"`
	ShardBytes    int64 `yaml:"shard_bytes"`
	// Executor is read by the cluster executors (shards and resources per
	// stage); the local runner ignores it.
	Executor yaml.Node `yaml:"executor"`

	dir string // directory of the config file
	// placed maps a stage name to the directory its output lives in when
	// that is not work_dir/name: a one-stage run (RunOne) commits to the
	// command's --out DIR and reads upstream directories named on its
	// command line.
	placed map[string]string
	// rawShards are plain files a one-stage run hands its stage as
	// upstream shards (OneStage.Shards), already hashed.
	rawShards []InputShard
}

// StageSpec is one stage entry.
type StageSpec struct {
	Name   string    `yaml:"name"`
	Type   string    `yaml:"type"`
	From   []string  `yaml:"from"`
	Inputs []string  `yaml:"inputs"`
	Config yaml.Node `yaml:"config"`
	// MaxRejectFraction fails the build (exit 6) when more than this share
	// of the rows the stage decided on were rejected; unset means the stage
	// type's default (DefaultMaxRejectFraction), and no limit for types
	// without one. It is a check on the output, not part of the stage's
	// fingerprint: changing it re-checks, it does not redo the stage.
	MaxRejectFraction *float64 `yaml:"max_reject_fraction"`

	// extra is the canonical JSON of settings outside Config that decide
	// the stage's output (OneStage.Extra); part of the config hash.
	extra string
}

var stageName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// LoadPipeline reads and validates a pipeline file against a registry.
func LoadPipeline(path string, reg *Registry) (*PipelineConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var cfg PipelineConfig
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	cfg.dir = filepath.Dir(abs)
	if err := cfg.Validate(reg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &cfg, nil
}

// Validate reports every problem at once.
func (c *PipelineConfig) Validate(reg *Registry) error {
	var errs []error
	if c.WorkDir == "" {
		errs = append(errs, errors.New("work_dir: required"))
	}
	if len(c.Stages) == 0 {
		errs = append(errs, errors.New("stages: at least one stage is required"))
	}
	if c.RowGroupBytes < 0 || c.ShardBytes < 0 {
		errs = append(errs, errors.New("row_group_bytes, shard_bytes: must not be negative"))
	}
	seen := map[string]bool{}
	for i, s := range c.Stages {
		where := fmt.Sprintf("stages[%d] (%s)", i, s.Name)
		if !stageName.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("%s: name must match %s", where, stageName))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate stage name", where))
		}
		if f := s.MaxRejectFraction; f != nil && !(*f >= 0 && *f <= 1) {
			errs = append(errs, fmt.Errorf("%s: max_reject_fraction %g: want a share between 0 and 1", where, *f))
		}
		if reg != nil {
			if _, err := reg.Build(s.Type, c.StageConfig(s)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
		}
		for _, f := range s.From {
			if !seen[f] {
				errs = append(errs, fmt.Errorf("%s: from %q: no earlier stage has that name", where, f))
			}
		}
		for _, in := range s.Inputs {
			if _, err := os.Stat(resolvePath(c.dir, in)); err != nil {
				errs = append(errs, fmt.Errorf("%s: input %q: %v", where, in, err))
			}
		}
		seen[s.Name] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// WriterOptions returns the shard sizing the pipeline asks for.
func (c *PipelineConfig) WriterOptions() WriterOptions {
	o := DefaultWriterOptions()
	if c.RowGroupBytes > 0 {
		o.RowGroupBytes = c.RowGroupBytes
	}
	if c.ShardBytes > 0 {
		o.ShardBytes = c.ShardBytes
	}
	return o
}

// StageConfig returns the config block of a stage.
func (c *PipelineConfig) StageConfig(s StageSpec) StageConfig {
	sc := StageConfig{Name: s.Name, dir: c.dir}
	if s.Config.Kind != 0 {
		n := s.Config
		sc.node = &n
	}
	return sc
}

// Dir is the directory the config was loaded from.
func (c *PipelineConfig) Dir() string { return c.dir }

// ResolvedWorkDir is work_dir resolved against the config's directory.
func (c *PipelineConfig) ResolvedWorkDir() string { return resolvePath(c.dir, c.WorkDir) }

// stageDir is the directory stage name's output is committed in.
func (c *PipelineConfig) stageDir(name string) string {
	if d, ok := c.placed[name]; ok {
		return d
	}
	return filepath.Join(c.ResolvedWorkDir(), name)
}

// configHash fingerprints a stage's type and config (canonical JSON of the
// decoded YAML, so formatting and key order do not matter).
func configHash(s StageSpec) (string, error) {
	var v any
	if s.Config.Kind != 0 {
		if err := s.Config.Decode(&v); err != nil {
			return "", fmt.Errorf("%w: stage %s config: %v", ErrConfig, s.Name, err)
		}
	}
	data, err := json.Marshal(struct {
		Type   string `json:"type"`
		From   []string
		Config any    `json:"config"`
		Extra  string `json:"extra,omitempty"` // omitted: a pipeline's hash is what it was
	}{s.Type, s.From, v, s.extra})
	if err != nil {
		return "", fmt.Errorf("%w: stage %s config: %v", ErrConfig, s.Name, err)
	}
	return HashString(string(data)), nil
}

func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// CheckStageNames reports names (e.g. `build --stage`) that are not stages of
// the pipeline, listing the stages it has: a typo must not run nothing and
// pass for success.
func (c *PipelineConfig) CheckStageNames(names []string) error {
	known := make([]string, len(c.Stages))
	has := map[string]bool{}
	for i, s := range c.Stages {
		known[i] = s.Name
		has[s.Name] = true
	}
	var bad []string
	for _, n := range names {
		if !has[n] {
			bad = append(bad, fmt.Sprintf("%q", n))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: --stage %s: no such stage in pipeline %s (stages: %s)", ErrConfig, strings.Join(bad, ", "), c.Name, strings.Join(known, ", "))
	}
	return nil
}
