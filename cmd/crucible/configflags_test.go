package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	On      bool               `yaml:"on"`
	Skipped struct {
		A int `yaml:"a"`
	} `yaml:"skipped"`
}

func parseStageFlags(t *testing.T, args ...string) (*flagTestConfig, *pflag.FlagSet, error) {
	t.Helper()
	cfg := &flagTestConfig{Preset: "items", MinRate: 0.5, Weights: map[string]float64{"a": 1}, On: true}
	cfg.Strength.MinKill, cfg.Strength.Tools = 0.8, []string{"iverilog"}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	sf := bindStageFlags(fs, cfg, map[string]flagDoc{"old_name": {Name: "legacy", Help: "kept name"},
		"on": {Name: "no-on", Invert: true}, "skipped": {Skip: true}}).withConfigFile("config file")
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
		"strength-tools": "[iverilog]", "legacy": "0", "no-on": "false"} {
		f := fs.Lookup(name)
		if f == nil || f.DefValue != def {
			t.Errorf("flag --%s: %+v, want default %q", name, f, def)
		}
	}
	for _, name := range []string{"old-name", "weights", "hidden", "on", "skipped-a"} {
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

// The layers apply in one order whatever the command line's: defaults, the
// --config file, the flags given, then --set. A flag not given leaves the
// file's value; an inverted --no-X flag clears its field.
func TestStageFlagsLayerFileFlagsSet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cfg.yaml")
	os.WriteFile(file, []byte("preset: file\nmin_rate: 0.1\nold_name: 3\nstrength: {min_mutant_kill_rate: 0.7}\n"), 0o644)
	cfg, _, err := parseStageFlags(t, "--set", "old_name=9", "--min-rate", "0.3", "--config", file, "--no-on")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Preset != "file" || cfg.MinRate != 0.3 || cfg.Old != 9 || cfg.Strength.MinKill != 0.7 || cfg.On {
		t.Fatalf("layered config: %+v", cfg)
	}
	cfg, _, err = parseStageFlags(t, "--config", file)
	if err != nil || cfg.MinRate != 0.1 || !cfg.On || cfg.Strength.Tools[0] != "iverilog" || cfg.Weights["a"] != 1 {
		t.Fatalf("file alone: %+v, %v", cfg, err)
	}
	// A map in the file is the whole map, not entries added to the default.
	os.WriteFile(file, []byte("weights: {z: 2}\n"), 0o644)
	if cfg, _, err = parseStageFlags(t, "--config", file); err != nil || len(cfg.Weights) != 1 || cfg.Weights["z"] != 2 {
		t.Fatalf("file's map: %+v, %v", cfg.Weights, err)
	}
	os.WriteFile(file, []byte("bogus: 1\n"), 0o644)
	if _, _, err := parseStageFlags(t, "--config", file); exitCode(context.Background(), err) != exitUsage || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown key in --config: %v, want exit 2 naming it", err)
	}
}
