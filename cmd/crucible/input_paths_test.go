package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// shardHashes is kind:sha256 of every shard a manifest lists, in order.
func shardHashes(t *testing.T, dir string) []string {
	t.Helper()
	m, err := engine.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range m.Shards {
		out = append(out, s.Kind+":"+s.SHA256)
	}
	return out
}

// splitCorpus writes the fixture corpus's lines as in/a.jsonl,
// in/sub/b.jsonl.gz and in/sub/c.jsonl.zst, plus files a walk must leave
// out (a text file, a hidden JSONL file of garbage, a hidden directory),
// and returns the three data files in walk order.
func splitCorpus(t *testing.T, dir, corpus string) (root string, files []string) {
	t.Helper()
	data, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	root = filepath.Join(dir, "in")
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.MkdirAll(filepath.Join(root, ".hidden"), 0o755)
	parts := [][]string{lines[:80], lines[80:150], lines[150:]}
	a := filepath.Join(root, "a.jsonl")
	os.WriteFile(a, []byte(strings.Join(parts[0], "")), 0o644)
	files = []string{a}
	for i, suffix := range []string{"gz", "zst"} {
		plain := filepath.Join(dir, "tmp-"+suffix, map[string]string{"gz": "b", "zst": "c"}[suffix]+".jsonl")
		os.MkdirAll(filepath.Dir(plain), 0o755)
		os.WriteFile(plain, []byte(strings.TrimSuffix(strings.Join(parts[i+1], ""), "\n")+"\n"), 0o644)
		c := testenv.CompressedCopies(t, plain)[suffix]
		dst := filepath.Join(root, "sub", filepath.Base(c))
		if err := os.Rename(c, dst); err != nil {
			t.Fatal(err)
		}
		files = append(files, dst)
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("not data"), 0o644)
	os.WriteFile(filepath.Join(root, ".partial.jsonl"), []byte("{garbage"), 0o644)
	os.WriteFile(filepath.Join(root, ".hidden", "x.jsonl"), []byte("{garbage"), 0o644)
	return root, files
}

// --in (dedup) and --corpus (decontam check) take files, quoted globs and
// directories in any number: a directory and globs give the same output
// shards (by sha256) as listing the files; a directory skips non-data and
// hidden files; a pattern matching nothing, a directory without data and a
// file reached twice are exit 3.
func TestDedupDecontamInputPaths(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	root, files := splitCorpus(t, dir, f.corpus)
	forms := map[string][]string{
		"files": files,
		"dir":   {root},
		"globs": {filepath.Join(root, "*.jsonl"), filepath.Join(root, "s?b", "*")},
		"mixed": {files[0], filepath.Join(root, "sub")},
	}
	if got, err := engine.ExpandDataPaths(forms["dir"]); err != nil || !slices.Equal(got, files) {
		t.Fatalf("directory expands to %v (%v), want %v", got, err, files)
	}
	var dedupWant, matchWant, purifyWant []string
	for _, name := range []string{"files", "dir", "globs", "mixed"} {
		o := DedupOptions{In: forms[name], IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, "d-"+name),
			Config: dedup.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &discard{}}
		if err := runDedup(context.Background(), o); err != nil {
			t.Fatalf("dedup --in %v: %v", forms[name], err)
		}
		c := purifyOpts(f, forms[name], filepath.Join(dir, "m-"+name), filepath.Join(dir, "p-"+name))
		if code := exitCode(context.Background(), runDecontamCheck(context.Background(), c)); code != exitFindings {
			t.Fatalf("decontam --corpus %v: exit %d", forms[name], code)
		}
		d, m, p := shardHashes(t, o.Out), shardHashes(t, c.Out), shardHashes(t, c.Purify)
		if dedupWant == nil {
			dedupWant, matchWant, purifyWant = d, m, p
			if len(d) == 0 || len(m) == 0 || len(p) < 2 {
				t.Fatalf("too few shards to compare: %v %v %v", d, m, p)
			}
			continue
		}
		if !slices.Equal(d, dedupWant) || !slices.Equal(m, matchWant) || !slices.Equal(p, purifyWant) {
			t.Errorf("%s: shards differ from listing the files:\n dedup %v\n  want %v\n matches %v\n  want %v\n purify %v\n  want %v",
				name, d, dedupWant, m, matchWant, p, purifyWant)
		}
	}
	// decontam index --in: a directory indexes the same rows as the files.
	for _, name := range []string{"files", "dir"} {
		var out strings.Builder
		io := DecontamIndexOptions{In: forms[name], Side: decontam.SideCorpus, IDField: "id", Fields: []string{"text"},
			Out: filepath.Join(dir, "ix-"+name), Name: "corpus", Config: decontam.DefaultConfig(), Stdout: &out}
		if err := runDecontamIndex(context.Background(), io); err != nil {
			t.Fatalf("decontam index --in %v: %v", forms[name], err)
		}
		if !strings.Contains(out.String(), ": 200 entries") {
			t.Errorf("decontam index --in %v: %s", forms[name], out.String())
		}
	}
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "readme.md"), []byte("x"), 0o644)
	for what, in := range map[string][]string{
		"no match":  {filepath.Join(dir, "nothing-*.jsonl")},
		"empty dir": {empty},
		"twice":     {root, files[1]},
		"missing":   {filepath.Join(dir, "absent.jsonl")},
	} {
		o := DedupOptions{In: in, IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, "bad"),
			Config: dedup.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &discard{}}
		err := runDedup(context.Background(), o)
		if code := exitCode(context.Background(), err); code != exitInput || !strings.Contains(err.Error(), "--in") {
			t.Errorf("dedup %s: exit %d (%v), want %d naming --in", what, code, err, exitInput)
		}
		c := purifyOpts(f, in, filepath.Join(dir, "bad-m"), "")
		err = runDecontamCheck(context.Background(), c)
		if code := exitCode(context.Background(), err); code != exitInput || !strings.Contains(err.Error(), "--corpus") {
			t.Errorf("decontam %s: exit %d (%v), want %d naming --corpus", what, code, err, exitInput)
		}
	}
}
