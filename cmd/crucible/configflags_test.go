package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type flagTestConfig struct {
	Preset   string  `yaml:"preset"`
	MinRate  float64 `yaml:"min_rate,omitempty"`
	Strength struct {
		MinKill float64  `yaml:"min_mutant_kill_rate"`
		Tools   []string `yaml:"tools"`
	} `yaml:"strength"`
	Weights map[string]float64 `yaml:"weights"`
	Old     int                `yaml:"old_name"`
	Hidden  string             `yaml:"-"`
}

func parseStageFlags(t *testing.T, args ...string) (*flagTestConfig, *pflag.FlagSet, error) {
	t.Helper()
	cfg := &flagTestConfig{Preset: "items", MinRate: 0.5, Weights: map[string]float64{"a": 1}}
	cfg.Strength.MinKill, cfg.Strength.Tools = 0.8, []string{"iverilog"}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	sf := bindStageFlags(fs, cfg, map[string]flagDoc{"old_name": {Name: "legacy", Help: "kept name"}})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cfg, fs, sf.apply()
}

// Flags come from the config's YAML keys, kebab-cased and dotted paths
// joined, with the struct's values as defaults; a doc entry keeps an older
// flag name; maps have no flag (only --set); a yaml:"-" field none at all.
func TestStageFlagsDeriveFromConfig(t *testing.T) {
	_, fs, err := parseStageFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{"preset": "items", "min-rate": "0.5", "strength-min-mutant-kill-rate": "0.8",
		"strength-tools": "[iverilog]", "legacy": "0"} {
		f := fs.Lookup(name)
		if f == nil || f.DefValue != def {
			t.Errorf("flag --%s: %+v, want default %q", name, f, def)
		}
	}
	for _, name := range []string{"old-name", "weights", "hidden"} {
		if fs.Lookup(name) != nil {
			t.Errorf("flag --%s should not exist", name)
		}
	}
	if f := fs.Lookup("legacy"); f == nil || f.Usage != "kept name" {
		t.Errorf("--legacy help: %+v", f)
	}
}

// Flags write into the config; --set reaches any key, nested ones and map
// entries included, leaves the rest of a nested struct alone, and wins
// over a flag for the same field.
func TestStageFlagsSetOverrides(t *testing.T) {
	cfg, _, err := parseStageFlags(t, "--min-rate", "0.3", "--legacy", "7", "--preset", "x",
		"--set", "strength.min_mutant_kill_rate=0.9", "--set", "weights.b=0.25", "--set", "preset=y")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinRate != 0.3 || cfg.Old != 7 || cfg.Preset != "y" || cfg.Strength.MinKill != 0.9 ||
		len(cfg.Strength.Tools) != 1 || cfg.Weights["a"] != 1 || cfg.Weights["b"] != 0.25 {
		t.Fatalf("config after flags and --set: %+v", cfg)
	}
}

// A --set key not in the config, a value of the wrong type or a malformed
// pair is a usage error (exit 2) that names the key.
func TestStageFlagsSetRejectsUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"strength.bogus=1", `"bogus"`},
		{"bogus=1", "min_rate"}, // lists the keys there are
		{"preset.x=1", "preset is not a mapping"},
		{"min_rate=abc", "min_rate"},
		{"novalue", "key=value"},
	} {
		_, _, err := parseStageFlags(t, "--set", tc.set)
		if !errors.Is(err, errUsage) || exitCode(context.Background(), err) != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want a usage error mentioning %s", tc.set, err, tc.want)
		}
	}
}
