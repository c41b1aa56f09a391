package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// cli runs the crucible binary built for this measurement.
type cli struct{ bin string }

// match is the part of a decontam match row the figures read.
type match struct {
	CorpusID     string `arrow:"corpus_id"`
	BenchmarkID  string `arrow:"benchmark_id"`
	Method       string `arrow:"method"`
	Contaminated bool   `arrow:"contaminated"`
}

// checkResult is one `decontam check`: its time, matches and manifest counts.
type checkResult struct {
	elapsed
	matches []match
	counts  map[string]int64
}

// run runs the binary with extra environment; exit codes 0 (clean) and 6
// (contamination found) are results, anything else an error with stderr.
// CPU time is the child's and every descendant it waited for (simulators).
func (c *cli) run(env []string, args ...string) (elapsed, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	e := elapsed{wall: time.Since(start)}
	if cmd.ProcessState != nil {
		e.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		e.exit = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && e.exit == 6) {
		return e, fmt.Errorf("crucible %v: %w\n%s", args, err, tail(stderr.String(), 2000))
	}
	return e, nil
}

// check runs `decontam check --method METHOD` of corpus against bench into
// dir/name and reads back its matches and counts.
func (c *cli) check(dir, name, corpus, bench, method string, workers int) (checkResult, error) {
	out := filepath.Join(dir, name)
	e, err := c.run(nil, "decontam", "check", "--no-progress", "--method", method, "--workers", fmt.Sprint(workers),
		"--corpus", corpus, "--benchmark", bench, "--out", out)
	if err != nil {
		return checkResult{}, err
	}
	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		return checkResult{}, err
	}
	var paths []string
	for _, s := range m.Shards {
		if s.Kind == "matches" {
			paths = append(paths, filepath.Join(out, s.Path))
		}
	}
	ms, err := engine.ReadAll[match](paths...)
	if err != nil {
		return checkResult{}, err
	}
	return checkResult{elapsed: e, matches: ms, counts: m.Counts}, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
