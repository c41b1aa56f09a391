package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/decontam/decontamtest"
	"github.com/crucible-data/crucible/engine"
)

func TestDecontamCheckBehavioural(t *testing.T) {
	decontamtest.RequireBehaviouralTools(t)
	dir := t.TempDir()
	bench := decontamtest.WriteBenchSubset(t, dir, "Prob014_andgate", "Prob027_fadd")
	corpus := filepath.Join(dir, "corpus.jsonl")
	var rows []string
	for _, r := range []map[string]string{
		{"item_id": "lut", "reference": decontamtest.FaddLUT},
		{"item_id": "or", "reference": "module g (input a, input b, output out);\n  assign out = a | b;\nendmodule\n"},
		{"item_id": "prose", "instruction": "Write a module that adds numbers."},
	} {
		b, _ := json.Marshal(r)
		rows = append(rows, string(b))
	}
	os.WriteFile(corpus, []byte(strings.Join(rows, "\n")+"\n"), 0o644)

	// Default (auto): behavioural runs, finds the rewrite, exit 6.
	out := filepath.Join(dir, "auto")
	stdout, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", out, "--no-progress", "--workers", "2", "--purify", filepath.Join(dir, "pure"))
	if code := exitCode(context.Background(), err); code != exitFindings {
		t.Fatalf("auto: exit %d (%v), want %d\n%s", code, err, exitFindings, stdout)
	}
	files, _ := filepath.Glob(filepath.Join(out, "matches-*.parquet"))
	ms, err := engine.ReadAll[decontam.Match](files...)
	if err != nil {
		t.Fatal(err)
	}
	var bhv []decontam.Match
	for _, m := range ms {
		if m.Method == decontam.MethodBehavioural {
			bhv = append(bhv, m)
		} else if m.Contaminated && m.CorpusID == "lut" {
			t.Errorf("lexical match %s ← %s (%s %.2f): the rewrite should be lexically clean", m.BenchmarkID, m.CorpusID, m.Method, m.Score)
		}
	}
	if len(bhv) != 1 || bhv[0].CorpusID != "lut" || bhv[0].BenchmarkID != "Prob027_fadd" || !strings.HasSuffix(bhv[0].PortMapping, "cout=c_q,sum=s_q") || !strings.Contains(bhv[0].Evidence, `"status":"pass"`) {
		t.Fatalf("behavioural matches %+v", bhv)
	}
	// --purify removes the rewrite (behavioural) and the OR gate (a
	// structural match of andgate), keeps the prose.
	if !strings.Contains(stdout, "(kept 1 rows, removed 2 contaminated)") {
		t.Errorf("purify: %s", stdout)
	}
	if !strings.Contains(stdout, "(behavioural)") || !strings.Contains(stdout, "simulations") {
		t.Errorf("summary lacks the behavioural pass:\n%s", stdout)
	}
	var man engine.Manifest
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	// lut: 1 compatible pair (fadd); or: 1 (andgate), pruned 1 each.
	if man.Counts["behavioural.matches.bench"] != 1 || man.Counts["behavioural.pairs_compatible.bench"] != 2 ||
		man.Counts["behavioural.pairs_pruned.bench"] != 2 || man.Counts["behavioural.simulations.bench"] < 2 {
		t.Errorf("manifest counts %v", man.Counts)
	}
	// The match set rescored keeps the behavioural match.
	if _, err := runCLI(t, "decontam", "rescore", out, "--threshold", "0.9", "--out", filepath.Join(dir, "rescored")); exitCode(context.Background(), err) != exitFindings {
		t.Errorf("rescore: %v, want exit 6", err)
	}

	// Lexical only: the rewrite goes unnoticed, while the OR gate, which
	// behaviourally is not andgate, is a structural match of it (exit 6).
	lex := filepath.Join(dir, "lex")
	if _, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", lex, "--no-progress", "--method", "lexical"); exitCode(context.Background(), err) != exitFindings {
		t.Fatalf("--method lexical: %v", err)
	}
	files, _ = filepath.Glob(filepath.Join(lex, "matches-*.parquet"))
	if ms, err = engine.ReadAll[decontam.Match](files...); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Method == decontam.MethodBehavioural || m.CorpusID == "lut" && m.Contaminated {
			t.Errorf("--method lexical wrote %s %s ← %s", m.Method, m.BenchmarkID, m.CorpusID)
		}
	}
	// Bad method, behavioural with a corpus index: exit 2.
	if _, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", filepath.Join(dir, "bad"), "--method", "lexical,semantic"); exitCode(context.Background(), err) != exitUsage {
		t.Errorf("--method semantic: %v, want exit 2", err)
	}
	// The reverse direction: a corpus index keeps its designs'
	// interfaces, so the benchmark checked against it finds the rewrite.
	idx := filepath.Join(dir, "cidx")
	stdout, err = runCLI(t, "decontam", "index", "--in", corpus, "--side", "corpus", "--out", idx)
	if err != nil || !strings.Contains(stdout, "interface index: 2 designs in 3 rows (0 without") {
		t.Fatalf("index: %v\n%s", err, stdout)
	}
	ci := filepath.Join(dir, "ci")
	if _, err := runCLI(t, "decontam", "check", "--corpus-index", idx, "--benchmark", bench, "--out", ci, "--method", "behavioural"); exitCode(context.Background(), err) != exitFindings {
		t.Fatalf("--method behavioural --corpus-index: %v, want exit 6", err)
	}
	files, _ = filepath.Glob(filepath.Join(ci, "matches-*.parquet"))
	if ms, err = engine.ReadAll[decontam.Match](files...); err != nil || len(ms) != 1 || ms[0].CorpusID != "lut" || ms[0].BenchmarkID != "Prob027_fadd" || ms[0].Method != decontam.MethodBehavioural {
		t.Errorf("reverse matches %+v (%v)", ms, err)
	}
	// --method behavioural where it cannot run: a corpus index built
	// lexical-only holds no designs; a benchmark without harnesses has
	// nothing to run.
	lidx := filepath.Join(dir, "cidx-lex")
	if _, err := runCLI(t, "decontam", "index", "--in", corpus, "--side", "corpus", "--out", lidx, "--method", "lexical"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "decontam", "check", "--corpus-index", lidx, "--benchmark", bench, "--out", filepath.Join(dir, "ci-lex"), "--method", "behavioural"); exitCode(context.Background(), err) != exitUsage || !strings.Contains(err.Error(), "lexical-only") {
		t.Errorf("--method behavioural --corpus-index (lexical-only index): %v, want exit 2", err)
	}
	// auto against it: lexical only (the OR gate's structural match of
	// andgate, exit 6), saying that behavioural was not available.
	stdout, err = runCLI(t, "decontam", "check", "--corpus-index", lidx, "--benchmark", bench, "--out", filepath.Join(dir, "ci-auto"))
	if exitCode(context.Background(), err) != exitFindings || !strings.Contains(stdout, "behavioural matching NOT available for --corpus-index") || strings.Contains(stdout, "(behavioural)") {
		t.Errorf("auto --corpus-index (lexical-only index): %v\n%s", err, stdout)
	}
	noharness := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(noharness, []byte(`{"id":"p1","prompt":"an adder with a carry in and a carry out, please"}`+"\n"), 0o644)
	if _, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", noharness, "--out", filepath.Join(dir, "nh"), "--method", "all"); exitCode(context.Background(), err) != exitUsage {
		t.Errorf("--method all with a benchmark without harnesses: %v, want exit 2", err)
	}
	// Without the simulator, auto says so and runs lexical only;
	// --method behavioural refuses.
	t.Setenv("PATH", dir)
	stdout, err = runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", filepath.Join(dir, "notools"), "--no-progress")
	if exitCode(context.Background(), err) != exitFindings || !strings.Contains(stdout, "behavioural matching NOT run") || strings.Contains(stdout, "(behavioural)") {
		t.Errorf("auto without iverilog: %v\n%s", err, stdout)
	}
	if _, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", filepath.Join(dir, "notools2"), "--method", "behavioural"); exitCode(context.Background(), err) != exitUsage || !strings.Contains(err.Error(), "iverilog") {
		t.Errorf("--method behavioural without iverilog: %v, want exit 2 naming iverilog", err)
	}
}
