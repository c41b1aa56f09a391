package synth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func TestOutcomeMappingIsClosedPerDomain(t *testing.T) {
	cases := []struct {
		domain, status, stage, cause, want string
	}{
		{"rtl", engine.StatusPass, "", "", OutcomePass},
		{"rtl", engine.StatusFail, engine.StageCompile, "", OutcomeCompilationError},
		{"rtl", engine.StatusFail, engine.StageElaborate, "", OutcomeElaborationError},
		{"rtl", engine.StatusFail, engine.StageMismatch, "", OutcomeSimulationMismatch},
		{"kernel", engine.StatusFail, engine.StageMismatch, "", OutcomeNumericMismatch},
		{"rtl", engine.StatusFail, engine.StageTimeout, "", OutcomeTimeout},
		{"rtl", engine.StatusFail, engine.StageResource, "", OutcomeMemoryFault},
		{"kernel", engine.StatusFail, engine.StageSimulate, "illegal memory access", OutcomeMemoryFault},
		{"rtl", engine.StatusFail, engine.StageSimulate, "", OutcomeRuntimeError},
		{"rtl", engine.StatusFail, engine.StageStatic, "", OutcomeStaticRejected},
		{"rtl", engine.StatusFail, engine.StageNoVerdict, "", OutcomeNoVerdict},
		{"kernel", engine.StatusFail, engine.StagePerformance, "", OutcomePerformanceMiss},
		{"rtl", engine.StatusUnjudged, engine.StageWorkerCrash, "", OutcomeInfra},
		{"rtl", engine.StatusFail, engine.StageToolchainMissing, "", OutcomeInfra}, // an infra stage is never the candidate's fault
	}
	for _, c := range cases {
		got := OutcomeFor(c.domain, engine.Evidence{Status: c.status, FailureStage: c.stage, Cause: c.cause})
		if got != c.want {
			t.Errorf("%s %s/%s: %s, want %s", c.domain, c.status, c.stage, got, c.want)
		}
		if got != OutcomeInfra && !InVocabulary(c.domain, got) {
			t.Errorf("%s not in the %s vocabulary", got, c.domain)
		}
	}
	// Every candidate stage maps into the vocabulary of both domains.
	for _, d := range []string{"rtl", "kernel"} {
		for _, st := range engine.CandidateStages {
			if o := OutcomeFor(d, engine.Evidence{Status: engine.StatusFail, FailureStage: st}); !InVocabulary(d, o) {
				t.Errorf("%s stage %s -> %s outside the vocabulary", d, st, o)
			}
		}
	}
	if InVocabulary("rtl", OutcomeNumericMismatch) || InVocabulary("kernel", OutcomeSimulationMismatch) || InVocabulary("rtl", OutcomeInfra) {
		t.Error("vocabularies are per domain and exclude INFRA_ERROR")
	}
}

// The diagnostic is bounded and keeps the error lines even when they come
// late in a long log; the harness's secret verdict line is dropped.
func TestDiagnosticKeepsTheMostInformativePart(t *testing.T) {
	var log strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&log, "warning %d: something harmless happened here\n", i)
	}
	log.WriteString("design.sv:42: error: Unknown module type: Adder\nCRUCIBLE-abc123 mismatches=0 samples=0\n")
	ev := engine.Evidence{Status: engine.StatusFail, FailureStage: engine.StageElaborate, Cause: "build exited 1", LogExcerpt: log.String()}
	d := Diagnostic(ev, 300)
	if len(d) > 300 || !strings.HasPrefix(d, "build exited 1\ndesign.sv:42: error: Unknown module type: Adder\nwarning") ||
		strings.Contains(d, "CRUCIBLE-") || !strings.HasSuffix(d, "[truncated]") {
		t.Fatalf("diagnostic (%d bytes):\n%s", len(d), d)
	}
	ev = engine.Evidence{Status: engine.StatusFail, FailureStage: engine.StageCompile, Cause: "C compilation failed: /tmp/job-123/cand-9/cand.c:4:28: error: expected ';'"}
	if d := Diagnostic(ev, 300); d != "C compilation failed: cand.c:4:28: error: expected ';'" {
		t.Fatalf("random job paths must not reach the diagnostic: %q", d)
	}
	ev = engine.Evidence{Status: engine.StatusFail, FailureStage: engine.StageMismatch, Cause: "wrong outputs",
		Measurements: []engine.Measurement{engine.IntM("mismatches", 3), engine.IntM("samples", 10)}}
	o := ObservationFromEvidence("rtl", ev, 500)
	if o.Outcome != OutcomeSimulationMismatch || o.Mismatches != 3 || o.Samples != 10 || !strings.HasPrefix(o.Diagnostic, "Mismatches: 3 in 10 samples\nwrong outputs") {
		t.Fatalf("%+v", o)
	}
}

func TestWorldModelAnswerParsing(t *testing.T) {
	o, err := ParseWorldModelAnswer("rtl", "Sure.\n```json\n{\"outcome\": \"simulation_mismatch\", \"diagnostic\": \"x\", \"mismatches\": 2}\n```", 100)
	if err != nil || o.Outcome != OutcomeSimulationMismatch || o.Status != engine.StatusFail || o.Mismatches != 2 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []string{"PASS", `{"outcome": "NUMERIC_MISMATCH"}`, `{"outcome": "INFRA_ERROR"}`, `{"outcome": 3}`, `{`} {
		if _, err := ParseWorldModelAnswer("rtl", bad, 100); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// A target round-trips through the parser.
	want := Observation{Outcome: OutcomePass, Status: engine.StatusPass, Diagnostic: "All 5 samples matched.", Samples: 5}
	if got, err := ParseWorldModelAnswer("rtl", WorldModelTarget(want), 100); err != nil || got != want {
		t.Fatalf("%+v %v", got, err)
	}
}
