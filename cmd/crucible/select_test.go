package main

import (
	"context"
	"github.com/crucible-data/crucible/internal/testenv"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/spf13/pflag"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/compose"
	"github.com/crucible-data/crucible/ops/selection"
)

func selReadKind[T any](t *testing.T, dir, kind string) []T {
	t.Helper()
	paths, err := shardInputs([]string{dir}, kind)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[T](paths...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSelectAndComposeOnTheBundledRollouts runs `crucible select` on the
// example rollout table with the real RTL verifier (Icarus), then `crucible
// compose` on its gap tasks.
func TestSelectAndComposeOnTheBundledRollouts(t *testing.T) {
	testenv.Tools(t, "iverilog")
	root := testenv.RepoRoot(t)
	tmp := t.TempDir()
	itemsDir, selDir, compDir := filepath.Join(tmp, "items"), filepath.Join(tmp, "select"), filepath.Join(tmp, "compose")
	ctx := context.Background()
	if err := runIngest(ctx, IngestOptions{Preset: "taskdir", Out: itemsDir, Paths: []string{filepath.Join(root, "examples/seeds/rtl")},
		Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	cfg := selection.DefaultConfig()
	cfg.StrataSample = 4
	err := runSelect(ctx, SelectOptions{Rollouts: []string{filepath.Join(root, "examples/rollouts/rollouts.jsonl")},
		Items: []string{itemsDir}, Out: selDir, Config: cfg, RTLWorkers: 2, Simulator: "icarus",
		Writer: engine.DefaultWriterOptions(), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	strata := map[string]string{}
	for _, ts := range selReadKind[selection.TaskSelection](t, selDir, selection.KindSelection) {
		classes[ts.TaskID], strata[ts.TaskID] = ts.Class, ts.Stratum
	}
	wantClasses := map[string]string{
		"counter_up8_en": "student_solves", "counter_gray4": "gap", "lfsr16_fib": "uncovered",
		"counter_mod10_tc": "gap", "barrel_shifter16": "student_solves", "counter_johnson5": "student_solves",
		"counter_down8_load_sat": "student_solves", "shift_sipo8_done": "student_solves",
		"shift_piso8_busy": "gap", "counter_updown4_arst_n": "gap",
	}
	if !reflect.DeepEqual(classes, wantClasses) {
		t.Errorf("classes:\n got %v\nwant %v", classes, wantClasses)
	}
	wantStrata := map[string]string{
		"counter_up8_en": "exploration", "counter_gray4": "frontier", "lfsr16_fib": "frontier",
		"counter_mod10_tc": "frontier", "barrel_shifter16": "exploitation", "counter_johnson5": "near_mastery",
		"counter_down8_load_sat": "exploitation", "shift_sipo8_done": "exploration",
		"shift_piso8_busy": "frontier", "counter_updown4_arst_n": "frontier",
	}
	if !reflect.DeepEqual(strata, wantStrata) {
		t.Errorf("strata:\n got %v\nwant %v", strata, wantStrata)
	}
	for _, g := range selReadKind[selection.TaskSelection](t, selDir, selection.KindGap) {
		if g.TaskID == "counter_gray4" && (g.TeacherSample != 1 || g.TeacherAnswer == "" || g.TeacherExcluded != 0) {
			t.Errorf("gray4 gap row: %+v", g)
		}
	}
	// Rows without a verdict were judged by the RTL verifier, not guessed.
	verified := 0
	for _, ev := range selReadKind[engine.Evidence](t, selDir, selection.KindEvidence) {
		if ev.Provenance.Verifier != "attached" && ev.FailureStage != engine.StageExtract {
			verified++
			if len(ev.Provenance.Toolchain) == 0 || ev.Status == engine.StatusUnjudged {
				t.Errorf("%s: %s/%s by %q toolchain %v: %s", ev.CandidateID, ev.Status, ev.FailureStage, ev.Provenance.Verifier, ev.Provenance.Toolchain, ev.Cause)
			}
		}
	}
	if verified != 36 {
		t.Errorf("%d rollouts verified, want 36", verified)
	}
	rec := selReadKind[selection.Recoverable](t, selDir, selection.KindRecoverable)
	if len(rec) != 1 || rec[0].TaskID != "counter_mod10_tc" || rec[0].SolvedRound != 2 || len(rec[0].Context) != 2 ||
		rec[0].Context[1].FailureStage != engine.StageCompile {
		t.Errorf("recoverable: %+v", rec)
	}
	for _, r := range selReadKind[selection.RewardRow](t, selDir, selection.KindRewards) {
		if r.TaskID == "shift_sipo8_done" && r.SampleIndex == 2 && (!r.Masked || r.Reward != selection.RewardUnjudged) {
			t.Errorf("unjudged sample not masked: %+v", r)
		}
	}

	ccfg := compose.DefaultConfig()
	ccfg.RequireVerified = false // ingested items are unverified until a verify stage runs
	ccfg.ValidationFraction = 0.25
	if err := runCompose(ctx, ComposeOptions{Items: []string{itemsDir}, RestrictTo: []string{selDir}, Out: compDir,
		Config: ccfg, Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range []string{compose.KindTrain, compose.KindValidation} {
		for _, it := range selReadKind[engine.Item](t, compDir, k) {
			ids = append(ids, it.ItemID)
		}
	}
	sort.Strings(ids)
	if want := []string{"counter_gray4", "counter_mod10_tc", "counter_updown4_arst_n", "shift_piso8_busy"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("composed %v, want %v", ids, want)
	}
	if m, err := engine.ReadManifest(filepath.Join(compDir, "manifest.json")); err != nil || m.Rows(compose.KindCoverage) == 0 {
		t.Errorf("compose manifest: %v %+v", err, m)
	}
}

func TestSelectFlagsLayerOverConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "select.yaml")
	if err := os.WriteFile(file, []byte("k: 8\nstrata_weights: {frontier: 1}\nextract: {mode: fenced, pick: first}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := selection.DefaultConfig()
	fs := pflag.NewFlagSet("select", pflag.ContinueOnError)
	apply := bindSelectConfig(fs, &cfg)
	if err := fs.Parse([]string{"--teacher", "gpt", "--pick", "last", "--config", file}); err != nil {
		t.Fatal(err)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	if cfg.K != 8 || cfg.Teacher != "gpt" || cfg.Extract.Mode != "fenced" || cfg.Extract.Pick != "last" ||
		!reflect.DeepEqual(cfg.StrataWeights, map[string]float64{"frontier": 1}) {
		t.Errorf("layered config %+v", cfg)
	}
	if _, err := parseWeights("frontier=x"); err == nil {
		t.Error("bad --strata-weights accepted")
	}
}

// `crucible select` is the select stage run through the pipeline runner: a
// second identical run skips; a changed flag, --strata-weights, a judge
// setting (--simulator, part of the fingerprint though not of the stage's
// config) or a changed rollouts file runs it again.
func TestSelectSkipsWhenCurrent(t *testing.T) {
	dir := t.TempDir()
	rollouts := filepath.Join(dir, "rollouts.jsonl")
	var rows []any
	for i, st := range []string{"pass", "fail", "fail", "pass"} {
		rows = append(rows, selection.Rollout{TaskID: "t1", Policy: []string{"student", "teacher"}[i%2], SampleIndex: int32(i / 2), Response: "x", Status: st})
	}
	writeJSONL(t, rollouts, rows...)
	out := filepath.Join(dir, "out")
	args := []string{"select", "--no-progress", "--rollouts", rollouts, "--out", out, "--no-verify"}
	expectRun(t, out, "ran", "rollouts 4: ", args...)
	expectRun(t, out, "skipped", "rollouts", args...)
	expectRun(t, out, "ran", "pass@2", append(args, "--k", "2")...)
	expectRun(t, out, "ran", "rollouts 4", append(args, "--strata-weights", "frontier=1")...)
	expectRun(t, out, "ran", "rollouts 4", append(args, "--strata-weights", "frontier=1", "--simulator", "verilator")...)
	expectRun(t, out, "skipped", "rollouts", append(args, "--strata-weights", "frontier=1", "--simulator", "verilator")...)
	writeJSONL(t, rollouts, rows[:2]...)
	expectRun(t, out, "ran", "rollouts 2", append(args, "--strata-weights", "frontier=1", "--simulator", "verilator")...)
}
