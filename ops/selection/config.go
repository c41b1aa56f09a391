package selection

import (
	"errors"
	"fmt"
	"sort"
)

// Reward adapter names.
const (
	RewardAuto         = "auto" // by the item's domain: kernel → kernel_tiered, else rtl_binary
	RewardKernelTiered = "kernel_tiered"
	RewardRTLBinary    = "rtl_binary"
)

// Privileged-context modes for feedback-recoverable tasks.
const (
	// ContextTrajectory takes the failed earlier rounds of the trajectory
	// (sample_index) that first succeeded: what that conversation saw.
	ContextTrajectory = "trajectory"
	// ContextAllRounds takes every failed response of the policy in rounds
	// before the first success, across trajectories.
	ContextAllRounds = "all_rounds"
)

// Config drives Select. Zero values are not defaults: start from
// DefaultConfig.
type Config struct {
	K       int           `yaml:"k" json:"k"`             // pass@k's k
	Student string        `yaml:"student" json:"student"` // policy name of the student
	Teacher string        `yaml:"teacher" json:"teacher"` // policy name of the teacher
	Extract ExtractConfig `yaml:"extract" json:"extract"`

	Reward           string  `yaml:"reward" json:"reward"`
	SpeedupThreshold float64 `yaml:"speedup_threshold" json:"speedup_threshold"` // kernel tier 1.0 needs speedup above this

	RecoverPolicy  string `yaml:"recover_policy" json:"recover_policy"`   // policy whose feedback rounds are mined
	RecoverContext string `yaml:"recover_context" json:"recover_context"` // trajectory | all_rounds

	StrataPolicy  string             `yaml:"strata_policy" json:"strata_policy"`   // whose success rate defines strata
	StrataWeights map[string]float64 `yaml:"strata_weights" json:"strata_weights"` // mix of the strata sample
	StrataSample  int                `yaml:"strata_sample" json:"strata_sample"`   // tasks to sample; 0 = none
	Seed          uint64             `yaml:"seed" json:"seed"`

	// RequireItems rejects rollouts whose task is not among the items even
	// when they carry a verdict.
	RequireItems bool `yaml:"require_items" json:"require_items"`
	BatchSize    int  `yaml:"batch_size" json:"batch_size"` // candidates per verifier call
}

// DefaultConfig is pass@4 against a teacher, auto rewards, trajectory
// contexts and a frontier-leaning strata mix.
func DefaultConfig() Config {
	return Config{
		K: 4, Student: PolicyStudent, Teacher: PolicyTeacher,
		Extract: DefaultExtractConfig(),
		Reward:  RewardAuto, SpeedupThreshold: 1.05,
		RecoverPolicy: PolicyStudent, RecoverContext: ContextTrajectory,
		StrataPolicy: PolicyStudent,
		StrataWeights: map[string]float64{
			StratumFrontier: 0.4, StratumExploration: 0.3, StratumNearMastery: 0.2, StratumExploitation: 0.1,
		},
		BatchSize: 256,
	}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var errs []error
	if c.K < 1 {
		errs = append(errs, fmt.Errorf("k: %d, must be >= 1", c.K))
	}
	if c.Student == "" {
		errs = append(errs, errors.New("student: empty policy name"))
	}
	if c.Teacher == "" {
		errs = append(errs, errors.New("teacher: empty policy name"))
	}
	if c.Student != "" && c.Student == c.Teacher {
		errs = append(errs, fmt.Errorf("teacher: same policy as student (%q)", c.Student))
	}
	if err := c.Extract.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.Reward {
	case RewardAuto, RewardKernelTiered, RewardRTLBinary:
	default:
		errs = append(errs, fmt.Errorf("reward: %q is not auto|kernel_tiered|rtl_binary", c.Reward))
	}
	if c.SpeedupThreshold <= 0 {
		errs = append(errs, fmt.Errorf("speedup_threshold: %g, must be > 0", c.SpeedupThreshold))
	}
	if c.RecoverPolicy == "" {
		errs = append(errs, errors.New("recover_policy: empty policy name"))
	}
	if c.RecoverContext != ContextTrajectory && c.RecoverContext != ContextAllRounds {
		errs = append(errs, fmt.Errorf("recover_context: %q is not trajectory|all_rounds", c.RecoverContext))
	}
	if c.StrataPolicy == "" {
		errs = append(errs, errors.New("strata_policy: empty policy name"))
	}
	var sum float64
	names := make([]string, 0, len(c.StrataWeights))
	for name := range c.StrataWeights {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w := c.StrataWeights[name]
		if !isStratum(name) {
			errs = append(errs, fmt.Errorf("strata_weights: unknown stratum %q (want frontier|exploration|near_mastery|exploitation)", name))
		}
		if w < 0 {
			errs = append(errs, fmt.Errorf("strata_weights.%s: %g, must be >= 0", name, w))
		}
		sum += w
	}
	if c.StrataSample < 0 {
		errs = append(errs, fmt.Errorf("strata_sample: %d, must be >= 0", c.StrataSample))
	}
	if c.StrataSample > 0 && sum <= 0 {
		errs = append(errs, errors.New("strata_weights: need a positive weight to sample strata"))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch_size: %d, must be >= 1", c.BatchSize))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
