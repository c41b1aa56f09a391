package selection

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Judged is one usable rollout with its verdict.
type Judged struct {
	Rollout  Rollout
	Answer   string // the extracted code; empty when extraction failed
	Evidence engine.Evidence
	Attached bool // the verdict came with the rollout
}

// Pass, Judged and Fail classify the verdict.
func (j *Judged) Pass() bool     { return j.Evidence.Status == engine.StatusPass }
func (j *Judged) Fail() bool     { return j.Evidence.Status == engine.StatusFail }
func (j *Judged) Unjudged() bool { return j.Evidence.Status == engine.StatusUnjudged }

// JudgeOptions configures Judge.
type JudgeOptions struct {
	Extractor *Extractor
	// Judges judge rollouts without an attached verdict, routed by their
	// item's domain. Nil makes them unjudged at stage toolchain_missing: no
	// verdict is better than a guess.
	Judges *engine.Judges
	// Items maps task_id to its item. Rollouts of tasks missing here are
	// rejected when they need verification, or when RequireItems is set.
	Items        map[string]engine.Item
	RequireItems bool
	BatchSize    int // candidates per Verify call; <=0 means 256
	// Verified, when set, is told after each verifier batch how many
	// candidates it held and how many go to the verifier in all.
	Verified func(n, total int)
	// RowLabel names row i in rejection details (e.g. "rollouts.jsonl row
	// 12"); nil labels rows "rollout row i".
	RowLabel func(i int) string
}

// Judge validates rollouts, extracts answers, verifies those without an
// attached verdict and returns the usable rollouts with their verdicts,
// sorted by (task, policy, round, sample), plus rejection rows for unusable
// ones. rows[i] is referred to as row i (0-based) in rejection details.
func Judge(ctx context.Context, rows []Rollout, opt JudgeOptions) ([]Judged, []engine.Rejection, error) {
	if opt.Extractor == nil {
		return nil, nil, fmt.Errorf("%w: Judge needs an extractor", ErrConfig)
	}
	batch := opt.BatchSize
	if batch <= 0 {
		batch = 256
	}
	var (
		out   []Judged
		rejs  []engine.Rejection
		seen  = map[string]int{}
		queue []int // indexes into out awaiting the verifier
	)
	label := opt.RowLabel
	if label == nil {
		label = func(i int) string { return fmt.Sprintf("rollout row %d", i) }
	}
	reject := func(i int, r *Rollout, reason, detail string) {
		rejs = append(rejs, engine.Rejection{ItemID: r.TaskID, Stage: "select", Gate: "rollout",
			Reason: reason, Detail: label(i) + ": " + detail})
	}
	for i := range rows {
		r := &rows[i]
		if reason, detail := checkRollout(r); reason != "" {
			reject(i, r, reason, detail)
			continue
		}
		id := r.CandidateID()
		if first, dup := seen[id]; dup {
			reject(i, r, "duplicate_rollout", "same task/policy/round/sample as "+label(first))
			continue
		}
		seen[id] = i
		_, known := opt.Items[r.TaskID]
		if !known && (opt.RequireItems || !r.HasVerdict()) {
			reject(i, r, "unknown_task", fmt.Sprintf("task_id %q is not among the items", r.TaskID))
			continue
		}
		j := Judged{Rollout: *r}
		switch {
		case r.HasVerdict():
			j.Evidence, j.Attached = attachedEvidence(r), true
			// The answer is informative only (kept trajectories); the
			// attached verdict stands even when nothing extracts.
			j.Answer, _ = opt.Extractor.Extract(r.Response)
		default:
			ans, err := opt.Extractor.Extract(r.Response)
			if err != nil {
				j.Evidence = engine.Evidence{ItemID: r.TaskID, CandidateID: id, Status: engine.StatusFail,
					FailureStage: engine.StageExtract, Cause: err.Error(),
					Provenance: engine.EvidenceProvenance{Verifier: "selection/extract"}, Attempts: 1}
			} else {
				j.Answer = ans
				queue = append(queue, len(out))
			}
		}
		out = append(out, j)
	}
	if err := verifyQueued(ctx, out, queue, opt, batch); err != nil {
		return nil, nil, err
	}
	sort.SliceStable(out, func(a, b int) bool { return lessRollout(&out[a].Rollout, &out[b].Rollout) })
	return out, rejs, nil
}

func verifyQueued(ctx context.Context, out []Judged, queue []int, opt JudgeOptions, batch int) error {
	if opt.Judges == nil {
		for _, k := range queue {
			r := &out[k].Rollout
			out[k].Evidence = engine.Evidence{ItemID: r.TaskID, CandidateID: r.CandidateID(),
				Status: engine.StatusUnjudged, FailureStage: engine.StageToolchainMissing,
				Cause: "no verifier configured for rollouts without an attached verdict"}
		}
		return nil
	}
	for start := 0; start < len(queue); start += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+batch, len(queue))
		cands := make([]engine.Candidate, 0, end-start)
		for _, k := range queue[start:end] {
			r := &out[k].Rollout
			cands = append(cands, engine.Candidate{ItemID: r.TaskID, CandidateID: r.CandidateID(), Code: out[k].Answer})
		}
		evs, err := opt.Judges.JudgeAll(ctx, opt.Items, cands)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrVerify, err)
		}
		for i, k := range queue[start:end] {
			if evs[i].CandidateID != "" && evs[i].CandidateID != cands[i].CandidateID {
				return fmt.Errorf("%w: evidence %d is for candidate %q, expected %q", ErrVerify, i, evs[i].CandidateID, cands[i].CandidateID)
			}
			out[k].Evidence = evs[i]
			out[k].Evidence.ItemID, out[k].Evidence.CandidateID = cands[i].ItemID, cands[i].CandidateID
		}
		if opt.Verified != nil {
			opt.Verified(len(cands), len(queue))
		}
	}
	return nil
}

func lessRollout(a, b *Rollout) bool {
	if a.TaskID != b.TaskID {
		return a.TaskID < b.TaskID
	}
	if a.Policy != b.Policy {
		return a.Policy < b.Policy
	}
	if a.Round != b.Round {
		return a.Round < b.Round
	}
	return a.SampleIndex < b.SampleIndex
}

// CoarseFeedback is the short verifier feedback a policy sees after a failed
// response: a fixed phrase per failure stage, plus the first line of the
// cause only for build failures (a compiler message says nothing about the
// expected behaviour). Simulation causes can quote expected values, so they
// never appear. A producer-recorded Feedback wins.
func CoarseFeedback(j *Judged) string {
	if j.Rollout.Feedback != "" {
		return j.Rollout.Feedback
	}
	ev := &j.Evidence
	phrase, ok := stagePhrases[ev.FailureStage]
	if !ok {
		phrase = "failed at " + ev.FailureStage
	}
	switch ev.FailureStage {
	case engine.StageExtract, engine.StageStatic, engine.StageCompile, engine.StageElaborate:
		cause, _, _ := strings.Cut(strings.TrimSpace(ev.Cause), "\n")
		if len(cause) > 200 {
			cause = cause[:200] + "..."
		}
		if cause != "" {
			return phrase + ": " + cause
		}
	}
	return phrase
}

var stagePhrases = map[string]string{
	engine.StageExtract:     "no code block found in the response",
	engine.StageStatic:      "rejected by static checks",
	engine.StageCompile:     "compilation failed",
	engine.StageElaborate:   "elaboration or linking failed",
	engine.StageSimulate:    "crashed while running",
	engine.StageTimeout:     "timed out",
	engine.StageResource:    "exceeded a resource limit",
	engine.StageMismatch:    "produced wrong outputs",
	engine.StageNoVerdict:   "ran without producing a passing verdict",
	engine.StageExploit:     "tried to game the checker",
	engine.StagePerformance: "correct but too slow",
}
