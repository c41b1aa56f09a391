package kernels

import (
	"bytes"
	"fmt"
	"hash/maphash"
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
	Strength     *Strength `json:"-"` // the task's trivial-candidate audit (set by the trusted side, never by a worker)
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

// callJudge judges a run call by call, in the trusted process: every call
// of every side gets fresh inputs, and every candidate output is compared
// with the reference's output on the same inputs (warm-up calls included),
// so there is no "compared repetition" to special-case. It applies the
// data-level gates too (launch evidence, identity store, stale output).
type callJudge struct {
	t       *Task
	o       *Outcome
	calls   int
	seed    maphash.Seed
	prevRef []map[uint64]int // per argument: hash of an earlier call's reference output → call
}

func newCallJudge(t *Task, o *Outcome) *callJudge {
	return &callJudge{t: t, o: o, seed: maphash.MakeSeed(), prevRef: make([]map[uint64]int, len(t.Args))}
}

// add judges one call; it reports false once the run has failed, so the
// caller can stop early.
func (j *callJudge) add(inputs, ref, cand [][]byte) bool {
	t, o := j.t, j.o
	call := j.calls
	j.calls++
	for ai, a := range t.Args {
		if a.Role != RoleOutput {
			continue
		}
		r, c := ref[ai], cand[ai]
		if len(c) != len(r) {
			o.fail(engine.StageMismatch, "mismatch", fmt.Sprintf("call %d: output %s has %d bytes, want %d", call, a.Name, len(c), len(r)))
			return false
		}
		for ii, in := range inputs {
			if in != nil && len(in) == len(c) && bytes.Equal(in, c) && !bytes.Equal(in, r) {
				o.exploit(GateIdentityStore, fmt.Sprintf("call %d: output %s equals input %s", call, a.Name, t.Args[ii].Name))
			}
		}
		if j.prevRef[ai] == nil {
			j.prevRef[ai] = map[uint64]int{}
		}
		if pj, ok := j.prevRef[ai][maphash.Bytes(j.seed, c)]; ok && !bytes.Equal(c, r) {
			o.exploit(GateStaleOutput, fmt.Sprintf("call %d: output %s repeats call %d's answer", call, a.Name, pj))
		}
		j.prevRef[ai][maphash.Bytes(j.seed, r)] = call
		tol := t.ToleranceFor(a.DType, r)
		cmp := Compare(a.DType, r, c, tol)
		o.MaxAbsErr, o.MaxRelErr = max(o.MaxAbsErr, cmp.MaxAbs), max(o.MaxRelErr, cmp.MaxRel)
		if call == 0 && cmp.Unwritten == cmp.Elems && cmp.Elems > 0 {
			o.exploit(GateLaunchEvidence, fmt.Sprintf("output %s untouched by the candidate in its first call", a.Name))
		}
		if !cmp.OK() && o.Stage == "" {
			cause := fmt.Sprintf("call %d: output %s: %d of %d elements outside |c-r| <= %.3g + %.3g*|r| (first at %d: got %s, want %s)",
				call, a.Name, cmp.Bad, cmp.Elems, tol.Abs, tol.Rel, cmp.FirstBad,
				elemString(a.DType, c, cmp.FirstBad), elemString(a.DType, r, cmp.FirstBad))
			if cmp.Unwritten == cmp.Elems {
				cause = fmt.Sprintf("call %d: output %s never written (poison intact in all %d elements)", call, a.Name, cmp.Elems)
			} else if cmp.Unwritten > 0 {
				cause += fmt.Sprintf("; %d elements never written", cmp.Unwritten)
			}
			o.fail(engine.StageMismatch, "mismatch", cause)
		}
	}
	return o.Stage == "" && len(o.Exploits) == 0
}

func elemString(dtype string, b []byte, i int64) string {
	if !dtypes[dtype].isFP {
		return fmt.Sprint(intElem(dtype, b, i))
	}
	return fmt.Sprintf("%g", elem(dtype, b, i))
}
