package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
)

// TestVerifyRoutesByDomain runs `crucible verify` (the CLI, flags parsed)
// on one item file holding an RTL task, a kernel task and a row of an
// unknown domain: each candidate is judged by its item's domain, the row
// validation rejects leaves its candidate an unjudged row (nothing is
// dropped), and `verify rtl` / `verify kernel` remain as subcommands.
func TestVerifyRoutesByDomain(t *testing.T) {
	rtlToolsOrSkip(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc missing (CI is set): scripts/setup.sh installs it")
		}
		t.Skip("gcc missing")
	}
	dir := t.TempDir()
	iface := engine.Interface{Top: "TopModule", Ports: []engine.Port{{Name: "a", Direction: "input", Width: 4},
		{Name: "b", Direction: "input", Width: 4}, {Name: "y", Direction: "output", Width: 4}}}
	tb, err := rtl.GenerateDifferentialTB(iface, rtl.DefaultTBOptions())
	if err != nil {
		t.Fatal(err)
	}
	and4 := engine.Item{ItemID: "and4", Domain: engine.DomainRTL, Family: "logic", Route: engine.RouteSeed,
		Instruction: "Implement TopModule: y = a & b.", Interface: iface,
		Reference:  "module RefModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = a & b;\nendmodule\n",
		Verifier:   engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: "tb"},
		Provenance: engine.Provenance{Source: "test", License: "MIT"}}
	vadd, err := kernels.LoadSeedDir(filepath.Join("..", "..", "examples", "seeds", "kernel", "vector_add_f32"))
	if err != nil {
		t.Fatal(err)
	}
	analog := and4
	analog.ItemID, analog.Domain = "opamp", "analog"
	writeJSONL(t, filepath.Join(dir, "items.jsonl"), and4, vadd, analog)
	writeJSONL(t, filepath.Join(dir, "cands.jsonl"),
		engine.Candidate{ItemID: "and4", CandidateID: "rtl-right", Code: "module TopModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = b & a;\nendmodule\n"},
		engine.Candidate{ItemID: "and4", CandidateID: "rtl-wrong", Code: "module TopModule(input [3:0] a, input [3:0] b, output [3:0] y);\n  assign y = a | b;\nendmodule\n"},
		engine.Candidate{ItemID: "vector_add_f32", CandidateID: "kernel-right",
			Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *o, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = b[i] + a[i]; }\n"},
		engine.Candidate{ItemID: "vector_add_f32", CandidateID: "kernel-wrong",
			Code: "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *o, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = b[i] * a[i]; }\n"},
		engine.Candidate{ItemID: "opamp", CandidateID: "analog", Code: "module TopModule; endmodule"},
		engine.Candidate{ItemID: "nope", CandidateID: "orphan", Code: "module TopModule; endmodule"})
	out, err := runCLI(t, "verify", "--items", filepath.Join(dir, "items.jsonl"), "--candidates", filepath.Join(dir, "cands.jsonl"),
		"--out", filepath.Join(dir, "out"), "--workers", "2", "--backend", "cpu")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	so, err := engine.LoadStageOutput(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := engine.ReadAll[engine.Evidence](so.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rtl-right pass/", "rtl-wrong fail/mismatch", "kernel-right pass/", "kernel-wrong fail/mismatch",
		"analog unjudged/payload_corrupt", "orphan unjudged/payload_corrupt"}
	if len(evs) != len(want) {
		t.Fatalf("%d evidence rows, want %d:\n%s", len(evs), len(want), out)
	}
	for i, ev := range evs {
		if got := ev.CandidateID + " " + ev.Status + "/" + ev.FailureStage; got != want[i] {
			t.Errorf("row %d: %s (%s), want %s", i, got, ev.Cause, want[i])
		}
	}
	for _, p := range []string{"judges: kernel, rtl", "1 item rows were rejected by validation", "  kernel\n    pass      1", "  rtl\n    pass      1"} {
		if !strings.Contains(out, p) {
			t.Errorf("summary lacks %q:\n%s", p, out)
		}
	}
	// --self-check passes both references through the same command.
	out, err = runCLI(t, "verify", "--items", filepath.Join(dir, "items.jsonl"), "--self-check", "--out", filepath.Join(dir, "self"), "--backend", "cpu")
	if err != nil {
		t.Fatalf("self-check: %v\n%s", err, out)
	}
	if !strings.Contains(out, "  kernel\n    pass      1") || !strings.Contains(out, "  rtl\n    pass      1") {
		t.Errorf("self-check summary:\n%s", out)
	}
	// The domain commands remain.
	for _, sub := range []string{"rtl", "kernel"} {
		if out, err := runCLI(t, "verify", sub, "--help"); err != nil || !strings.Contains(out, "--items") {
			t.Errorf("verify %s --help: %v\n%s", sub, err, out)
		}
	}
}
