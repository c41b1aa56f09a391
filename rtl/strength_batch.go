package rtl

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// The audit's batch replay.
//
// An audit judges some twenty known-wrong candidates per task, and almost
// all of them die on the first trace comparison. Run one by one that is
// twenty preprocessor runs, builds and simulations per task, which made the
// audit six times the cost of everything else an evolved item goes through.
// The audit's candidates are not hostile (the verifier made them from the
// trusted reference), so they need no isolation from each other: they are
// renamed apart, instantiated side by side under one replay driver, driven
// by the same recorded inputs and recorded into one trace file each, and
// each trace is compared with the reference's by the same compareTraces a
// candidate's replay goes through. A candidate whose trace mismatches is
// killed, exactly as its own replay would have killed it (the first thing
// judgeCandidate does is that replay). Every other candidate, and all of
// them when the batch is not clean (a build error, an exit status, a
// timeout, a trace that is missing, unreadable or short), goes the
// candidates' own path one by one, so the batch can only save work: it
// never passes, excuses or invalidates anything.

// batchSuffix makes audit candidate k's module names distinct.
func batchSuffix(k int) string { return fmt.Sprintf("_crucible_a%d", k) }

// renameModules renames every module src defines, and every use of those
// names, by appending suffix. It works on tokens, so names inside comments
// and strings stay; an escaped module name, or a `define body, is not
// renamed, and a design that needs either fails to build in the batch and
// is judged alone.
func renameModules(src, suffix string) (string, error) {
	toks, err := lexVerilog(src, lexOptions{skipDefines: true})
	if err != nil {
		return "", err
	}
	names := map[string]bool{}
	for i := 0; i+1 < len(toks); i++ {
		if (toks[i].isKeyword("module") || toks[i].isKeyword("macromodule")) && toks[i+1].Kind == tokIdent {
			if toks[i+1].Escaped {
				return "", fmt.Errorf("%w: escaped module name %q", ErrInput, toks[i+1].Text)
			}
			names[toks[i+1].Text] = true
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%w: no module", ErrInput)
	}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if t.Kind == tokIdent && !t.Escaped && names[t.Text] {
			b.WriteString(src[last:t.End])
			b.WriteString(suffix)
			last = t.End
		}
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// batchKills replays every audit candidate side by side (see above) and
// reports which ones the trace comparison kills. ok is false when the batch
// told nothing; the caller then judges every candidate alone.
func (v *Verifier) batchKills(ctx context.Context, item *engine.Item, c Contract, cands []StrengthCandidate) (killed []bool, ok bool, err error) {
	if len(cands) < 2 {
		return nil, false, nil
	}
	v.strengthInit()
	ref, err := v.referenceCheck(ctx, *item, c)
	if err != nil || !ref.OK || ref.rt == nil {
		return nil, false, err
	}
	var duts, files []string
	var srcs []simFile
	for k, cand := range cands {
		assembled, finding := c.Assemble(cand.Code)
		if finding != nil {
			return nil, false, nil
		}
		renamed, err := renameModules(assembled, batchSuffix(k))
		if err != nil {
			return nil, false, nil
		}
		duts = append(duts, c.DUT()+batchSuffix(k))
		files = append(files, fmt.Sprintf("crucible_replay_%d.txt", k))
		srcs = append(srcs, simFile{Name: fmt.Sprintf("audit_%d.sv", k), Text: renamed, Compile: true})
	}
	top, driver, stimulus := replayDriverN(ref.rt, duts, files, ref.Timescale, newSecret()[:16], v.sim.PolledReplay())
	simFiles := append([]simFile{{Name: "driver.sv", Text: driver, Compile: true}}, srcs...)
	simFiles = append(simFiles, simFile{Name: stimulusFile, Text: stimulus})
	budget := runBudget{CPUSeconds: len(cands) * v.cfg.Limits.CandidateCPUSeconds(ref.CPU()),
		Why: "the audit batch's budget: one candidate's for each"}
	select {
	case v.strength.sem <- struct{}{}: // one of the audits' worker slots
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	r, err := v.runSim(ctx, simSpec{Top: top, Files: simFiles, Budget: budget, ReadBack: files})
	<-v.strength.sem
	if err != nil || r.Ended || r.ExitCode != 0 {
		return nil, false, err
	}
	killed = make([]bool, len(cands))
	for k := range cands {
		data, found := r.Files[files[k]]
		if !found {
			return nil, false, nil
		}
		tr, err := parseTrace(data, 0, len(ref.rt.Out))
		if err != nil || !tr.HasEnd || tr.End != ref.rt.End || len(tr.Outputs) == 0 ||
			!equalInts(widthsOf(tr.Outputs[0].Vals), ref.rt.OutWidths) {
			return nil, false, nil
		}
		cmp := compareTraces(ref.rt, tr.Outputs)
		if cmp.Samples == 0 {
			return nil, false, nil
		}
		killed[k] = cmp.Mismatches > 0
	}
	return killed, true, nil
}

// judgeStrengthBatched is judgeStrength with the batch replay in front:
// the candidates it kills get a mismatch verdict, the rest are judged
// alone.
func (v *Verifier) judgeStrengthBatched(ctx context.Context, item engine.Item, c Contract, cands []StrengthCandidate) ([]engine.Evidence, error) {
	killed, ok, err := v.batchKills(ctx, &item, c, cands)
	if err != nil {
		return nil, err
	}
	if !ok {
		return v.judgeStrength(ctx, item, cands)
	}
	out := make([]engine.Evidence, len(cands))
	var rest []StrengthCandidate
	var at []int
	for i, cand := range cands {
		if killed[i] {
			out[i] = engine.Evidence{ItemID: item.ItemID, CandidateID: cand.Name, Status: engine.StatusFail,
				FailureStage: engine.StageMismatch, Cause: "its trace differs from the reference's (audit batch replay)"}
			continue
		}
		rest = append(rest, cand)
		at = append(at, i)
	}
	evs, err := v.judgeStrength(ctx, item, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = evs[j]
	}
	return out, nil
}
