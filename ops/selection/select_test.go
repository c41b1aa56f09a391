package selection

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// table is a hand-written rollout table with one task per branch.
func table() ([]engine.Item, []Rollout) {
	items := []engine.Item{
		{ItemID: "t_solves", Domain: engine.DomainRTL},
		{ItemID: "t_gap", Domain: engine.DomainRTL},
		{ItemID: "t_uncov", Domain: engine.DomainRTL},
		{ItemID: "t_unjudged", Domain: engine.DomainRTL},
		{ItemID: "t_exploit", Domain: engine.DomainKernel},
		{ItemID: "t_recover", Domain: engine.DomainRTL},
		{ItemID: "t_allunj", Domain: engine.DomainRTL},
	}
	S, T := PolicyStudent, PolicyTeacher
	rows := []Rollout{
		// student passes 1 of 4 (attached verdicts).
		{TaskID: "t_solves", Policy: S, SampleIndex: 0, Response: "a", Status: "fail", FailureStage: "mismatch"},
		{TaskID: "t_solves", Policy: S, SampleIndex: 1, Response: "b", Status: "pass"},
		{TaskID: "t_solves", Policy: S, SampleIndex: 2, Response: "c", Status: "fail", FailureStage: "compile"},
		{TaskID: "t_solves", Policy: S, SampleIndex: 3, Response: "d", Status: "fail", FailureStage: "timeout"},
		{TaskID: "t_solves", Policy: T, SampleIndex: 0, Response: "e", Status: "pass"},
		// all student samples fail; teacher: fail, unjudged, pass, pass (verified by the engine).
		{TaskID: "t_gap", Policy: S, SampleIndex: 0, Response: code("BAD")},
		{TaskID: "t_gap", Policy: S, SampleIndex: 1, Response: code("SYNTAX")},
		{TaskID: "t_gap", Policy: S, SampleIndex: 2, Response: "no code at all"},
		{TaskID: "t_gap", Policy: S, SampleIndex: 3, Response: code("BAD")},
		{TaskID: "t_gap", Policy: T, SampleIndex: 3, Response: code("GOOD second")},
		{TaskID: "t_gap", Policy: T, SampleIndex: 0, Response: code("BAD")},
		{TaskID: "t_gap", Policy: T, SampleIndex: 1, Response: code("FLAKY")},
		{TaskID: "t_gap", Policy: T, SampleIndex: 2, Response: "I reason at length.\n" + code("GOOD first")},
		// student and teacher all fail: uncovered.
		{TaskID: "t_uncov", Policy: S, SampleIndex: 0, Response: code("BAD")},
		{TaskID: "t_uncov", Policy: S, SampleIndex: 1, Response: code("BAD")},
		{TaskID: "t_uncov", Policy: T, SampleIndex: 0, Response: code("BAD")},
		{TaskID: "t_uncov", Policy: T, SampleIndex: 1, Response: code("SYNTAX")},
		// an unjudged sample inside the student's group.
		{TaskID: "t_unjudged", Policy: S, SampleIndex: 0, Response: code("GOOD")},
		{TaskID: "t_unjudged", Policy: S, SampleIndex: 1, Response: code("BAD")},
		{TaskID: "t_unjudged", Policy: S, SampleIndex: 2, Response: code("FLAKY")},
		{TaskID: "t_unjudged", Policy: S, SampleIndex: 3, Response: code("BAD")},
		// kernel task: exploit (overrides a claimed pass), fast, correct, compile fail, wrong.
		{TaskID: "t_exploit", Policy: S, SampleIndex: 0, Response: "x", Status: "pass", Exploit: true},
		{TaskID: "t_exploit", Policy: S, SampleIndex: 1, Response: "x", Status: "pass", Speedup: 1.2},
		{TaskID: "t_exploit", Policy: S, SampleIndex: 2, Response: "x", Status: "pass", Speedup: 1.05},
		{TaskID: "t_exploit", Policy: S, SampleIndex: 3, Response: "x", Status: "fail", FailureStage: "compile"},
		{TaskID: "t_exploit", Policy: S, SampleIndex: 4, Response: "x", Status: "fail", FailureStage: "mismatch"},
		// round 0 fails, solved at round 2 of trajectory 0.
		{TaskID: "t_recover", Policy: S, SampleIndex: 0, Round: 0, Response: code("BAD r0s0")},
		{TaskID: "t_recover", Policy: S, SampleIndex: 1, Round: 0, Response: "forgot the code"},
		{TaskID: "t_recover", Policy: S, SampleIndex: 0, Round: 1, Response: code("SYNTAX r1s0")},
		{TaskID: "t_recover", Policy: S, SampleIndex: 1, Round: 1, Response: code("FLAKY r1s1")},
		{TaskID: "t_recover", Policy: S, SampleIndex: 0, Round: 2, Response: code("GOOD r2s0 SECRET")},
		{TaskID: "t_recover", Policy: S, SampleIndex: 1, Round: 2, Response: code("GOOD r2s1 SECRET")},
		// one valid sample only, the rest unjudged.
		{TaskID: "t_allunj", Policy: S, SampleIndex: 0, Response: code("GOOD")},
		{TaskID: "t_allunj", Policy: S, SampleIndex: 1, Response: code("FLAKY")},
		{TaskID: "t_allunj", Policy: T, SampleIndex: 0, Response: code("FLAKY")},
		// unusable rows.
		{TaskID: "t_solves", Policy: "", SampleIndex: 9, Response: "a"},
		{TaskID: "t_solves", Policy: S, SampleIndex: 1, Response: "dup", Status: "pass"},
		{TaskID: "t_solves", Policy: S, SampleIndex: 7, Response: "a", Status: "passed"},
		{TaskID: "t_nowhere", Policy: S, SampleIndex: 0, Response: code("GOOD")},
		{TaskID: "t_solves", Policy: S, SampleIndex: 8, Response: "a", Status: "fail", FailureStage: "worker_crash"},
	}
	return items, rows
}

func runTable(t *testing.T, mutate func(*Config)) (*Result, *fakeVerifier) {
	t.Helper()
	items, rows := table()
	cfg := DefaultConfig()
	cfg.BatchSize = 4
	if mutate != nil {
		mutate(&cfg)
	}
	v := &fakeVerifier{}
	res, err := Select(context.Background(), cfg, rows, Options{Judges: judgesOf(v), Items: items,
		Verified: func(n, total int) { v.batches = append(v.batches, n) }})
	if err != nil {
		t.Fatal(err)
	}
	return res, v
}

func TestSelectClassifiesEveryBranch(t *testing.T) {
	res, v := runTable(t, nil)
	byTask := map[string]TaskSelection{}
	for _, ts := range res.Tasks {
		byTask[ts.TaskID] = ts
	}
	want := map[string]TaskSelection{
		"t_solves": {TaskID: "t_solves", Class: ClassStudentSolves, Reason: "student passed 1 of 4 judged", K: 4,
			StudentSamples: 4, StudentJudged: 4, StudentPassed: 1, StudentPassAtK: 1, StudentAvgAtK: 0.25,
			TeacherSamples: 1, TeacherJudged: 1, TeacherPassed: 1, TeacherPassAtK: 1, TeacherAvgAtK: 1,
			SuccessRate: 0.25, Stratum: StratumExploration, TeacherSample: -1},
		"t_gap": {TaskID: "t_gap", Class: ClassGap, Reason: "student 0 of 4 judged, teacher 2 of 3", K: 4,
			StudentSamples: 4, StudentJudged: 4,
			TeacherSamples: 4, TeacherJudged: 3, TeacherPassed: 2, TeacherExcluded: 1, TeacherPassAtK: 1, TeacherAvgAtK: 2.0 / 3,
			Stratum:            StratumFrontier,
			TeacherCandidateID: "t_gap/teacher/r0/s2", TeacherSample: 2,
			TeacherResponse: "I reason at length.\n" + code("GOOD first"), TeacherAnswer: "GOOD first"},
		"t_uncov": {TaskID: "t_uncov", Class: ClassUncovered, Reason: "student 0 of 2 judged, teacher 0 of 2 judged", K: 4,
			StudentSamples: 2, StudentJudged: 2, TeacherSamples: 2, TeacherJudged: 2,
			Stratum: StratumFrontier, TeacherSample: -1},
		"t_unjudged": {TaskID: "t_unjudged", Class: ClassStudentSolves, Reason: "student passed 1 of 3 judged", K: 4,
			StudentSamples: 4, StudentJudged: 3, StudentPassed: 1, StudentExcluded: 1, StudentPassAtK: 1, StudentAvgAtK: 1.0 / 3,
			SuccessRate: 1.0 / 3, Stratum: StratumExploration, TeacherSample: -1},
		"t_exploit": {TaskID: "t_exploit", Class: ClassStudentSolves, Reason: "student passed 2 of 5 judged", K: 4,
			StudentSamples: 5, StudentJudged: 5, StudentPassed: 2, StudentPassAtK: 1 - (1.0-4.0/4)*(1-4.0/5), StudentAvgAtK: 0.4,
			SuccessRate: 0.4, Stratum: StratumExploration, TeacherSample: -1},
		"t_recover": {TaskID: "t_recover", Class: ClassUndetermined, Reason: "student 0 of 2 judged, no judged teacher sample (0 unjudged)", K: 4,
			StudentSamples: 2, StudentJudged: 2, Stratum: StratumFrontier, TeacherSample: -1},
		"t_allunj": {TaskID: "t_allunj", Class: ClassStudentSolves, Reason: "student passed 1 of 1 judged", K: 4,
			StudentSamples: 2, StudentJudged: 1, StudentPassed: 1, StudentExcluded: 1, StudentPassAtK: 1, StudentAvgAtK: 1,
			TeacherSamples: 1, TeacherExcluded: 1,
			SuccessRate: 1, Stratum: StratumExploitation, TeacherSample: -1},
	}
	if len(byTask) != len(want) {
		t.Fatalf("got %d tasks, want %d", len(byTask), len(want))
	}
	for id, w := range want {
		if g := byTask[id]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", id, g, w)
		}
	}
	if len(res.Gap) != 1 || res.Gap[0].TaskID != "t_gap" || len(res.Uncovered) != 1 || res.Uncovered[0].TaskID != "t_uncov" {
		t.Errorf("gap %v uncovered %v", res.Gap, res.Uncovered)
	}
	// Every rollout without a verdict and with code went to the verifier,
	// in batches of at most 4; extraction failures never did.
	n := len(v.calls)
	for _, b := range v.batches {
		if b > 4 {
			t.Errorf("batch of %d > 4", b)
		}
	}
	for _, cand := range v.calls {
		if strings.Contains(cand.Code, "```") {
			t.Errorf("candidate %s still fenced: %q", cand.CandidateID, cand.Code)
		}
	}
	if n != 23 {
		t.Errorf("verified %d candidates, want 23", n)
	}
	rep := res.Report
	wantRep := Report{Rollouts: 40, Rejected: 5, Attached: 10, Verified: 23, ExtractFailed: 2,
		Pass: 10, Fail: 20, Unjudged: 5, Tasks: 7,
		Classes:         map[string]int{ClassStudentSolves: 4, ClassGap: 1, ClassUncovered: 1, ClassUndetermined: 1},
		StudentExcluded: 2, TeacherExcluded: 2, Recoverable: 1,
		Strata: map[string]int{StratumFrontier: 3, StratumExploration: 3, StratumExploitation: 1}}
	if !reflect.DeepEqual(rep, wantRep) {
		t.Errorf("report:\n got %+v\nwant %+v", rep, wantRep)
	}
}

func TestSelectRejectsUnusableRows(t *testing.T) {
	res, _ := runTable(t, nil)
	want := []engine.Rejection{
		{ItemID: "t_solves", Stage: "select", Gate: "rollout", Reason: "missing_field", Detail: "rollout row 35: policy is empty"},
		{ItemID: "t_solves", Stage: "select", Gate: "rollout", Reason: "duplicate_rollout", Detail: "rollout row 36: same task/policy/round/sample as rollout row 1"},
		{ItemID: "t_solves", Stage: "select", Gate: "rollout", Reason: "bad_verdict", Detail: `rollout row 37: status "passed" is not pass|fail|unjudged`},
		{ItemID: "t_nowhere", Stage: "select", Gate: "rollout", Reason: "unknown_task", Detail: `rollout row 38: task_id "t_nowhere" is not among the items`},
		{ItemID: "t_solves", Stage: "select", Gate: "rollout", Reason: "bad_verdict", Detail: `rollout row 39: status fail with infrastructure stage "worker_crash" (that is unjudged)`},
	}
	if !reflect.DeepEqual(res.Rejections, want) {
		t.Errorf("rejections:\n got %+v\nwant %+v", res.Rejections, want)
	}
}

func TestSelectExtractFailureIsEvidence(t *testing.T) {
	res, _ := runTable(t, nil)
	for _, ev := range res.Evidence {
		if ev.CandidateID == "t_gap/student/r0/s2" {
			if ev.Status != engine.StatusFail || ev.FailureStage != engine.StageExtract || !contains(ev.Cause, "no answer") {
				t.Errorf("extract evidence %+v", ev)
			}
			return
		}
	}
	t.Fatal("no evidence for the response without code")
}

func TestSelectRecoverable(t *testing.T) {
	for _, mode := range []string{ContextTrajectory, ContextAllRounds} {
		t.Run(mode, func(t *testing.T) {
			res, _ := runTable(t, func(c *Config) { c.RecoverContext = mode })
			if len(res.Recoverable) != 1 {
				t.Fatalf("recoverable %+v", res.Recoverable)
			}
			r0s0 := FeedbackTurn{Round: 0, SampleIndex: 0, Response: code("BAD r0s0"), FailureStage: "mismatch", Feedback: "produced wrong outputs"}
			r0s1 := FeedbackTurn{Round: 0, SampleIndex: 1, Response: "forgot the code", FailureStage: "extract",
				Feedback: "no code block found in the response: no answer found in response (mode auto)"}
			r1s0 := FeedbackTurn{Round: 1, SampleIndex: 0, Response: code("SYNTAX r1s0"), FailureStage: "compile",
				Feedback: "compilation failed: syntax error at line 3"}
			want := Recoverable{TaskID: "t_recover", Policy: PolicyStudent, SolvedRound: 2, SolvedSample: 0,
				Context: []FeedbackTurn{r0s0, r1s0}}
			if mode == ContextAllRounds {
				want.Context = []FeedbackTurn{r0s0, r0s1, r1s0} // r1s1 is unjudged: no feedback to learn from
			}
			got := res.Recoverable[0]
			text := got.ContextText
			got.ContextText = ""
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if strings.Contains(text, "SECRET") || strings.Contains(text, "expected 5") {
				t.Errorf("privileged context leaks the answer or expected values:\n%s", text)
			}
			if !strings.Contains(text, "BAD r0s0") || !strings.Contains(text, "compilation failed: syntax error at line 3") {
				t.Errorf("context text misses a turn:\n%s", text)
			}
		})
	}
}

func TestSelectRewards(t *testing.T) {
	res, _ := runTable(t, nil)
	got := map[string]RewardRow{}
	for _, r := range res.Rewards {
		got[r.CandidateID] = r
	}
	check := func(id string, reward float64, masked bool, valid int32, mean, std, adv float64) {
		t.Helper()
		r, ok := got[id]
		if !ok {
			t.Fatalf("no reward row for %s", id)
		}
		if r.Reward != reward || r.Masked != masked || r.GroupValid != valid ||
			math.Abs(r.GroupMean-mean) > 1e-12 || math.Abs(r.GroupStd-std) > 1e-12 || math.Abs(r.Advantage-adv) > 1e-12 {
			t.Errorf("%s: got reward %v masked %v valid %d mean %v std %v adv %v; want %v %v %d %v %v %v",
				id, r.Reward, r.Masked, r.GroupValid, r.GroupMean, r.GroupStd, r.Advantage, reward, masked, valid, mean, std, adv)
		}
	}
	// Kernel tiers: exploit 0, fast 1, correct 0.5 (1.05 is not > 1.05), compile 0.05, wrong 0.2.
	kMean := (0 + 1 + 0.5 + 0.05 + 0.2) / 5
	var ss float64
	for _, r := range []float64{0, 1, 0.5, 0.05, 0.2} {
		ss += (r - kMean) * (r - kMean)
	}
	kStd := math.Sqrt(ss / 4)
	check("t_exploit/student/r0/s0", 0, false, 5, kMean, kStd, (0-kMean)/kStd)
	check("t_exploit/student/r0/s1", 1, false, 5, kMean, kStd, (1-kMean)/kStd)
	check("t_exploit/student/r0/s2", 0.5, false, 5, kMean, kStd, (0.5-kMean)/kStd)
	check("t_exploit/student/r0/s3", 0.05, false, 5, kMean, kStd, (0.05-kMean)/kStd)
	check("t_exploit/student/r0/s4", 0.2, false, 5, kMean, kStd, (0.2-kMean)/kStd)
	if got["t_exploit/student/r0/s0"].Adapter != RewardKernelTiered || got["t_gap/student/r0/s0"].Adapter != RewardRTLBinary {
		t.Error("auto adapter does not follow the item domain")
	}
	// RTL group with an unjudged sample masked: rewards 1, 0, (-1), 0.
	m, s := 1.0/3, math.Sqrt(1.0/3)
	check("t_unjudged/student/r0/s0", 1, false, 3, m, s, (1-m)/s)
	check("t_unjudged/student/r0/s1", 0, false, 3, m, s, -m/s)
	check("t_unjudged/student/r0/s2", RewardUnjudged, true, 3, m, s, 0)
	check("t_unjudged/student/r0/s3", 0, false, 3, m, s, -m/s)
	// One valid sample: zero advantages; all-unjudged group: zero everything.
	check("t_allunj/student/r0/s0", 1, false, 1, 1, 0, 0)
	check("t_allunj/student/r0/s1", RewardUnjudged, true, 1, 1, 0, 0)
	check("t_allunj/teacher/r0/s0", RewardUnjudged, true, 0, 0, 0, 0)
	// All-equal group: zero spread, zero advantages.
	check("t_uncov/student/r0/s0", 0, false, 2, 0, 0, 0)
	// Rounds are separate groups (separate prompts).
	check("t_recover/student/r2/s0", 1, false, 2, 1, 0, 0)
	check("t_recover/student/r1/s0", 0, false, 1, 0, 0, 0)
	if len(res.Rewards) != len(res.Judged) {
		t.Errorf("%d reward rows for %d judged rollouts", len(res.Rewards), len(res.Judged))
	}
}

func TestSelectWithoutVerifierLeavesUnjudged(t *testing.T) {
	items, rows := table()
	res, err := Select(context.Background(), DefaultConfig(), rows, Options{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Judged {
		if !j.Attached && j.Evidence.FailureStage != engine.StageExtract && j.Evidence.Status != engine.StatusUnjudged {
			t.Errorf("%s judged %s without a verifier", j.Evidence.CandidateID, j.Evidence.Status)
		}
	}
	if res.Report.Classes[ClassGap] != 0 {
		t.Error("a gap was found without any verification")
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := DefaultConfig()
	c.K, c.Teacher, c.Reward, c.RecoverContext, c.BatchSize = 0, c.Student, "shaped", "none", 0
	c.StrataWeights = map[string]float64{"hard": 1, StratumFrontier: -1}
	err := c.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, f := range []string{"k:", "teacher:", "reward:", "recover_context:", "batch_size:", `unknown stratum "hard"`, "strata_weights.frontier"} {
		if !contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

func TestReadRolloutsLabelsRowsByFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(`{"task_id":"t_solves","policy":"student","sample_index":0,"response":"x","status":"pass"}`+"\n"), 0o644)
	os.WriteFile(b, []byte(`{"task_id":"t_solves","policy":"student","sample_index":1,"response":"x","status":"pass"}`+"\n\n"+
		`{"task_id":"t_solves","policy":"student","sample_index":0,"response":"x","status":"pass"}`+"\n"), 0o644)
	rows, label, err := ReadRollouts(a, b)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := table()
	res, err := Select(context.Background(), DefaultConfig(), rows, Options{Items: items, RowLabel: label})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejections) != 1 || res.Rejections[0].Detail != "b.jsonl row 2: same task/policy/round/sample as a.jsonl row 1" {
		t.Errorf("rejections %+v", res.Rejections)
	}
	os.WriteFile(b, []byte("{not json\n"), 0o644)
	if _, _, err := ReadRollouts(a, b); err == nil || !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), "b.jsonl:1") {
		t.Errorf("malformed file: %v", err)
	}
}
