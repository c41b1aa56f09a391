package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// commitState is what a rerun must leave alone to count as a skip: the
// manifest's bytes and the shards' modification times.
func commitState(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(data)
	for _, s := range m.Shards {
		st, err := os.Stat(filepath.Join(dir, s.Path))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(s.Path + st.ModTime().String())
	}
	return b.String()
}

// expectRun runs args and checks that it ran (want "ran": its summary is
// printed and the commit changed) or skipped (said so, commit untouched).
func expectRun(t *testing.T, out, want, summary string, args ...string) {
	t.Helper()
	before := ""
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		before = commitState(t, out)
	}
	stdout, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	after := commitState(t, out)
	switch want {
	case "ran":
		if !strings.Contains(stdout, summary) || after == before {
			t.Fatalf("%v: want a run (summary %q, a new commit); got changed=%v\n%s", args, summary, after != before, stdout)
		}
	case "skipped":
		if !strings.Contains(stdout, "up to date") || strings.Contains(stdout, summary) || after != before {
			t.Fatalf("%v: want a skip (said so, commit untouched); got changed=%v\n%s", args, after != before, stdout)
		}
	}
}

// `crucible ingest` is the ingest stage run through the pipeline runner: a
// second identical run skips; a changed flag, --set, a changed input file
// or --force runs it again.
func TestIngestSkipsWhenCurrent(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	row := `{"item_id":"i1","domain":"rtl","family":"counter","instruction":"Count up on every clock.","reference":"module m; endmodule","verifier":{"kind":"differential","top":"tb","harness":"module tb; endmodule"}}` + "\n"
	os.WriteFile(in, []byte(row+`{"item_id":"bad"}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	args := []string{"ingest", "--no-progress", "--out", out, in}
	expectRun(t, out, "ran", "ingested 2 rows: 1 items, 1 rejected", args...)
	expectRun(t, out, "skipped", "ingested", args...)
	expectRun(t, out, "ran", "ingested", append(args, "--preset", "verilog-eval")...)
	expectRun(t, out, "ran", "ingested 2 rows: 1 items", append(args, "--set", "preset=items")...)
	expectRun(t, out, "skipped", "ingested", args...) // --set preset=items is the default
	os.WriteFile(in, []byte(row), 0o644)
	expectRun(t, out, "ran", "ingested 1 rows: 1 items, 0 rejected", args...)
	expectRun(t, out, "ran", "ingested 1 rows", append(args, "--force")...)
}

// A task folder is fingerprinted by every file in it: a changed reference
// (not task.json) makes the next ingest run (issue 17: folders were left
// out of the manifest, so such a change was never noticed).
func TestIngestTaskDirChangeReruns(t *testing.T) {
	seeds := t.TempDir()
	task := filepath.Join(seeds, "counter")
	if err := os.CopyFS(task, os.DirFS(filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl", "counter_updown4_arst_n"))); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"ingest", "--no-progress", "--preset", "taskdir", "--out", out, seeds}
	expectRun(t, out, "ran", "ingested 1 rows: 1 items", args...)
	expectRun(t, out, "skipped", "ingested", args...)
	ents, _ := os.ReadDir(task)
	var other string
	for _, e := range ents {
		if !e.IsDir() && e.Name() != "task.json" {
			other = filepath.Join(task, e.Name())
			break
		}
	}
	data, _ := os.ReadFile(other)
	os.WriteFile(other, append(data, '\n'), 0o644)
	expectRun(t, out, "ran", "ingested 1 rows", args...)
}

// Usage errors exit 2 before anything is written: a --set key the ingest
// config does not have, and a named file the preset would pass over.
func TestIngestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "items.txt")
	os.WriteFile(txt, []byte("{}\n"), 0o644)
	jl := filepath.Join(dir, "items.jsonl")
	os.WriteFile(jl, []byte("{}\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"ingest", "--out", out, "--set", "presett=items", jl},
		{"ingest", "--out", out, txt},
		{"ingest", "--out", out, "--preset", "taskdir", jl},
	} {
		if stdout, err := runCLI(t, args...); exitCode(context.Background(), err) != exitUsage {
			t.Errorf("%v: %v, want exit %d\n%s", args, err, exitUsage, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); !os.IsNotExist(err) {
		t.Errorf("a refused ingest committed a manifest (%v)", err)
	}
}
