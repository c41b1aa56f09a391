package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crucible-data/crucible/decontam"
)

// flagWant is a flag as the command had it before its matching flags were
// derived from decontam.Config: type, default, required mark.
type flagWant struct {
	typ, def string
	required bool
}

// decontamMatchFlags are the decontam.Config flags 'decontam index' and
// 'decontam check' had, with their defaults.
var decontamMatchFlags = map[string]flagWant{
	"ngram":             {"int", "13", false},
	"min-tokens":        {"int", "8", false},
	"threshold":         {"float64", "0.5", false},
	"report-min":        {"float64", "0.2", false},
	"minhash-threshold": {"float64", "0.7", false},
	"num-perm":          {"int", "128", false},
	"max-doc-freq":      {"float64", "0.1", false},
	"lang":              {"string", "auto", false},
}

func withMatchFlags(m map[string]flagWant) map[string]flagWant {
	for k, v := range decontamMatchFlags {
		m[k] = v
	}
	return m
}

// requireFlags: c has exactly the flags of want plus --set (a stringArray,
// empty), each with its type, default and required mark.
func requireFlags(t *testing.T, c *cobra.Command, want map[string]flagWant) {
	t.Helper()
	want["set"] = flagWant{"stringArray", "[]", false}
	var got []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		got = append(got, f.Name)
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("%s: new flag --%s", c.Name(), f.Name)
			return
		}
		if f.Value.Type() != w.typ || f.DefValue != w.def {
			t.Errorf("%s --%s: %s default %q, want %s default %q", c.Name(), f.Name, f.Value.Type(), f.DefValue, w.typ, w.def)
		}
		if req := len(f.Annotations[cobra.BashCompOneRequiredFlag]) > 0; req != w.required {
			t.Errorf("%s --%s: required %v, want %v", c.Name(), f.Name, req, w.required)
		}
		if f.Shorthand != "" {
			t.Errorf("%s --%s: short form -%s, want none", c.Name(), f.Name, f.Shorthand)
		}
	})
	for name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("%s: flag --%s is gone", c.Name(), name)
		}
	}
}

// The flags of check, index and rescore are the ones they had (names,
// types, defaults, required marks), plus --set.
func TestDecontamFlagsKept(t *testing.T) {
	workers := fmt.Sprint(runtime.GOMAXPROCS(0))
	requireFlags(t, newDecontamCheckCmd(), withMatchFlags(map[string]flagWant{
		"corpus":            {"stringArray", "[]", false},
		"corpus-index":      {"string", "", false},
		"corpus-id-field":   {"string", "item_id|id", false},
		"corpus-field":      {"stringArray", "[]", false},
		"benchmark":         {"stringArray", "[]", true},
		"id-field":          {"string", "id", false},
		"field":             {"stringArray", "[]", false},
		"out":               {"string", "", true},
		"purify":            {"string", "", false},
		"workers":           {"int", workers, false},
		"method":            {"stringSlice", "[auto]", false},
		"force":             {"bool", "false", false},
		"compression":       {"string", "zstd", false},
		"compression-level": {"int", "0", false},
	}))
	requireFlags(t, newDecontamIndexCmd(), withMatchFlags(map[string]flagWant{
		"in":       {"stringArray", "[]", true},
		"side":     {"string", "benchmark", false},
		"name":     {"string", "", false},
		"id-field": {"string", "", false},
		"field":    {"stringArray", "[]", false},
		"out":      {"string", "", true},
		"force":    {"bool", "false", false},
		"method":   {"stringSlice", "[auto]", false},
		"workers":  {"int", workers, false},
	}))
	requireFlags(t, newDecontamRescoreCmd(), map[string]flagWant{
		"threshold": {"float64", "0", false}, // required, checked by the command (exit 2)
		"out":       {"string", "", false},
		"force":     {"bool", "false", false},
	})
}

// --set threshold=0.7 is --threshold 0.7: the same config hash, so the
// --set run finds the flag run's output current and skips; --set of a key
// with no flag (shingle_n) changes the match config and reruns.
func TestDecontamCheckSetOverrides(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	out := filepath.Join(dir, "m")
	args := []string{"decontam", "check", "--corpus", f.corpus, "--corpus-id-field", "id", "--corpus-field", "text", "--benchmark", f.bench,
		"--id-field", "id", "--field", "prompt", "--field", "ref", "--out", out, "--no-progress", "--method", "lexical"}
	var last error
	run := func(extra ...string) (string, int) {
		t.Helper()
		stdout, err := runCLI(t, append(slices.Clone(args), extra...)...)
		last = err
		return stdout, exitCode(context.Background(), err)
	}
	const skip = "decontam: up to date"
	if stdout, code := run("--threshold", "0.7"); code != exitFindings || strings.Contains(stdout, skip) {
		t.Fatalf("--threshold 0.7: exit %d\n%s", code, stdout)
	}
	// The flag reached the config the check ran with.
	if !strings.Contains(last.Error(), "≥ 0.70") {
		t.Errorf("--threshold 0.7: %v, want contamination at ≥ 0.70", last)
	}
	m0 := readManifest(t, out)
	s0 := stateOf(t, out)
	if stdout, code := run("--set", "threshold=0.7"); code != exitFindings || !strings.Contains(stdout, skip) || !s0.untouched(t, out) {
		t.Errorf("--set threshold=0.7 after --threshold 0.7: exit %d, want %d and skipped, output untouched:\n%s", code, exitFindings, stdout)
	}
	if !strings.Contains(last.Error(), "≥ 0.70") {
		t.Errorf("--set threshold=0.7: %v, want contamination at ≥ 0.70", last)
	}
	// --set comes after the flags: --threshold 0.9 --set threshold=0.7 is 0.7.
	if stdout, code := run("--threshold", "0.9", "--set", "threshold=0.7"); !strings.Contains(stdout, skip) || code != exitFindings {
		t.Errorf("--threshold 0.9 --set threshold=0.7: exit %d, want skipped (0.7 wins):\n%s", code, stdout)
	}
	if stdout, code := run("--set", "threshold=0.9"); strings.Contains(stdout, skip) || code != exitFindings {
		t.Errorf("--set threshold=0.9: exit %d, want a rerun:\n%s", code, stdout)
	}
	if m := readManifest(t, out); m.ConfigHash == m0.ConfigHash {
		t.Errorf("--set threshold=0.9: config hash %s unchanged from 0.7's", m.ConfigHash)
	}
	if stdout, _ := run("--threshold", "0.7", "--set", "shingle_n=4"); strings.Contains(stdout, skip) {
		t.Errorf("--set shingle_n=4: skipped, want a rerun (a changed match config):\n%s", stdout)
	}
	if m := readManifest(t, out); m.ConfigHash == m0.ConfigHash {
		t.Errorf("--set shingle_n=4: config hash unchanged")
	}
	// Back to the first config: its hash again.
	run("--threshold", "0.7")
	if m := readManifest(t, out); m.ConfigHash != m0.ConfigHash {
		t.Errorf("--threshold 0.7 again: config hash %s, want the first run's %s", m.ConfigHash, m0.ConfigHash)
	}
}

// An unknown --set key is exit 2 naming the valid keys; so is a value of
// the wrong type; the config's own validation still applies to --set.
func TestDecontamSetRejects(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	check := []string{"decontam", "check", "--corpus", f.corpus, "--corpus-id-field", "id", "--corpus-field", "text", "--benchmark", f.bench,
		"--out", filepath.Join(dir, "m"), "--no-progress", "--method", "lexical"}
	index := []string{"decontam", "index", "--in", f.bench, "--out", filepath.Join(dir, "ix"), "--no-progress"}
	rescore := []string{"decontam", "rescore", dir, "--threshold", "0.9"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{append(slices.Clone(check), "--set", "bogus=1"), []string{`"bogus"`, "threshold", "ngram", "shingle_n", "max_doc_freq"}},
		{append(slices.Clone(check), "--set", "ngram=many"), []string{"ngram"}},
		{append(slices.Clone(check), "--set", "ngram=1"), []string{"ngram=1"}},
		{append(slices.Clone(index), "--set", "bogus=1"), []string{`"bogus"`, "threshold", "seed", "memory_budget_bytes"}},
		{append(slices.Clone(rescore), "--set", "bogus=1"), []string{`"bogus"`, "threshold", "compression", "compression_level"}},
		{append(slices.Clone(rescore), "--set", "compression=lz4"), []string{"lz4"}},
		{[]string{"decontam", "rescore", dir}, []string{"--threshold is required"}},
	} {
		stdout, err := runCLI(t, tc.args...)
		if code := exitCode(context.Background(), err); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%v)\n%s", tc.args[1:], code, err, stdout)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.args[1:], err, w)
			}
		}
	}
}

// decontam index: --set reaches the persisted index's config, a key with a
// flag as its flag does and one without a flag too.
func TestDecontamIndexSet(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	build := func(name string, extra ...string) decontam.Config {
		t.Helper()
		out := filepath.Join(dir, name)
		args := append([]string{"decontam", "index", "--in", f.bench, "--out", out, "--no-progress"}, extra...)
		if stdout, err := runCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, stdout)
		}
		ix, err := decontam.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		return ix.Meta.Config
	}
	byFlag := build("a", "--ngram", "9", "--max-doc-freq", "0.5")
	bySet := build("b", "--set", "ngram=9", "--set", "max_doc_freq=0.5")
	if byFlag.NGram != 9 || byFlag.MaxDocFreq != 0.5 || byFlag != bySet {
		t.Errorf("index config by flags %+v, by --set %+v; want both ngram 9, max_doc_freq 0.5", byFlag, bySet)
	}
	if c := build("c", "--set", "shingle_n=4"); c.ShingleN != 4 {
		t.Errorf("--set shingle_n=4: index config shingle_n %d", c.ShingleN)
	}
}

// decontam rescore: --set threshold=0.9 is --threshold 0.9 (the flag run's
// output is current); --set compression=snappy changes the fingerprint.
func TestDecontamRescoreSet(t *testing.T) {
	_, check, out, rescore := newRescoreRun(t)
	const skip = "decontam_rescore: up to date"
	if stdout, code := rescore("--threshold", "0.9"); code != exitFindings || strings.Contains(stdout, skip) {
		t.Fatalf("--threshold 0.9: exit %d\n%s", code, stdout)
	}
	r0 := stateOf(t, out)
	if stdout, code := rescore("--set", "threshold=0.9"); code != exitFindings || !strings.Contains(stdout, skip) || !r0.untouched(t, out) {
		t.Errorf("--set threshold=0.9 after --threshold 0.9: exit %d, want %d and skipped, output untouched:\n%s", code, exitFindings, stdout)
	}
	if stdout, code := rescore("--threshold", "0.9", "--set", "compression=snappy"); code != exitFindings || strings.Contains(stdout, skip) || r0.untouched(t, out) {
		t.Errorf("--set compression=snappy: exit %d, want rescored:\n%s", code, stdout)
	}
	// Without --out the threshold from --set decides the exit too.
	if _, err := runCLI(t, "decontam", "rescore", check, "--set", "threshold=1.5"); exitCode(context.Background(), err) != 2 {
		t.Errorf("--set threshold=1.5: %v, want exit 2", err)
	}
}
