package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/rtl"
)

func rtlToolsOrSkip(t *testing.T) {
	for _, tool := range []string{"iverilog", "vvp", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing", tool)
			}
			t.Skipf("%s missing; skipping", tool)
		}
	}
}

// TestVerifyRTLCommand runs `verify rtl` on a three-item item JSONL with a
// candidates JSONL (right, wrong, screened, unknown item) and with
// --self-check, and reads the evidence shards back.
func TestVerifyRTLCommand(t *testing.T) {
	rtlToolsOrSkip(t)
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, "items.jsonl"), and4Item(t))
	writeJSONL(t, filepath.Join(dir, "cands.jsonl"),
		engine.Candidate{ItemID: "and4", CandidateID: "right", Code: "module TopModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = b & a;\nendmodule\n"},
		engine.Candidate{ItemID: "and4", CandidateID: "wrong", Code: "module TopModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = a | b;\nendmodule\n"},
		engine.Candidate{ItemID: "and4", CandidateID: "system", Code: "module TopModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  initial $system(\"id\");\n  assign y = a & b;\nendmodule\n"},
		engine.Candidate{ItemID: "nope", CandidateID: "orphan", Code: "module TopModule; endmodule"})
	var out bytes.Buffer
	o := VerifyRTLOptions{Items: filepath.Join(dir, "items.jsonl"), Candidates: filepath.Join(dir, "cands.jsonl"),
		Out: filepath.Join(dir, "out"), Preset: "items", Config: rtl.DefaultStageConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &out}
	if err := runVerifyRTL(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	so, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := engine.ReadAll[engine.Evidence](so.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"right": "pass/", "wrong": "fail/mismatch", "system": "fail/static", "orphan": "unjudged/payload_corrupt"}
	if len(evs) != len(want) {
		t.Fatalf("%d evidence rows, want %d", len(evs), len(want))
	}
	for _, ev := range evs {
		if got := ev.Status + "/" + ev.FailureStage; got != want[ev.CandidateID] {
			t.Errorf("%s: %s (%s), want %s", ev.CandidateID, got, ev.Cause, want[ev.CandidateID])
		}
	}
	if !strings.Contains(out.String(), "pass      1") || !strings.Contains(out.String(), "fail      static") {
		t.Errorf("summary:\n%s", out.String())
	}

	out.Reset()
	o.Candidates, o.SelfCheck, o.Out = "", true, filepath.Join(dir, "self")
	if err := runVerifyRTL(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	so, _ = engine.LoadStageOutput(o.Out)
	evs, _ = engine.ReadAll[engine.Evidence](so.Shards("evidence")...)
	if len(evs) != 1 || evs[0].Status != engine.StatusPass || evs[0].CandidateID != rtl.ReferenceCandidateID {
		t.Errorf("self-check evidence %+v", evs)
	}

	o.Candidates = filepath.Join(dir, "cands.jsonl") // both: usage error
	if err := runVerifyRTL(context.Background(), o); !errors.Is(err, errUsage) {
		t.Errorf("--candidates with --self-check: %v, want usage error", err)
	}
}

// and4Item is a one-line RTL task (y = a & b) with a generated
// differential testbench.
func and4Item(t *testing.T) engine.Item {
	t.Helper()
	iface := engine.Interface{Top: "TopModule", Ports: []engine.Port{{Name: "a", Direction: "input", Width: 4},
		{Name: "b", Direction: "input", Width: 4}, {Name: "y", Direction: "output", Width: 4}}}
	tb, err := rtl.GenerateDifferentialTB(iface, rtl.DefaultTBOptions())
	if err != nil {
		t.Fatal(err)
	}
	return engine.Item{ItemID: "and4", Domain: engine.DomainRTL, Family: "logic", Route: engine.RouteSeed,
		Instruction: "Implement TopModule: y = a & b.", Interface: iface,
		Reference:  "module RefModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = a & b;\nendmodule\n",
		Verifier:   engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"},
		Provenance: engine.Provenance{Source: "test", License: "MIT"}}
}

// `verify`, `verify rtl` and `verify kernel` run as command stages: a
// second identical run skips the judging (says so, evidence and manifest
// untouched); a changed judge flag, a --set key, a changed items file or
// --force judges again.
func TestVerifyCommandsSkipWhenCurrent(t *testing.T) {
	rtlToolsOrSkip(t)
	dir := t.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	writeJSONL(t, items, and4Item(t))
	kernelSeed := filepath.Join("..", "..", "examples", "seeds", "kernel", "vector_add_f32")
	for _, tc := range []struct {
		name   string
		args   []string
		change []string // a flag that changes the verdicts' config
		set    string
		items  string // "" = the RTL items file, rewritten to change an input
	}{
		{"verify-rtl", []string{"verify", "rtl", "--self-check", "--workers", "2"}, []string{"--cpu-floor", "2"}, "strength_mutants=1", ""},
		{"verify", []string{"verify", "--self-check", "--workers", "2"}, []string{"--strength-audit=false"}, "rtl.retries=1", ""},
		{"verify-kernel", []string{"verify", "kernel", "--self-check", "--trials", "1", "--reps", "1", "--warmup", "0"}, []string{"--trials", "2"}, "timeout=30s", kernelSeed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.items != "" {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skip("gcc missing")
				}
			}
			in := items
			if tc.items != "" {
				in = tc.items
			}
			out := filepath.Join(dir, tc.name)
			args := append(append([]string{}, tc.args...), "--no-progress", "--items", in, "--out", out)
			expectRun(t, out, "ran", "verified 1 ", args...)
			expectRun(t, out, "skipped", "verified", args...)
			expectRun(t, out, "ran", "verified 1 ", append(args, tc.change...)...)
			expectRun(t, out, "ran", "verified 1 ", append(args, "--set", tc.set)...)
			expectRun(t, out, "skipped", "verified", append(args, "--set", tc.set)...)
			if tc.items == "" {
				writeJSONL(t, items, and4Item(t), and4Item(t)) // a duplicate row: a changed file
				expectRun(t, out, "ran", "verified", append(args, "--set", tc.set)...)
				writeJSONL(t, items, and4Item(t))
			}
			expectRun(t, out, "ran", "verified 1 ", append(args, "--set", tc.set, "--force")...)
		})
	}
}

func writeJSONL(t *testing.T, path string, rows ...any) {
	t.Helper()
	var b bytes.Buffer
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyRTLFlags drives the cobra command itself with the VerilogEval
// preset and --self-check over the first problems of the shared dataset.
func TestVerifyRTLFlags(t *testing.T) {
	rtlToolsOrSkip(t)
	data, err := os.ReadFile(testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitN(string(data), "\n", 6)[:5]
	in := filepath.Join(dir, "ve.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newVerifyRTLCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--items", in, "--preset", "verilog-eval", "--self-check", "--out", filepath.Join(dir, "out"), "--workers", "2"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "verified 5 candidates for 5 items") || !strings.Contains(out.String(), "pass      5") {
		t.Errorf("summary:\n%s", out.String())
	}
	m, err := engine.ReadManifest(filepath.Join(dir, "out", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows("evidence") != 5 || m.Counts["status.pass"] != 5 {
		t.Errorf("manifest rows %d counts %v", m.Rows("evidence"), m.Counts)
	}
}
