package selection

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Task classes of the capability-gap filter.
const (
	ClassGap           = "gap"            // student pass@k = 0, a teacher sample verified: kept
	ClassStudentSolves = "student_solves" // student pass@k > 0: no gap
	ClassUncovered     = "uncovered"      // student 0, teacher judged 0 of its samples
	ClassUndetermined  = "undetermined"   // not enough judged samples to decide
)

// TaskSelection is one task's model-relative record. Gap rows carry the
// first verified teacher trajectory in full.
type TaskSelection struct {
	TaskID string `json:"task_id" arrow:"task_id"`
	Class  string `json:"class" arrow:"class"`
	Reason string `json:"reason" arrow:"reason"`
	K      int32  `json:"k" arrow:"k"`

	StudentSamples  int32   `json:"student_samples" arrow:"student_samples"`
	StudentJudged   int32   `json:"student_judged" arrow:"student_judged"`
	StudentPassed   int32   `json:"student_passed" arrow:"student_passed"`
	StudentExcluded int32   `json:"student_excluded" arrow:"student_excluded"` // unjudged, left out
	StudentPassAtK  float64 `json:"student_pass_at_k" arrow:"student_pass_at_k"`
	StudentAvgAtK   float64 `json:"student_avg_at_k" arrow:"student_avg_at_k"`

	TeacherSamples  int32   `json:"teacher_samples" arrow:"teacher_samples"`
	TeacherJudged   int32   `json:"teacher_judged" arrow:"teacher_judged"`
	TeacherPassed   int32   `json:"teacher_passed" arrow:"teacher_passed"`
	TeacherExcluded int32   `json:"teacher_excluded" arrow:"teacher_excluded"`
	TeacherPassAtK  float64 `json:"teacher_pass_at_k" arrow:"teacher_pass_at_k"`
	TeacherAvgAtK   float64 `json:"teacher_avg_at_k" arrow:"teacher_avg_at_k"`

	// Success rate of the strata policy at round 0 (judged samples only);
	// Stratum is empty when none was judged.
	SuccessRate float64 `json:"success_rate" arrow:"success_rate"`
	Stratum     string  `json:"stratum" arrow:"stratum"`

	// The first verified teacher trajectory (lowest sample index at round 0).
	TeacherCandidateID string `json:"teacher_candidate_id,omitempty" arrow:"teacher_candidate_id"`
	TeacherSample      int32  `json:"teacher_sample" arrow:"teacher_sample"`
	TeacherResponse    string `json:"teacher_response,omitempty" arrow:"teacher_response"`
	TeacherAnswer      string `json:"teacher_answer,omitempty" arrow:"teacher_answer"`
}

// FeedbackTurn is one failed attempt shown as privileged context.
type FeedbackTurn struct {
	Round        int32  `json:"round" arrow:"round"`
	SampleIndex  int32  `json:"sample_index" arrow:"sample_index"`
	Response     string `json:"response" arrow:"response"`
	FailureStage string `json:"failure_stage" arrow:"failure_stage"`
	Feedback     string `json:"feedback" arrow:"feedback"`
}

// Recoverable is a task the policy failed at round 0 and solved after
// feedback, with the privileged context for self-distillation: the failed
// responses and their coarse feedback before the first success. The
// successful response is deliberately absent.
type Recoverable struct {
	TaskID       string         `json:"task_id" arrow:"task_id"`
	Policy       string         `json:"policy" arrow:"policy"`
	SolvedRound  int32          `json:"solved_round" arrow:"solved_round"`
	SolvedSample int32          `json:"solved_sample" arrow:"solved_sample"`
	Context      []FeedbackTurn `json:"context" arrow:"context"`
	ContextText  string         `json:"context_text" arrow:"context_text"`
}

// Report counts what Select saw and decided.
type Report struct {
	Rollouts, Rejected, Attached, Verified, ExtractFailed int
	Pass, Fail, Unjudged                                  int
	Tasks                                                 int
	Classes                                               map[string]int
	StudentExcluded, TeacherExcluded                      int // unjudged samples excluded from pass@k/avg@k
	Recoverable, RecoverableNoContext                     int
	Strata                                                map[string]int
	Sampled                                               int
}

// Result is everything Select produces. Tasks is sorted by task_id; Gap
// and Uncovered are its rows of those classes.
type Result struct {
	Judged       []Judged
	Evidence     []engine.Evidence
	Rejections   []engine.Rejection
	Tasks        []TaskSelection
	Gap          []TaskSelection
	Uncovered    []TaskSelection
	Recoverable  []Recoverable
	Rewards      []RewardRow
	StrataSample []StrataPick
	Report       Report
}

// Options are Select's collaborators.
type Options struct {
	Judges   *engine.Judges
	Items    []engine.Item
	Verified func(n, total int) // progress: see JudgeOptions.Verified
	RowLabel func(i int) string // see JudgeOptions.RowLabel
}

// Select judges rollouts and derives every model-relative output.
func Select(ctx context.Context, cfg Config, rows []Rollout, opt Options) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	x, err := NewExtractor(cfg.Extract)
	if err != nil {
		return nil, err
	}
	items := make(map[string]engine.Item, len(opt.Items))
	for _, it := range opt.Items {
		items[it.ItemID] = it
	}
	judged, rejs, err := Judge(ctx, rows, JudgeOptions{Extractor: x, Judges: opt.Judges, Items: items,
		RequireItems: cfg.RequireItems, BatchSize: cfg.BatchSize, Verified: opt.Verified, RowLabel: opt.RowLabel})
	if err != nil {
		return nil, err
	}
	res := &Result{Judged: judged, Rejections: rejs}
	rep := &res.Report
	rep.Rollouts, rep.Rejected = len(rows), len(rejs)
	rep.Classes, rep.Strata = map[string]int{}, map[string]int{}
	res.Evidence = make([]engine.Evidence, len(judged))
	for i := range judged {
		j := &judged[i]
		res.Evidence[i] = j.Evidence
		switch {
		case j.Attached:
			rep.Attached++
		case j.Evidence.FailureStage == engine.StageExtract:
			rep.ExtractFailed++
		default:
			rep.Verified++
		}
		switch j.Evidence.Status {
		case engine.StatusPass:
			rep.Pass++
		case engine.StatusFail:
			rep.Fail++
		default:
			rep.Unjudged++
		}
	}

	var strataIn []StrataTask
	for _, g := range groupByTask(judged) {
		ts := classify(g.task, g.byPolicy, cfg)
		rep.Tasks++
		rep.Classes[ts.Class]++
		rep.StudentExcluded += int(ts.StudentExcluded)
		rep.TeacherExcluded += int(ts.TeacherExcluded)
		if ts.Stratum != "" {
			rep.Strata[ts.Stratum]++
			strataIn = append(strataIn, StrataTask{TaskID: ts.TaskID, Stratum: ts.Stratum})
		}
		res.Tasks = append(res.Tasks, ts)
		switch ts.Class {
		case ClassGap:
			res.Gap = append(res.Gap, ts)
		case ClassUncovered:
			res.Uncovered = append(res.Uncovered, ts)
		}
		if rec, solved := recoverable(g.task, g.byPolicy[cfg.RecoverPolicy], cfg.RecoverContext); solved {
			if len(rec.Context) == 0 {
				rep.RecoverableNoContext++
			} else {
				res.Recoverable = append(res.Recoverable, rec)
				rep.Recoverable++
			}
		}
	}
	if cfg.StrataSample > 0 {
		res.StrataSample = SampleStrata(strataIn, cfg.StrataWeights, cfg.StrataSample, cfg.Seed)
		rep.Sampled = len(res.StrataSample)
	}
	res.Rewards = rewardRows(judged, func(task string) string { return adapterFor(cfg.Reward, items, task) }, cfg.SpeedupThreshold)
	return res, nil
}

func adapterFor(cfgReward string, items map[string]engine.Item, task string) string {
	if cfgReward != RewardAuto {
		return cfgReward
	}
	if it, ok := items[task]; ok && it.Domain == engine.DomainKernel {
		return RewardKernelTiered
	}
	return RewardRTLBinary
}

type taskGroup struct {
	task     string
	byPolicy map[string][]*Judged
}

// groupByTask splits sorted judged rows by task, then policy.
func groupByTask(judged []Judged) []taskGroup {
	var out []taskGroup
	for i := range judged {
		j := &judged[i]
		if len(out) == 0 || out[len(out)-1].task != j.Rollout.TaskID {
			out = append(out, taskGroup{task: j.Rollout.TaskID, byPolicy: map[string][]*Judged{}})
		}
		g := &out[len(out)-1]
		g.byPolicy[j.Rollout.Policy] = append(g.byPolicy[j.Rollout.Policy], j)
	}
	return out
}

// classify applies the capability-gap filter and the success-rate strata to
// one task. Only round-0 samples count: the gap is about first attempts.
func classify(task string, byPolicy map[string][]*Judged, cfg Config) TaskSelection {
	st := policyStats(byPolicy[cfg.Student], cfg.K)
	te := policyStats(byPolicy[cfg.Teacher], cfg.K)
	ts := TaskSelection{TaskID: task, K: int32(cfg.K),
		StudentSamples: st.Samples, StudentJudged: st.Judged, StudentPassed: st.Passed, StudentExcluded: st.Excluded,
		StudentPassAtK: st.PassAtK, StudentAvgAtK: st.AvgAtK,
		TeacherSamples: te.Samples, TeacherJudged: te.Judged, TeacherPassed: te.Passed, TeacherExcluded: te.Excluded,
		TeacherPassAtK: te.PassAtK, TeacherAvgAtK: te.AvgAtK,
		TeacherSample: -1,
	}
	sp := st
	if cfg.StrataPolicy != cfg.Student {
		sp = policyStats(byPolicy[cfg.StrataPolicy], cfg.K)
	}
	if sp.Defined() {
		ts.SuccessRate = sp.AvgAtK
		ts.Stratum = StratumOf(sp.AvgAtK)
	}
	switch {
	case !st.Defined():
		ts.Class, ts.Reason = ClassUndetermined, fmt.Sprintf("no judged %s sample at round 0 (%d unjudged)", cfg.Student, st.Excluded)
	case st.Passed > 0:
		ts.Class, ts.Reason = ClassStudentSolves, fmt.Sprintf("%s passed %d of %d judged", cfg.Student, st.Passed, st.Judged)
	case te.Passed > 0:
		ts.Class, ts.Reason = ClassGap, fmt.Sprintf("%s 0 of %d judged, %s %d of %d", cfg.Student, st.Judged, cfg.Teacher, te.Passed, te.Judged)
		for _, j := range byPolicy[cfg.Teacher] { // sorted by round, sample
			if j.Rollout.Round == 0 && j.Pass() {
				ts.TeacherCandidateID, ts.TeacherSample = j.Evidence.CandidateID, j.Rollout.SampleIndex
				ts.TeacherResponse, ts.TeacherAnswer = j.Rollout.Response, j.Answer
				break
			}
		}
	case te.Defined():
		ts.Class, ts.Reason = ClassUncovered, fmt.Sprintf("%s 0 of %d judged, %s 0 of %d judged", cfg.Student, st.Judged, cfg.Teacher, te.Judged)
	default:
		ts.Class, ts.Reason = ClassUndetermined, fmt.Sprintf("%s 0 of %d judged, no judged %s sample (%d unjudged)", cfg.Student, st.Judged, cfg.Teacher, te.Excluded)
	}
	return ts
}

// recoverable finds a policy's feedback recovery on one task: no pass among
// its judged round-0 samples (at least one judged), and a pass in a later
// round. solved is false when the task does not qualify.
func recoverable(task string, rows []*Judged, mode string) (rec Recoverable, solved bool) {
	var judged0 int
	var first *Judged
	for _, j := range rows { // sorted by round, sample
		if j.Rollout.Round == 0 {
			if j.Pass() {
				return rec, false
			}
			if j.Fail() {
				judged0++
			}
			continue
		}
		if first == nil && j.Pass() {
			first = j
		}
	}
	if judged0 == 0 || first == nil {
		return rec, false
	}
	rec = Recoverable{TaskID: task, Policy: first.Rollout.Policy, SolvedRound: first.Rollout.Round,
		SolvedSample: first.Rollout.SampleIndex}
	for _, j := range rows {
		if j.Rollout.Round >= first.Rollout.Round || !j.Fail() {
			continue
		}
		if mode == ContextTrajectory && j.Rollout.SampleIndex != first.Rollout.SampleIndex {
			continue
		}
		rec.Context = append(rec.Context, FeedbackTurn{Round: j.Rollout.Round, SampleIndex: j.Rollout.SampleIndex,
			Response: j.Rollout.Response, FailureStage: j.Evidence.FailureStage, Feedback: CoarseFeedback(j)})
	}
	rec.ContextText = renderContext(rec.Context)
	return rec, true
}

func renderContext(turns []FeedbackTurn) string {
	var b strings.Builder
	for i, t := range turns {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "### Attempt %d (round %d)\n%s\n\n### Verifier feedback\n%s", i+1, t.Round, t.Response, t.Feedback)
	}
	return b.String()
}
