// Package benchenv is what the bench/ programs share: finding the
// repository they run in and building the crucible binary they measure
// (the command users run, timed as a subprocess).
package benchenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RepoRoot is the nearest folder above the working directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above %s: run from inside the repository", dir)
		}
		dir = parent
	}
}

// BuildCrucible builds ./cmd/crucible of the repository into dir and
// returns the binary's path; the build's output goes to stderr.
func BuildCrucible(dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "crucible")
	build := exec.Command("go", "build", "-o", bin, "./cmd/crucible")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/crucible: %w", err)
	}
	return bin, nil
}
