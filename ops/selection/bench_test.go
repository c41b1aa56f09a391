package selection

import (
	"context"
	"fmt"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// BenchmarkSelect100k: 10k tasks × (8 student + 2 teacher) rollouts with
// attached verdicts: judging, classification, recovery, strata and rewards.
func BenchmarkSelect100k(b *testing.B) {
	var rows []Rollout
	statuses := []string{engine.StatusPass, engine.StatusFail, engine.StatusFail, engine.StatusUnjudged}
	for t := 0; t < 10_000; t++ {
		id := fmt.Sprintf("task%05d", t)
		for s := int32(0); s < 10; s++ {
			r := Rollout{TaskID: id, Policy: PolicyStudent, SampleIndex: s, Response: code("module m; endmodule"),
				Status: statuses[(t+int(s))%4]}
			if s >= 8 {
				r.Policy, r.SampleIndex = PolicyTeacher, s-8
			}
			switch r.Status {
			case engine.StatusFail:
				r.FailureStage = engine.StageMismatch
			case engine.StatusUnjudged:
				r.FailureStage = engine.StageWorkerCrash
			}
			rows = append(rows, r)
		}
	}
	cfg := DefaultConfig()
	cfg.StrataSample = 1000
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Select(context.Background(), cfg, rows, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	x, _ := NewExtractor(DefaultExtractConfig())
	resp := "Let me think step by step about the design.\n\n" + code("module TopModule(input a, output b);\n  assign b = ~a;\nendmodule") +
		"\nAnd a second version:\n" + code("module TopModule(input a, output b);\n  assign b = !a;\nendmodule")
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.Extract(resp); err != nil {
			b.Fatal(err)
		}
	}
}
