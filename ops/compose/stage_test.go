package compose_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
	"github.com/crucible-data/crucible/ops/compose"
	"github.com/crucible-data/crucible/ops/selection"
)

// markerVerifier judges by a marker in the code; it stands in for the RTL
// verifier behind selection.Verifier only.
// markerJudge passes RTL candidates whose code holds GOOD.
func markerJudge() *engine.Judges {
	js, err := engine.NewJudges(2, engine.JudgeFunc(engine.DomainRTL, func(_ context.Context, _ engine.Item, c engine.Candidate) (engine.Evidence, error) {
		ev := engine.Evidence{ItemID: c.ItemID, CandidateID: c.CandidateID, Status: engine.StatusFail, FailureStage: engine.StageMismatch}
		if strings.Contains(c.Code, "GOOD") {
			ev.Status, ev.FailureStage = engine.StatusPass, ""
		}
		return ev, nil
	}))
	if err != nil {
		panic(err)
	}
	return js
}

func writeJSONL(t *testing.T, path string, rows any) {
	t.Helper()
	var b strings.Builder
	v := reflect.ValueOf(rows)
	for i := 0; i < v.Len(); i++ {
		line, err := json.Marshal(v.Index(i).Interface())
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readKind[T any](t *testing.T, work, stage, kind string) []T {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, stage))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range out.Parts {
		for _, s := range m.Shards {
			if s.Kind == kind {
				paths = append(paths, filepath.Join(out.Dir, s.Path))
			}
		}
	}
	rows, err := engine.ReadAll[T](paths...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestSelectAndComposeStagesInAPipeline(t *testing.T) {
	dir := t.TempDir()
	var items []engine.Item
	var rolls []selection.Rollout
	fence := func(s string) string { return "```verilog\n" + s + "\n```" }
	for _, id := range []string{"a", "a_v1", "b", "c", "d"} {
		parent := ""
		if id == "a_v1" {
			parent = "a"
		}
		items = append(items, engine.Item{ItemID: id, ParentID: parent, Domain: engine.DomainRTL, Family: "fam_" + id[:1],
			Route: engine.RouteSeed, ReferenceStatus: engine.RefVerified, Difficulty: 0.5, Cost: 1})
		for s := int32(0); s < 4; s++ {
			student := fence("BAD")
			if id == "d" && s == 0 {
				student = fence("GOOD")
			}
			rolls = append(rolls, selection.Rollout{TaskID: id, Policy: "student", SampleIndex: s, Response: student})
		}
		teacher := fence("GOOD")
		if id == "c" {
			teacher = fence("BAD")
		}
		rolls = append(rolls, selection.Rollout{TaskID: id, Policy: "teacher", SampleIndex: 0, Response: teacher})
	}
	writeJSONL(t, filepath.Join(dir, "items.jsonl"), items)
	writeJSONL(t, filepath.Join(dir, "rollouts.jsonl"), rolls)
	pipeline := `name: t
work_dir: work
stages:
  - name: src
    type: items_jsonl
    inputs: [items.jsonl]
  - name: select
    type: select
    from: [src]
    inputs: [rollouts.jsonl]
    config: {k: 4, strata_sample: 2, seed: 3}
  - name: compose
    type: compose
    from: [src, select]
    config: {restrict_to: gap, validation_fraction: 0.5, lineage_cap: 2}
`
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	stagetest.RegisterItemsSource(reg)
	selection.RegisterStages(reg, selection.WithJudges(markerJudge()))
	compose.RegisterStages(reg)
	cfg, err := engine.LoadPipeline(filepath.Join(dir, "pipeline.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")

	gap := readKind[selection.TaskSelection](t, work, "select", selection.KindGap)
	var gapIDs []string
	for _, g := range gap {
		gapIDs = append(gapIDs, g.TaskID)
		if g.TeacherAnswer != "GOOD" {
			t.Errorf("gap %s: teacher answer %q", g.TaskID, g.TeacherAnswer)
		}
	}
	if !reflect.DeepEqual(gapIDs, []string{"a", "a_v1", "b"}) {
		t.Errorf("gap tasks %v, want a a_v1 b", gapIDs)
	}
	if un := readKind[selection.TaskSelection](t, work, "select", selection.KindUncovered); len(un) != 1 || un[0].TaskID != "c" {
		t.Errorf("uncovered %+v", un)
	}
	if rw := readKind[selection.RewardRow](t, work, "select", selection.KindRewards); len(rw) != 25 {
		t.Errorf("%d reward rows, want 25", len(rw))
	}
	if ss := readKind[selection.StrataPick](t, work, "select", selection.KindStrataSample); len(ss) != 2 {
		t.Errorf("strata sample %+v", ss)
	}

	train := readKind[engine.Item](t, work, "compose", compose.KindTrain)
	val := readKind[engine.Item](t, work, "compose", compose.KindValidation)
	var ids []string
	for _, it := range append(train, val...) {
		ids = append(ids, it.ItemID)
	}
	sort.Strings(ids)
	if !reflect.DeepEqual(ids, []string{"a", "a_v1", "b"}) {
		t.Errorf("composed %v, want the gap tasks", ids)
	}
	// a and a_v1 share a lineage: same side.
	side := map[string]string{}
	for _, a := range readKind[compose.Assignment](t, work, "compose", compose.KindComposition) {
		side[a.ItemID] = a.Split
	}
	if side["a"] != side["a_v1"] || len(train) == 0 || len(val) == 0 {
		t.Errorf("splits %v", side)
	}
	if cov := readKind[compose.CoverageRow](t, work, "compose", compose.KindCoverage); len(cov) == 0 {
		t.Error("no coverage rows")
	}
	counts := map[string]map[string]int64{}
	for _, st := range sum.Stages {
		counts[st.Name] = st.Counts
	}
	if counts["select"]["class.gap"] != 3 || counts["select"]["class.uncovered"] != 1 || counts["select"]["class.student_solves"] != 1 {
		t.Errorf("select counts %v", counts["select"])
	}
	if counts["compose"]["train.items"]+counts["compose"]["validation.items"] != 3 {
		t.Errorf("compose counts %v", counts["compose"])
	}
}

func TestStageConfigErrors(t *testing.T) {
	reg := engine.NewRegistry()
	compose.RegisterStages(reg)
	selection.RegisterStages(reg)
	for typ, text := range map[string]string{
		"compose": "{lineage_cap: 0, colour: red}",
		"select":  "{k: 0}",
	} {
		sc, err := engine.NewStageConfig(typ, text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Build(typ, sc); err == nil {
			t.Errorf("%s accepted %s", typ, text)
		}
	}
	sc, _ := engine.NewStageConfig("select", "{strata_weights: {frontier: 1}}")
	if _, err := reg.Build("select", sc); err != nil {
		t.Errorf("select rejected a weights override: %v", err)
	}
}
