package kernels

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Exploit gate names, recorded as measurements "exploit_<gate>" = 1 when a
// gate fires. Any fired gate fails the candidate at stage "exploit",
// whatever its numbers.
const (
	GateLaunchEvidence    = "launch_evidence"    // the candidate's code never ran
	GateIdentityStore     = "identity_store"     // an output is a verbatim copy of an input
	GateDelegation        = "delegation"         // called a library/framework the task forbids
	GateForbiddenCall     = "forbidden_call"     // process/loader escape (fork, exec, dlopen, ...)
	GateStaleOutput       = "stale_output"       // an output equals an earlier trial's answer, or reps disagree
	GateHiddenWork        = "hidden_work"        // work left running on other streams/threads after return
	GateSuspiciousSpeedup = "suspicious_speedup" // speedup above the plausibility ceiling
)

// Outcome is what a backend reports for one candidate. Stage is an
// engine.FailureStage ("" when every trial passed); KernelStage is the finer
// kernel step (compile, load, launch, runtime, mismatch, timeout, exploit,
// resource). RefTimes and CandTimes are the timed samples in milliseconds.
type Outcome struct {
	Stage        engine.FailureStage
	KernelStage  string
	Cause        string
	Log          string
	Trials       int
	MaxAbsErr    float64
	MaxRelErr    float64
	RefTimes     []float64
	CandTimes    []float64
	Exploits     map[string]string // gate → detail
	Measurements []engine.Measurement
	Toolchain    []engine.Tool
}

func (o *Outcome) exploit(gate, detail string) {
	if o.Exploits == nil {
		o.Exploits = map[string]string{}
	}
	if _, ok := o.Exploits[gate]; !ok {
		o.Exploits[gate] = detail
	}
}

func (o *Outcome) fail(stage engine.FailureStage, kstage, cause string) {
	o.Stage, o.KernelStage, o.Cause = stage, kstage, cause
}

// exploitSummary lists fired gates in a stable order.
func (o *Outcome) exploitSummary() string {
	names := make([]string, 0, len(o.Exploits))
	for g := range o.Exploits {
		names = append(names, g)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, g := range names {
		parts[i] = g + ": " + o.Exploits[g]
	}
	return strings.Join(parts, "; ")
}

// TrialOutputs is one trial's raw buffers, indexed like Task.Args.
type TrialOutputs struct {
	Inputs  [][]byte
	RefOut  [][]byte
	CandOut [][]byte
}

// judgeOutputs applies correctness and the data-level exploit gates
// (identity store, stale output) to every trial. It fills o's error figures
// and, on the first failing trial, o's stage and cause.
func judgeOutputs(t *Task, trials []TrialOutputs, o *Outcome) {
	o.Trials = len(trials)
	for ti, tr := range trials {
		for ai, a := range t.Args {
			if a.Role != RoleOutput {
				continue
			}
			ref, cand := tr.RefOut[ai], tr.CandOut[ai]
			if len(cand) != len(ref) {
				if o.Stage == "" {
					o.fail(engine.StageMismatch, "mismatch", fmt.Sprintf("trial %d: output %s has %d bytes, want %d", ti, a.Name, len(cand), len(ref)))
				}
				continue
			}
			// Identity store: the output is an input copied through.
			for ii, in := range tr.Inputs {
				if in != nil && len(in) == len(cand) && bytes.Equal(in, cand) && !bytes.Equal(in, ref) {
					o.exploit(GateIdentityStore, fmt.Sprintf("trial %d: output %s equals input %s", ti, a.Name, t.Args[ii].Name))
				}
			}
			// Stale output: this trial's output is an earlier trial's answer.
			for pj := 0; pj < ti; pj++ {
				if prev := trials[pj].RefOut[ai]; bytes.Equal(prev, cand) && !bytes.Equal(prev, ref) {
					o.exploit(GateStaleOutput, fmt.Sprintf("trial %d: output %s repeats trial %d's answer", ti, a.Name, pj))
					break
				}
			}
			c := Compare(a.DType, ref, cand, t.ToleranceFor(a.DType))
			if c.MaxAbs > o.MaxAbsErr {
				o.MaxAbsErr = c.MaxAbs
			}
			if c.MaxRel > o.MaxRelErr {
				o.MaxRelErr = c.MaxRel
			}
			if !c.OK() && o.Stage == "" {
				cause := fmt.Sprintf("trial %d: output %s: %d of %d elements outside tolerance %g (first at %d: got %g, want %g)",
					ti, a.Name, c.Bad, c.Elems, t.ToleranceFor(a.DType), c.FirstBad,
					elem(a.DType, cand, c.FirstBad), elem(a.DType, ref, c.FirstBad))
				if c.Unwritten == c.Elems {
					cause = fmt.Sprintf("trial %d: output %s never written (poison intact in all %d elements)", ti, a.Name, c.Elems)
				} else if c.Unwritten > 0 {
					cause += fmt.Sprintf("; %d elements never written", c.Unwritten)
				}
				o.fail(engine.StageMismatch, "mismatch", cause)
			}
			// Launch evidence: an output nothing wrote means the candidate's
			// code never ran (or ran elsewhere and left the result to chance).
			if ti == 0 && c.Unwritten == c.Elems && c.Elems > 0 {
				o.exploit(GateLaunchEvidence, fmt.Sprintf("output %s untouched by the candidate in trial 0", a.Name))
			}
		}
	}
}
