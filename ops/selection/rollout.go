// Package selection makes a corpus model-relative: it judges the responses a
// training stack sampled from its policies (rollouts), then derives from those
// verdicts the capability-gap set, the feedback-recoverable set with its
// privileged context, success-rate strata, and per-sample rewards with group
// statistics.
package selection

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Error categories. Findings about single rollouts (a bad row, a failed
// extraction) are data; these wrap only conditions that stop a whole run.
// Config and input errors wrap the engine's categories so the CLI maps them
// to its exit codes.
var (
	ErrConfig = fmt.Errorf("selection: %w", engine.ErrConfig)
	ErrInput  = fmt.Errorf("selection: %w", engine.ErrInput)
	ErrVerify = errors.New("selection: verifier failed")
)

// Policy names used by default. Any string is accepted in a rollout table;
// the config says which policy plays the student and which the teacher.
const (
	PolicyStudent = "student"
	PolicyTeacher = "teacher"
)

// Rollout is one sampled response of one policy to one task, as a training
// stack exports it. The verdict fields are optional: when Status is empty the
// response is extracted and verified by the engine.
type Rollout struct {
	TaskID      string `json:"task_id" arrow:"task_id"`
	Policy      string `json:"policy" arrow:"policy"`
	SampleIndex int32  `json:"sample_index" arrow:"sample_index"`
	// Round is the feedback round: 0 is the first attempt, round r>0 was
	// sampled after the policy saw verifier feedback on round r-1.
	Round    int32  `json:"round" arrow:"round"`
	Response string `json:"response" arrow:"response"`

	// Optional verdict attached by the producer.
	Status       string  `json:"status,omitempty" arrow:"status"`
	FailureStage string  `json:"failure_stage,omitempty" arrow:"failure_stage"`
	Speedup      float64 `json:"speedup,omitempty" arrow:"speedup"`
	Exploit      bool    `json:"exploit,omitempty" arrow:"exploit"`
	// Feedback is the coarse verifier feedback the policy was shown after
	// this response, if the producer recorded it.
	Feedback string `json:"feedback,omitempty" arrow:"feedback"`
}

// CandidateID names a rollout's candidate in evidence rows. It is unique per
// (task, policy, round, sample) and readable in logs.
func (r *Rollout) CandidateID() string {
	return fmt.Sprintf("%s/%s/r%d/s%d", r.TaskID, r.Policy, r.Round, r.SampleIndex)
}

// HasVerdict reports whether the producer attached a verdict.
func (r *Rollout) HasVerdict() bool { return r.Status != "" || r.Exploit }

// MeasureSpeedup is the measurement name that carries a kernel's speedup over
// its reference. Kernel evidence and attached verdicts both use it.
const MeasureSpeedup = "speedup"

// checkRollout validates the identifying and verdict fields of one row and
// returns a short reason code plus detail when the row cannot be used.
func checkRollout(r *Rollout) (reason, detail string) {
	switch {
	case strings.TrimSpace(r.TaskID) == "":
		return "missing_field", "task_id is empty"
	case strings.TrimSpace(r.Policy) == "":
		return "missing_field", "policy is empty"
	case r.SampleIndex < 0:
		return "bad_field", fmt.Sprintf("sample_index %d is negative", r.SampleIndex)
	case r.Round < 0:
		return "bad_field", fmt.Sprintf("round %d is negative", r.Round)
	}
	if !r.HasVerdict() {
		return "", ""
	}
	switch r.Status {
	case engine.StatusPass, engine.StatusFail, engine.StatusUnjudged:
	case "":
		if !r.Exploit {
			return "bad_verdict", "status is empty"
		}
	default:
		return "bad_verdict", fmt.Sprintf("status %q is not pass|fail|unjudged", r.Status)
	}
	if !engine.IsKnownStage(r.FailureStage) {
		return "bad_verdict", fmt.Sprintf("failure_stage %q is not in the taxonomy", r.FailureStage)
	}
	if r.Status == engine.StatusPass && r.FailureStage != engine.StageNone && !r.Exploit {
		return "bad_verdict", fmt.Sprintf("status pass with failure_stage %q", r.FailureStage)
	}
	if r.Status == engine.StatusFail && r.FailureStage == engine.StageNone && !r.Exploit {
		return "bad_verdict", "status fail without failure_stage"
	}
	if r.Status == engine.StatusFail && engine.IsInfraStage(r.FailureStage) && !r.Exploit {
		return "bad_verdict", fmt.Sprintf("status fail with infrastructure stage %q (that is unjudged)", r.FailureStage)
	}
	if r.Status == engine.StatusUnjudged && r.FailureStage != engine.StageNone && !engine.IsInfraStage(r.FailureStage) {
		return "bad_verdict", fmt.Sprintf("status unjudged with candidate stage %q", r.FailureStage)
	}
	if r.Speedup < 0 {
		return "bad_verdict", fmt.Sprintf("speedup %g is negative", r.Speedup)
	}
	return "", ""
}

// attachedEvidence turns a producer's verdict into an evidence record. An
// exploit flag overrides the status: an exploit gate that fired is a fail at
// stage exploit whatever the producer's correctness check said.
func attachedEvidence(r *Rollout) engine.Evidence {
	ev := engine.Evidence{
		ItemID:       r.TaskID,
		CandidateID:  r.CandidateID(),
		Status:       r.Status,
		FailureStage: r.FailureStage,
		Cause:        r.Feedback,
		Provenance:   engine.EvidenceProvenance{Verifier: "attached"},
		Attempts:     1,
	}
	if r.Exploit {
		ev.Status, ev.FailureStage = engine.StatusFail, engine.StageExploit
		if ev.Cause == "" {
			ev.Cause = "exploit gate fired"
		}
	}
	if r.Speedup > 0 {
		ev.Measurements = append(ev.Measurements, engine.FloatM(MeasureSpeedup, r.Speedup))
	}
	return ev
}
