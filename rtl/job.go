package rtl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// simFile is one file of a job directory; Compile puts it on the build's
// command line (in order), otherwise it is data the simulation reads.
type simFile struct {
	Name, Text string
	Compile    bool
}

// simSpec is one compile+simulate job.
type simSpec struct {
	Top      string
	Files    []simFile
	ReadBack []string // files read from the job directory after the run
	Budget   runBudget
	Secret   string            // redacted from logs
	Hide     map[string]string // further strings replaced in logs (a random driver name)
	// BuildStage names the stage of a failed build ("" cause: the first
	// error line); nil means classifyBuildFailure.
	BuildStage func(log string) (stage, cause string)
}

// simResult is what a job did. When Ended is false the run completed and
// Stdout, ExitCode and Files are what to judge; otherwise Outcome is the
// verdict already reached (a failed build, a killed run, an infra fault).
type simResult struct {
	Ended       bool
	Outcome     jobOutcome
	Stdout      string
	Complete    bool
	ExitCode    int
	Stderr      string
	Files       map[string][]byte
	Wall, CPU   time.Duration
	OutputBytes int64
	Log         string
}

// maxReadBack bounds a file read back from a job directory; the simulation
// cannot write more than FileSizeBytes anyway.
func (v *Verifier) maxReadBack() int64 { return v.cfg.Limits.FileSizeBytes }

// runSim writes the job's files into a fresh directory, builds and runs the
// simulation under the limits, and reads back the files asked for. It
// returns an error only when ctx is cancelled.
func (v *Verifier) runSim(ctx context.Context, spec simSpec) (simResult, error) {
	dir, err := os.MkdirTemp(v.cfg.TempDir, "crucible-rtl-*")
	if err != nil {
		return simResult{Ended: true, Outcome: infraOutcome(fsStage(err), "job directory: "+err.Error())}, nil
	}
	defer os.RemoveAll(dir)
	var names []string
	for _, f := range spec.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Text), 0o600); err != nil {
			return simResult{Ended: true, Outcome: infraOutcome(fsStage(err), "writing "+f.Name+": "+err.Error())}, nil
		}
		if f.Compile {
			names = append(names, f.Name)
		}
	}
	redact := func(s string) string {
		if spec.Secret != "" {
			s = strings.ReplaceAll(s, spec.Secret, "<secret>")
		}
		for from, to := range spec.Hide {
			s = strings.ReplaceAll(s, from, to)
		}
		return strings.ReplaceAll(s, dir, "<job>")
	}
	ended := func(o jobOutcome, start time.Time) (simResult, error) {
		o.Wall = time.Since(start)
		return simResult{Ended: true, Outcome: o}, nil
	}
	start := time.Now()
	budget := spec.Budget
	lim := v.cfg.Limits
	lim.CPUSeconds = budget.CPUSeconds
	simTimeout := lim.simWallTimeout(budget.CPUSeconds)
	blim := lim
	blim.CPUSeconds = lim.CompileCPUSeconds
	build, err := runLimited(ctx, dir, blim, lim.CompileTimeout, v.sim.BuildArgs(spec.Top, names), v.hook("build"))
	if err != nil {
		return simResult{}, err
	}
	if st, cause := classifyProcess(build, "build", blim, lim.CompileTimeout); st != "" {
		return ended(outcomeFor(st, cause, redact(build.Stderr.String())), start)
	}
	if build.ExitCode != 0 {
		log := redact(build.Stderr.String() + build.Stdout.String())
		classify := spec.BuildStage
		if classify == nil {
			classify = func(l string) (string, string) { return classifyBuildFailure(l), "" }
		}
		st, cause := classify(log)
		if cause == "" {
			cause = fmt.Sprintf("build exited %d: %s", build.ExitCode, firstErrorLine(log))
		}
		return ended(outcomeFor(st, cause, log), start)
	}
	run, err := runLimited(ctx, dir, lim, simTimeout, v.sim.RunArgs(spec.Top), v.hook("run"))
	if err != nil {
		return simResult{}, err
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
		return simResult{Ended: true, Outcome: o}, nil
	}
	r := simResult{Stdout: stdout, Complete: run.Stdout.Complete(), ExitCode: run.ExitCode,
		Stderr: redact(run.Stderr.String()), Files: map[string][]byte{}, Wall: wall, CPU: run.CPU,
		OutputBytes: run.Stdout.Total(), Log: log}
	for _, name := range spec.ReadBack {
		b, err := readCapped(filepath.Join(dir, name), v.maxReadBack())
		if err == nil {
			r.Files[name] = b
		}
	}
	return r, nil
}

// outcome fills the run fields of o from r.
func (r simResult) outcome(o jobOutcome, budget runBudget) jobOutcome {
	o.Wall, o.CPU, o.CPUBudget, o.OutputBytes = r.Wall, r.CPU, budget.CPUSeconds, r.OutputBytes
	if o.Log == "" {
		o.Log = r.Log
	}
	return o
}

func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", filepath.Base(path), max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// runHarnessJob compiles and simulates one candidate file under the
// contract's trusted harness (a self-checking harness run) with a fresh
// secret, and judges the harness's verdict line.
func (v *Verifier) runHarnessJob(ctx context.Context, c Contract, candidate string, expected int64, budget runBudget) (jobOutcome, error) {
	secret := newSecret()
	harness, err := c.TrustedHarness(secret)
	if err != nil {
		return infraOutcome(engine.StagePayloadCorrupt, "harness: "+err.Error()), nil
	}
	// The candidate is always compiled last: its `define/`timescale cannot
	// reach back into trusted text.
	files := []simFile{{Name: "harness.sv", Text: harness, Compile: true}}
	if ref := c.Reference(); ref != "" {
		files = append(files, simFile{Name: "reference.sv", Text: ref, Compile: true})
	}
	files = append(files, simFile{Name: candidateFileName, Text: candidate, Compile: true})
	r, err := v.runSim(ctx, simSpec{Top: c.HarnessTop(), Files: files, Budget: budget, Secret: secret})
	if err != nil || r.Ended {
		return r.Outcome, err
	}
	return judgeHarnessRun(c, r, secret, expected, budget), nil
}

// judgeHarnessRun reads a finished harness run's verdict line.
func judgeHarnessRun(c Contract, r simResult, secret string, expected int64, budget runBudget) jobOutcome {
	vd := c.Judge([]byte(r.Stdout), r.Complete, secret, expected)
	o := r.outcome(jobOutcome{Status: vd.Status, Stage: vd.Stage, Cause: vd.Cause, Verdict: vd}, budget)
	if !vd.Counted && r.ExitCode != 0 {
		o.Stage = engine.StageSimulate
		o.Cause = fmt.Sprintf("simulator exited %d: %s", r.ExitCode, firstErrorLine(r.Stderr))
	}
	return o
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
