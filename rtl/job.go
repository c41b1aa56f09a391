package rtl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// jobOutcome is the result of one compile+simulate attempt.
type jobOutcome struct {
	Status      string
	Stage       string
	Cause       string
	Verdict     Verdict
	Wall        time.Duration
	CPU         time.Duration // the simulation's CPU time (0 when it did not run)
	CPUBudget   int           // the simulation's CPU budget in seconds
	OutputBytes int64
	Log         string
}

func infraOutcome(stage, cause string) jobOutcome {
	return jobOutcome{Status: engine.StatusUnjudged, Stage: stage, Cause: cause}
}

// outcomeFor turns a classified stage into an outcome: infra stages are
// unjudged, every other stage is the candidate's failure.
func outcomeFor(stage, cause, log string) jobOutcome {
	if engine.IsInfraStage(stage) {
		return jobOutcome{Status: engine.StatusUnjudged, Stage: stage, Cause: cause, Log: log}
	}
	return jobOutcome{Status: engine.StatusFail, Stage: stage, Cause: cause, Log: log}
}

// retryable infra stages are transient; the others (missing toolchain,
// corrupt payload, a failing reference) would fail the same way again.
func retryable(stage string) bool {
	return stage == engine.StageWorkerCrash || stage == engine.StageDiskFull
}

func newSecret() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the kernel RNG does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// fsStage maps a job-directory I/O error to an infra stage.
func fsStage(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return engine.StageDiskFull
	}
	return engine.StageWorkerCrash
}

// runBudget is the CPU budget of one simulation and how it was set (see
// Limits): the ceiling for a reference, the relative rule for a candidate.
type runBudget struct {
	CPUSeconds int
	Why        string // appended to a timeout's cause
}

// runJob compiles and simulates one candidate file under the contract's
// trusted harness in a fresh directory, with a fresh secret. It returns an
// error only when ctx is cancelled.
func (v *Verifier) runJob(ctx context.Context, c Contract, candidate string, expected int64, budget runBudget) (jobOutcome, error) {
	secret := newSecret()
	harness, err := c.TrustedHarness(secret)
	if err != nil {
		return infraOutcome(engine.StagePayloadCorrupt, "harness: "+err.Error()), nil
	}
	dir, err := os.MkdirTemp(v.cfg.TempDir, "crucible-rtl-*")
	if err != nil {
		return infraOutcome(fsStage(err), "job directory: "+err.Error()), nil
	}
	defer os.RemoveAll(dir)
	// The candidate is always compiled last: its `define/`timescale cannot
	// reach back into trusted text.
	files := []struct{ name, text string }{{"harness.sv", harness}, {"reference.sv", c.Reference()}, {"candidate.sv", candidate}}
	var names []string
	for _, f := range files {
		if f.name == "reference.sv" && f.text == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o600); err != nil {
			return infraOutcome(fsStage(err), "writing "+f.name+": "+err.Error()), nil
		}
		names = append(names, f.name)
	}
	redact := func(s string) string {
		s = strings.ReplaceAll(s, secret, "<secret>")
		return strings.ReplaceAll(s, dir, "<job>")
	}
	start := time.Now()
	lim := v.cfg.Limits
	lim.CPUSeconds = budget.CPUSeconds
	simTimeout := lim.simWallTimeout(budget.CPUSeconds)
	blim := lim
	blim.CPUSeconds = lim.CompileCPUSeconds
	build, err := runLimited(ctx, dir, blim, lim.CompileTimeout, v.sim.BuildArgs(c.HarnessTop(), names), v.hook("build"))
	if err != nil {
		return jobOutcome{}, err
	}
	if st, cause := classifyProcess(build, "build", blim, lim.CompileTimeout); st != "" {
		o := outcomeFor(st, cause, redact(build.Stderr.String()))
		o.Wall = time.Since(start)
		return o, nil
	}
	if build.ExitCode != 0 {
		log := redact(build.Stderr.String() + build.Stdout.String())
		st := classifyBuildFailure(log)
		o := outcomeFor(st, fmt.Sprintf("build exited %d: %s", build.ExitCode, firstErrorLine(log)), log)
		o.Wall = time.Since(start)
		return o, nil
	}
	run, err := runLimited(ctx, dir, lim, simTimeout, v.sim.RunArgs(c.HarnessTop()), v.hook("run"))
	if err != nil {
		return jobOutcome{}, err
	}
	wall := time.Since(start)
	stdout := run.Stdout.String()
	log := redact(tailString(stdout, 3000) + tailString(run.Stderr.String(), 1000))
	if st, cause := classifyProcess(run, "run", lim, simTimeout); st != "" {
		if st == engine.StageTimeout && budget.Why != "" {
			cause += " (" + budget.Why + ")"
		}
		outBytes := run.Stdout.Total()
		if run.TimedOut || run.OutputExceeded {
			// Where a killed process stood when it died is timing; keep the
			// verdict fields a function of the inputs: the head of its
			// output and the limit it hit.
			log = redact(truncate(stdout, 2500) + truncate(run.Stderr.String(), 1000))
			if run.OutputExceeded {
				outBytes = lim.OutputKillBytes
			}
		}
		o := outcomeFor(st, cause, log)
		o.Wall, o.OutputBytes, o.CPU, o.CPUBudget = wall, outBytes, run.CPU, budget.CPUSeconds
		return o, nil
	}
	vd := c.Judge([]byte(stdout), run.Stdout.Complete(), secret, expected)
	o := jobOutcome{Status: vd.Status, Stage: vd.Stage, Cause: vd.Cause, Verdict: vd, Wall: wall,
		CPU: run.CPU, CPUBudget: budget.CPUSeconds, OutputBytes: run.Stdout.Total(), Log: log}
	if !vd.Counted && run.ExitCode != 0 {
		o.Stage = engine.StageSimulate
		o.Cause = fmt.Sprintf("simulator exited %d: %s", run.ExitCode, firstErrorLine(redact(run.Stderr.String())))
	}
	return o, nil
}

func (v *Verifier) hook(phase string) func(int) {
	if v.onProcessStart == nil {
		return nil
	}
	return func(pid int) { v.onProcessStart(phase, pid) }
}

// firstErrorLine picks the most telling line of a tool's output.
func firstErrorLine(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "error") || strings.Contains(l, "sorry") {
			return truncate(strings.TrimSpace(l), 300)
		}
	}
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			return truncate(t, 300)
		}
	}
	return "(no output)"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
