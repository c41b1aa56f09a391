package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestExpandDataPaths(t *testing.T) {
	dir := t.TempDir()
	touch := func(rel string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := touch("d/a.jsonl"), touch("d/x/b.parquet"), touch("d/x/y/c.JSONL.ZST")
	touch("d/x/notes.csv")
	touch("d/.tmp/z.jsonl")
	touch("d/.kept-00000.parquet.tmp-abc")
	star := touch("odd/we*rd.jsonl") // a literal name with a glob character
	dot := touch("g/.dot.jsonl")
	plain := touch("g/p.jsonl")
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"dir", []string{filepath.Join(dir, "d")}, []string{a, b, c}},
		{"order kept", []string{c, filepath.Join(dir, "d", "a.jsonl")}, []string{c, a}},
		{"glob of dirs", []string{filepath.Join(dir, "d", "*")}, []string{a, b, c}},
		{"literal star", []string{star}, []string{star}},
		{"glob skips dot files", []string{filepath.Join(dir, "g", "*.jsonl")}, []string{plain}},
		{"dot pattern", []string{filepath.Join(dir, "g", ".*.jsonl")}, []string{dot}},
		{"named file of any name", []string{filepath.Join(dir, "d/x/notes.csv")}, []string{filepath.Join(dir, "d/x/notes.csv")}},
	}
	for _, tc := range cases {
		got, err := ExpandDataPaths(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	for name, in := range map[string][]string{
		"twice":    {filepath.Join(dir, "d"), b},
		"empty":    {filepath.Join(dir, "empty")},
		"no match": {filepath.Join(dir, "none*.jsonl")},
		"missing":  {filepath.Join(dir, "missing.jsonl")},
	} {
		if _, err := ExpandDataPaths(in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
}

func TestClobberedInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	kinds := []string{"kept", "removed"}
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{filepath.Join(out, "kept-00000.parquet"), true},
		{filepath.Join(out, "manifest.json"), true},
		{filepath.Join(out, "kept.jsonl"), false},
		{filepath.Join(out, "sub", "kept-00000.parquet"), false},
		{filepath.Join(dir, "kept-00000.parquet"), false},
		{filepath.Join(out, "matches-00000.parquet"), false},
	} {
		if got := ClobberedInput(out, []string{"manifest.json"}, kinds, []string{tc.in}) != ""; got != tc.want {
			t.Errorf("%s: clobbered %v, want %v", tc.in, got, tc.want)
		}
	}
}
