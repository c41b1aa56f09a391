package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// A command's manifest records every input it read: a task folder as its
// files (issue 17: task directories were dropped silently, so a changed
// reference never made the output stale), and an input it cannot hash is an
// error, not a ref left out.
func TestFileRefsRecordFoldersAndRefuseUnreadable(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task")
	os.MkdirAll(filepath.Join(task, "tb"), 0o755)
	for _, f := range []string{"task.json", "reference.sv", "tb/testbench.sv", ".hidden"} {
		os.WriteFile(filepath.Join(task, f), []byte(f), 0o644)
	}
	file := filepath.Join(dir, "items.jsonl")
	os.WriteFile(file, []byte("{}\n"), 0o644)
	refs, err := fileRefs([]string{task, file})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		if r.SHA256 == "" {
			t.Errorf("%s: no hash", r.Path)
		}
		got = append(got, r.Path)
	}
	want := []string{filepath.Join(task, "reference.sv"), filepath.Join(task, "task.json"), filepath.Join(task, "tb/testbench.sv"), file}
	if len(got) != len(want) {
		t.Fatalf("refs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("refs %v, want %v", got, want)
		}
	}
	if _, err := fileRefs([]string{filepath.Join(dir, "missing.jsonl")}); !errors.Is(err, engine.ErrInput) {
		t.Fatalf("missing input: err = %v, want ErrInput", err)
	}
}
