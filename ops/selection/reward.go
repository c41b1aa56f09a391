package selection

import (
	"math"

	"github.com/crucible-data/crucible/engine"
)

// RewardUnjudged is the reward sentinel of a sample the verifier could not
// judge even after retries. Such samples are masked out of group statistics.
const RewardUnjudged = -1.0

// Kernel reward tiers.
const (
	KernelFast          = 1.0  // correct and faster than the threshold
	KernelCorrect       = 0.5  // correct
	KernelCompiledWrong = 0.2  // built but incorrect
	KernelBuildFailed   = 0.05 // did not build (or no code to build)
	KernelExploit       = 0.0  // an exploit gate fired
)

// KernelTieredReward grades a kernel verdict. valid is false for unjudged
// verdicts (reward RewardUnjudged). A performance failure is a correct
// kernel that missed a required bound, so it earns the correct tier.
func KernelTieredReward(ev *engine.Evidence, speedupThreshold float64) (reward float64, valid bool) {
	switch ev.Status {
	case engine.StatusPass:
		if m, ok := ev.Measurement(MeasureSpeedup); ok && measureValue(m) > speedupThreshold {
			return KernelFast, true
		}
		return KernelCorrect, true
	case engine.StatusFail:
		switch {
		case engine.IsInfraStage(ev.FailureStage):
			return RewardUnjudged, false
		case ev.FailureStage == engine.StageExploit:
			return KernelExploit, true
		case ev.FailureStage == engine.StagePerformance:
			return KernelCorrect, true
		case ev.FailureStage == engine.StageExtract, ev.FailureStage == engine.StageStatic,
			ev.FailureStage == engine.StageCompile:
			return KernelBuildFailed, true
		default:
			return KernelCompiledWrong, true
		}
	}
	return RewardUnjudged, false
}

// RTLBinaryReward grades an RTL verdict: 1 for an explicit pass, 0 for a
// judged fail, RewardUnjudged (invalid) otherwise.
func RTLBinaryReward(ev *engine.Evidence) (reward float64, valid bool) {
	switch {
	case ev.Status == engine.StatusPass:
		return 1, true
	case ev.Status == engine.StatusFail && !engine.IsInfraStage(ev.FailureStage):
		return 0, true
	}
	return RewardUnjudged, false
}

func measureValue(m engine.Measurement) float64 {
	if m.Kind == "int" {
		return float64(m.Int)
	}
	return m.Float
}

// GroupStats are the statistics of one prompt's group of samples, over the
// valid (judged) samples only.
type GroupStats struct {
	Valid int
	Mean  float64
	Std   float64 // sample standard deviation (n-1)
}

// GroupAdvantages computes group statistics over the valid rewards and the
// normalised advantage (r-mean)/std of each sample. Masked samples get
// advantage 0. A group with at most one valid sample, or with zero spread,
// carries no learning signal and gets zero advantages.
func GroupAdvantages(rewards []float64, valid []bool) (GroupStats, []float64) {
	adv := make([]float64, len(rewards))
	var g GroupStats
	var sum float64
	for i, r := range rewards {
		if valid[i] {
			g.Valid++
			sum += r
		}
	}
	if g.Valid == 0 {
		return g, adv
	}
	g.Mean = sum / float64(g.Valid)
	if g.Valid < 2 {
		return g, adv
	}
	var ss float64
	for i, r := range rewards {
		if valid[i] {
			ss += (r - g.Mean) * (r - g.Mean)
		}
	}
	g.Std = math.Sqrt(ss / float64(g.Valid-1))
	if g.Std < 1e-12 {
		return g, adv
	}
	for i, r := range rewards {
		if valid[i] {
			adv[i] = (r - g.Mean) / g.Std
		}
	}
	return g, adv
}

// RewardRow is one sample's reward with its group's statistics. Groups are
// (task, policy, round): one prompt, as a round r>0 prompt includes feedback.
type RewardRow struct {
	TaskID       string  `json:"task_id" arrow:"task_id"`
	Policy       string  `json:"policy" arrow:"policy"`
	Round        int32   `json:"round" arrow:"round"`
	SampleIndex  int32   `json:"sample_index" arrow:"sample_index"`
	CandidateID  string  `json:"candidate_id" arrow:"candidate_id"`
	Adapter      string  `json:"adapter" arrow:"adapter"`
	Status       string  `json:"status" arrow:"status"`
	FailureStage string  `json:"failure_stage" arrow:"failure_stage"`
	Reward       float64 `json:"reward" arrow:"reward"`
	Masked       bool    `json:"masked" arrow:"masked"`
	GroupValid   int32   `json:"group_valid" arrow:"group_valid"`
	GroupMean    float64 `json:"group_mean" arrow:"group_mean"`
	GroupStd     float64 `json:"group_std" arrow:"group_std"`
	Advantage    float64 `json:"advantage" arrow:"advantage"`
}

// rewardRows grades judged rows (sorted by task, policy, round, sample) and
// fills in group statistics. adapterFor names the adapter of a task.
func rewardRows(judged []Judged, adapterFor func(taskID string) string, speedupThreshold float64) []RewardRow {
	out := make([]RewardRow, len(judged))
	valid := make([]bool, len(judged))
	for i := range judged {
		j := &judged[i]
		a := adapterFor(j.Rollout.TaskID)
		var r float64
		var ok bool
		if a == RewardKernelTiered {
			r, ok = KernelTieredReward(&j.Evidence, speedupThreshold)
		} else {
			r, ok = RTLBinaryReward(&j.Evidence)
		}
		valid[i] = ok
		out[i] = RewardRow{TaskID: j.Rollout.TaskID, Policy: j.Rollout.Policy, Round: j.Rollout.Round,
			SampleIndex: j.Rollout.SampleIndex, CandidateID: j.Evidence.CandidateID, Adapter: a,
			Status: j.Evidence.Status, FailureStage: j.Evidence.FailureStage, Reward: r, Masked: !ok}
	}
	for start := 0; start < len(out); {
		end := start + 1
		for end < len(out) && out[end].TaskID == out[start].TaskID && out[end].Policy == out[start].Policy &&
			out[end].Round == out[start].Round {
			end++
		}
		rs := make([]float64, end-start)
		for i := range rs {
			rs[i] = out[start+i].Reward
		}
		g, adv := GroupAdvantages(rs, valid[start:end])
		for i := start; i < end; i++ {
			out[i].GroupValid, out[i].GroupMean, out[i].GroupStd, out[i].Advantage = int32(g.Valid), g.Mean, g.Std, adv[i-start]
		}
		start = end
	}
	return out
}
