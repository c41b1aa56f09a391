package rtl

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// trustedResult is what the trusted run recorded.
type trustedResult struct {
	trace, samples string
	sampled        bool
	timescale      string
	in, out        []modulePort
}

// trustedJob runs the trusted harness with the reference only: the
// reference stands in the candidate's place too (as the DUT module, with
// the recorder inside), so the harness compares the reference with itself
// and the recorder logs the DUT's ports. Nothing untrusted is compiled.
func (v *Verifier) trustedJob(ctx context.Context, c Contract, dutRef string, budget runBudget) (trustedResult, jobOutcome, error) {
	var tr trustedResult
	traceFail := func(err error) jobOutcome {
		return jobOutcome{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: "trace: " + err.Error()}
	}
	secret := newSecret()
	harness, sampled, err := c.trustedRun(secret, v.sim.Name() == SimVerilator)
	if err != nil {
		return tr, infraOutcome(engine.StagePayloadCorrupt, "harness: "+err.Error()), nil
	}
	inst, in, out, err := instrumentedReference(dutRef, c.DUT(), v.sim.Name() == SimVerilator)
	if err != nil {
		return tr, infraOutcome(engine.StagePayloadCorrupt, "reference ports: "+err.Error()), nil
	}
	files := []simFile{{Name: "harness.sv", Text: harness, Compile: true}}
	if ref := c.Reference(); ref != "" {
		files = append(files, simFile{Name: "reference.sv", Text: ref, Compile: true})
	}
	files = append(files, simFile{Name: "dut.sv", Text: inst, Compile: true})
	r, err := v.runSim(ctx, simSpec{Top: c.HarnessTop(), Files: files, Budget: budget, Secret: secret,
		ReadBack: []string{traceFile, samplesFile}})
	if err != nil || r.Ended {
		return tr, r.Outcome, err
	}
	o := judgeHarnessRun(c, r, secret, 0, budget)
	if o.Status != engine.StatusPass {
		return tr, o, nil
	}
	ts, err := recorderTimescale(r.Stdout)
	if err != nil {
		return tr, r.outcome(traceFail(err), budget), nil
	}
	data, ok := r.Files[traceFile]
	if !ok {
		return tr, r.outcome(traceFail(fmt.Errorf("the recorder wrote no trace file")), budget), nil
	}
	tr = trustedResult{trace: string(data), timescale: ts, in: in, out: out}
	if s, ok := r.Files[samplesFile]; ok && sampled {
		tr.samples, tr.sampled = string(s), true
	}
	return tr, o, nil
}

// replayJob runs code (the candidate, or the reference in the self-check)
// alone under the replay driver of rt and compares the trace it leaves
// with the reference's. The simulation holds the driver and the candidate
// and nothing else: no harness, no reference, no secret, no reference
// outputs (the stimulus file has inputs only). The candidate's stdout is
// not read.
func (v *Verifier) replayJob(ctx context.Context, rt *refTrace, timescale, code, dut string, budget runBudget) (jobOutcome, error) {
	o, _, err := v.replayCompare(ctx, rt, timescale, code, dut, budget)
	return o, err
}

func (v *Verifier) replayCompare(ctx context.Context, rt *refTrace, timescale, code, dut string, budget runBudget) (jobOutcome, traceComparison, error) {
	none := traceComparison{FirstT: -1}
	top, driver, stimulus := replayDriver(rt, dut, timescale, newSecret()[:16], v.sim.PolledReplay())
	files := []simFile{{Name: "driver.sv", Text: driver, Compile: true}, {Name: candidateFileName, Text: code, Compile: true},
		{Name: stimulusFile, Text: stimulus}}
	r, err := v.runSim(ctx, simSpec{Top: top, Files: files, Budget: budget, ReadBack: []string{replayFile},
		Hide:       map[string]string{top: "<driver>"},
		BuildStage: func(log string) (string, string) { return classifyReplayBuild(log, dut) }})
	if err != nil || r.Ended {
		return r.Outcome, none, err
	}
	fail := func(stage, cause string) jobOutcome {
		return r.outcome(jobOutcome{Status: engine.StatusFail, Stage: stage, Cause: cause}, budget)
	}
	data, ok := r.Files[replayFile]
	if !ok {
		if r.ExitCode != 0 {
			return fail(engine.StageSimulate, fmt.Sprintf("simulator exited %d: %s", r.ExitCode, firstErrorLine(r.Stderr))), none, nil
		}
		return fail(engine.StageNoVerdict, "the replay left no trace"), none, nil
	}
	tr, err := parseTrace(data, 0, len(rt.Out))
	if err != nil {
		return fail(engine.StageNoVerdict, "the replay's trace is unreadable: "+err.Error()), none, nil
	}
	if !tr.HasEnd || tr.End != rt.End {
		if r.ExitCode != 0 {
			return fail(engine.StageSimulate, fmt.Sprintf("simulator exited %d: %s", r.ExitCode, firstErrorLine(r.Stderr))), none, nil
		}
		return fail(engine.StageNoVerdict, fmt.Sprintf("the replay did not run to the reference's end time %s", fmtFS(rt.End))), none, nil
	}
	if len(tr.Outputs) == 0 || !equalInts(widthsOf(tr.Outputs[0].Vals), rt.OutWidths) {
		return fail(engine.StageNoVerdict, "the replay recorded no outputs of the reference's widths"), none, nil
	}
	cmp := compareTraces(rt, tr.Outputs)
	vd := Verdict{Counted: true, Mismatches: cmp.Mismatches, Samples: cmp.Samples, SimTime: rt.End}
	o := r.outcome(jobOutcome{Verdict: vd}, budget)
	switch {
	case cmp.Samples == 0:
		o.Status, o.Stage, o.Cause = engine.StatusFail, engine.StageNoVerdict, "the trace has no samples to compare"
	case cmp.Mismatches > 0:
		var per []string
		for i, n := range cmp.PerOutput {
			if n > 0 {
				per = append(per, fmt.Sprintf("%s %d", rt.Out[i].Name, n))
			}
		}
		o.Status, o.Stage = engine.StatusFail, engine.StageMismatch
		o.Cause = fmt.Sprintf("%d mismatches in %d samples (per output: %s); first: %s", cmp.Mismatches, cmp.Samples,
			truncate(strings.Join(per, ", "), 200), cmp.First)
	default:
		o.Status = engine.StatusPass
	}
	return o, cmp, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
