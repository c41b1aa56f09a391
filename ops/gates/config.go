package gates

import (
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Config configures the gates. Start from DefaultConfig.
type Config struct {
	Order      []string         `yaml:"order"`
	Static     StaticConfig     `yaml:"static"`
	Strength   StrengthConfig   `yaml:"strength"`
	Audit      AuditConfig      `yaml:"audit"`
	Dedup      DedupConfig      `yaml:"dedup"`
	Difficulty DifficultyConfig `yaml:"difficulty"`
	Compose    ComposeConfig    `yaml:"compose"`
}

// StaticConfig bounds format, size and leakage.
type StaticConfig struct {
	MinInstructionBytes int `yaml:"min_instruction_bytes"`
	MaxInstructionBytes int `yaml:"max_instruction_bytes"`
	MaxReferenceBytes   int `yaml:"max_reference_bytes"`
	// LeakNGram and MaxLeakFraction bound leakage: the share of the
	// reference's token n-grams (comments dropped) that also occur in the
	// instruction must not exceed MaxLeakFraction.
	LeakNGram       int     `yaml:"leak_ngram"`
	MaxLeakFraction float64 `yaml:"max_leak_fraction"`
}

// StrengthConfig configures the verifier-strength gate.
type StrengthConfig struct {
	// MinParentMismatches: the adapted parent must mismatch on at least
	// this many samples of the evolved verifier.
	MinParentMismatches int64 `yaml:"min_parent_mismatches"`
	// MaxMutants is accepted so that configs written for the earlier
	// kernel mutant check still load; the kernel verifier's
	// strength_mutants (default 3) now sets how many mutants its audit
	// judges, as rtl's strength_mutants does for RTL.
	MaxMutants int `yaml:"max_mutants"`
	// MinKillRatio is the kernel harness-strength audit's threshold and
	// MinMutantKillRate the RTL one's: the verifier must fail at least this
	// fraction of the judged mutants of the reference (RTL: netlist and
	// evolution-operator mutants; kernels: the other kernel operators). Any
	// trivial candidate that passes rejects the item whatever they are.
	MinKillRatio      float64 `yaml:"min_kill_ratio"`
	MinMutantKillRate float64 `yaml:"min_mutant_kill_rate"`
}

// minKillRate is a domain's mutant kill-rate threshold.
func (c StrengthConfig) minKillRate(domain string) float64 {
	if domain == engine.DomainKernel {
		return c.MinKillRatio
	}
	return c.MinMutantKillRate
}

// AuditConfig configures the contract audit.
type AuditConfig struct {
	CheckInterface bool `yaml:"check_interface"` // Yosys-extracted ports must equal the declared ones
	SpecAudit      bool `yaml:"spec_audit"`      // ask the generator's audit role about the instruction
}

// DedupConfig configures the dedup gate (dedup.Run over the candidates'
// normalized references).
type DedupConfig struct {
	Threshold float64 `yaml:"threshold"`
	NGram     int     `yaml:"ngram"`
}

// DifficultyConfig bounds size and cost.
type DifficultyConfig struct {
	MinTokens      int     `yaml:"min_tokens"`
	MaxTokens      int     `yaml:"max_tokens"`
	MaxCostSeconds float64 `yaml:"max_cost_seconds"` // simulator seconds spent judging the item
}

// ComposeConfig caps admitted items per lineage root.
type ComposeConfig struct {
	LineageCap int `yaml:"lineage_cap"` // 0 = no cap
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Order:      append([]string(nil), DefaultOrder...),
		Static:     StaticConfig{MinInstructionBytes: 40, MaxInstructionBytes: 64 << 10, MaxReferenceBytes: 256 << 10, LeakNGram: 8, MaxLeakFraction: 0.2},
		Strength:   StrengthConfig{MinParentMismatches: 1, MaxMutants: 3, MinKillRatio: 0.5, MinMutantKillRate: 0.8},
		Audit:      AuditConfig{CheckInterface: true, SpecAudit: true},
		Dedup:      DedupConfig{Threshold: 0.95, NGram: 5},
		Difficulty: DifficultyConfig{MinTokens: 10, MaxTokens: 50000, MaxCostSeconds: 120},
		Compose:    ComposeConfig{LineageCap: 16},
	}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var bad []string
	seen := map[string]bool{}
	for _, g := range c.Order {
		switch g {
		case GateStatic, GateStrength, GateAudit, GateDedup, GateDifficulty, GateCompose:
		default:
			bad = append(bad, fmt.Sprintf("order: unknown gate %q (known: %s)", g, strings.Join(DefaultOrder, ", ")))
		}
		if seen[g] {
			bad = append(bad, fmt.Sprintf("order: gate %q listed twice", g))
		}
		seen[g] = true
	}
	s := c.Static
	if s.MinInstructionBytes < 0 || s.MaxInstructionBytes <= s.MinInstructionBytes {
		bad = append(bad, "static: want 0 <= min_instruction_bytes < max_instruction_bytes")
	}
	if s.MaxReferenceBytes < 1 {
		bad = append(bad, "static.max_reference_bytes must be >= 1")
	}
	if s.LeakNGram < 2 {
		bad = append(bad, "static.leak_ngram must be >= 2")
	}
	if s.MaxLeakFraction < 0 || s.MaxLeakFraction > 1 {
		bad = append(bad, "static.max_leak_fraction must be in [0,1]")
	}
	if c.Strength.MinParentMismatches < 1 {
		bad = append(bad, "strength.min_parent_mismatches must be >= 1")
	}
	if c.Strength.MaxMutants < 0 {
		bad = append(bad, "strength.max_mutants must be >= 0")
	}
	if c.Strength.MinKillRatio < 0 || c.Strength.MinKillRatio > 1 {
		bad = append(bad, "strength.min_kill_ratio must be in [0,1]")
	}
	if c.Strength.MinMutantKillRate < 0 || c.Strength.MinMutantKillRate > 1 {
		bad = append(bad, "strength.min_mutant_kill_rate must be in [0,1]")
	}
	if c.Dedup.Threshold <= 0 || c.Dedup.Threshold > 1 {
		bad = append(bad, "dedup.threshold must be in (0,1]")
	}
	if c.Dedup.NGram < 1 {
		bad = append(bad, "dedup.ngram must be >= 1")
	}
	if c.Difficulty.MinTokens < 0 || c.Difficulty.MaxTokens < c.Difficulty.MinTokens {
		bad = append(bad, "difficulty: want 0 <= min_tokens <= max_tokens")
	}
	if c.Difficulty.MaxCostSeconds <= 0 {
		bad = append(bad, "difficulty.max_cost_seconds must be > 0")
	}
	if c.Compose.LineageCap < 0 {
		bad = append(bad, "compose.lineage_cap must be >= 0")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}
