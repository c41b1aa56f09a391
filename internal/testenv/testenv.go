// Package testenv locates the repository and the shared public datasets for
// tests. Missing datasets fail loudly in CI and skip with a message elsewhere.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot walks up from the working directory to the directory with go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Dataset returns the path of a file under ../shared/datasets (relative to
// the repository root). When it is missing the test fails if CI is set and
// is skipped otherwise.
func Dataset(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "..", "shared", "datasets", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("dataset %s missing (CI is set): %v", p, err)
		}
		t.Skipf("dataset %s not found; skipping (place the public sets in ../shared/datasets)", p)
	}
	return p
}

// Tools requires the named programs on PATH, as Dataset requires a
// dataset: a missing one fails the test when CI is set (scripts/setup.sh
// installs them) and skips it otherwise.
func Tools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed (CI is set; scripts/setup.sh installs it)", n)
			}
			t.Skipf("%s not installed; run scripts/setup.sh", n)
		}
	}
}
