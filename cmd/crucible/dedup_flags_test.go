package main

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crucible-data/crucible/engine"
)

// `crucible dedup`'s flags as they were before they were derived from
// dedupStageConfig: every name, type and default stays (scripts use them),
// and the only new flag is --set.
func TestDedupFlagsKeepNamesAndDefaults(t *testing.T) {
	want := map[string]struct{ typ, def string }{
		"in":                {"stringArray", "[]"},
		"id-field":          {"string", "id"},
		"text-field":        {"stringArray", "[]"},
		"out":               {"string", ""},
		"threshold":         {"float64", "0.8"},
		"ngram":             {"int", "5"},
		"num-perm":          {"int", "128"},
		"shingle":           {"string", "word"},
		"lang":              {"string", "auto"},
		"lowercase":         {"bool", "false"},
		"verify":            {"string", "exact"},
		"backend":           {"string", "disk"},
		"workers":           {"int", strconv.Itoa(runtime.GOMAXPROCS(0))},
		"seed":              {"uint64", "1"},
		"tmp":               {"string", ""},
		"on-duplicate-id":   {"string", "error"},
		"reuse-signatures":  {"bool", "false"},
		"keep-signatures":   {"bool", "false"},
		"force":             {"bool", "false"},
		"compression":       {"string", "zstd"},
		"compression-level": {"int", "0"},
		"set":               {"stringArray", "[]"},
	}
	c := newDedupCmd()
	var got []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		got = append(got, f.Name)
		w, ok := want[f.Name]
		switch {
		case !ok:
			t.Errorf("new flag --%s (%s, default %q)", f.Name, f.Value.Type(), f.DefValue)
		case f.Value.Type() != w.typ || f.DefValue != w.def:
			t.Errorf("--%s: %s, default %q; want %s, default %q", f.Name, f.Value.Type(), f.DefValue, w.typ, w.def)
		case f.Shorthand != "":
			t.Errorf("--%s has a short form -%s; it had none", f.Name, f.Shorthand)
		}
	})
	for name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("flag --%s is gone", name)
		}
	}
	var required []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if len(f.Annotations[cobra.BashCompOneRequiredFlag]) > 0 {
			required = append(required, f.Name)
		}
	})
	sort.Strings(required)
	if strings.Join(required, ",") != "in,out,text-field" {
		t.Errorf("required flags %v, want in, out, text-field", required)
	}
}

// --set KEY=VALUE sets the key of dedupStageConfig at that YAML path: the
// same config as the flag (the manifest's config hash equal, so the other
// form finds the output current and skips); --set goes after the flags;
// keys without a flag are reached; what the fingerprint leaves out stays
// out; a --lang alias given by --set is normalised as --lang's is.
func TestDedupSetOverridesConfig(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	writeSynthCorpus(t, in, 150)
	base := func(out string) []string {
		return []string{"dedup", "--no-progress", "--in", in, "--id-field", "id", "--text-field", "text", "--out", out}
	}
	hash := func(out string) string {
		t.Helper()
		m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		return m.ConfigHash
	}
	const work = "phases (wall s)"

	def, byFlag, bySet := filepath.Join(dir, "def"), filepath.Join(dir, "flag"), filepath.Join(dir, "set")
	expectRun(t, def, "ran", "threshold 0.80", base(def)...)
	expectRun(t, byFlag, "ran", "threshold 0.70", append(base(byFlag), "--threshold", "0.7")...)
	expectRun(t, bySet, "ran", "threshold 0.70", append(base(bySet), "--set", "dedup.threshold=0.7")...)
	if h := hash(bySet); h != hash(byFlag) || h == hash(def) {
		t.Errorf("config hash: --set dedup.threshold=0.7 %s, --threshold 0.7 %s, default %s; want the first two equal, not the default", h, hash(byFlag), hash(def))
	}
	// The other form into the same directory is the same config.
	expectRun(t, bySet, "skipped", work, append(base(bySet), "--threshold", "0.7")...)
	expectRun(t, byFlag, "skipped", work, append(base(byFlag), "--set", "dedup.threshold=0.7")...)
	// --set is applied after the flags.
	expectRun(t, byFlag, "skipped", work, append(base(byFlag), "--set", "dedup.threshold=0.7", "--threshold", "0.9")...)
	expectRun(t, byFlag, "ran", "threshold 0.90", append(base(byFlag), "--threshold", "0.7", "--set", "dedup.threshold=0.9")...)
	expectRun(t, byFlag, "skipped", work, append(base(byFlag), "--threshold", "0.9")...)

	// Workers and the spill directory stay out of the fingerprint however set.
	expectRun(t, def, "skipped", work, append(base(def), "--set", "dedup.workers=1", "--set", "dedup.temp_dir="+t.TempDir())...)
	// Keys of the command's own config and keys with no flag.
	expectRun(t, def, "ran", "dedup: 150 rows", append(base(def), "--set", "compression=none")...)
	expectRun(t, def, "skipped", work, append(base(def), "--compression", "none")...)
	expectRun(t, def, "ran", "dedup: 150 rows", append(base(def), "--set", "keep_signatures=true")...)
	expectRun(t, def, "skipped", work, append(base(def), "--keep-signatures")...)
	expectRun(t, def, "ran", "dedup: 150 rows", append(base(def), "--set", "dedup.strip_comments=false")...)
	expectRun(t, def, "skipped", work, append(base(def), "--set", "dedup.strip_comments=false")...)
	// A --lang alias: --set dedup.lang=cpp is --lang c.
	expectRun(t, def, "ran", "dedup: 150 rows", append(base(def), "--lang", "c")...)
	expectRun(t, def, "skipped", work, append(base(def), "--set", "dedup.lang=cpp")...)
	// The defaults again: the first run's config.
	first := hash(byFlag)
	expectRun(t, def, "ran", "threshold 0.80", base(def)...)
	if hash(def) == first {
		t.Error("the default config hashes as --threshold 0.9 did")
	}
}

// A --set key that is not in the config, or a bad value, is exit 2 before
// any work, naming the valid keys; a bad --lang (flag or --set) too.
func TestDedupSetRejectsUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	writeSynthCorpus(t, in, 20)
	for _, tc := range []struct {
		set  []string
		want []string
	}{
		{[]string{"--set", "threshold=0.7"}, []string{`no key "threshold" in the config`, "id_field", "dedup", "compression_level"}},
		{[]string{"--set", "dedup.nope=1"}, []string{`no key "nope" in dedup`, "threshold", "num_perm", "max_bucket_all"}},
		{[]string{"--set", "dedup.threshold=high"}, []string{"dedup.threshold=high"}},
		{[]string{"--set", "dedup.threshold"}, []string{"want key=value"}},
		{[]string{"--set", "dedup.lang=cobol"}, []string{`--lang "cobol"`}},
		{[]string{"--lang", "cobol"}, []string{`--lang "cobol"`}},
	} {
		out := filepath.Join(dir, "out")
		args := append([]string{"dedup", "--no-progress", "--in", in, "--id-field", "id", "--text-field", "text", "--out", out}, tc.set...)
		stdout, err := runCLI(t, args...)
		if code := exitCode(context.Background(), err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", tc.set, code, err, exitUsage, stdout)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v; want it to name %q", tc.set, err, w)
			}
		}
		if strings.Contains(stdout, "phases (wall s)") {
			t.Errorf("%v: refused run did work:\n%s", tc.set, stdout)
		}
	}
}

// The help's --set paragraph names every key of the config, so a field
// added to dedup.Config or dedupStageConfig without a word there fails.
func TestDedupHelpNamesEverySetKey(t *testing.T) {
	long := newDedupCmd().Long
	i := strings.Index(long, "--set KEY=VALUE")
	if i < 0 {
		t.Fatal("dedup's help has no --set paragraph")
	}
	para, _, _ := strings.Cut(long[i:], "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	for _, f := range configFields(reflect.ValueOf(defaultDedupStageConfig()), "", nil, func(string) bool { return false }) {
		key := f.path[strings.LastIndex(f.path, ".")+1:]
		if !strings.Contains(para, " "+key+",") && !strings.Contains(para, " "+key+")") && !strings.Contains(para, "("+key+",") {
			t.Errorf("the --set paragraph does not name %s:\n%s", f.path, para)
		}
	}
}
