package rtl

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestVerilogEvalSelfCheck submits every spec-to-rtl reference (renamed
// TopModule) as its own candidate: all pass, except the references that
// fail their own harness under Icarus 11, which are unjudged with a
// reference_self_check cause — never fail.
func TestVerilogEvalSelfCheck(t *testing.T) {
	items := loadVerilogEval(t, "verilog-eval/spec-to-rtl.jsonl")
	if len(items) != 156 {
		t.Fatalf("got %d items, want 156", len(items))
	}
	v := newTestVerifier(t, testConfig(t))
	evs, err := v.Verify(context.Background(), items, selfCandidates(t, items))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var unjudged []string
	for _, ev := range evs {
		counts[ev.Status]++
		switch ev.Status {
		case engine.StatusFail:
			t.Errorf("%s failed at %s: %s\n%s", ev.ItemID, ev.FailureStage, ev.Cause, ev.LogExcerpt)
		case engine.StatusUnjudged:
			unjudged = append(unjudged, ev.ItemID)
			if ev.FailureStage != engine.StageReferenceSelfCheck || !strings.Contains(ev.Cause, "icarus") {
				t.Errorf("%s unjudged with stage %q cause %q, want reference_self_check naming the toolchain", ev.ItemID, ev.FailureStage, ev.Cause)
			}
		case engine.StatusPass:
			if m, ok := ev.Measurement("samples"); !ok || m.Int <= 0 {
				t.Errorf("%s passed without a positive sample count", ev.ItemID)
			}
		}
	}
	t.Logf("spec-to-rtl self-check: %v; unjudged: %v", counts, unjudged)
	if counts[engine.StatusPass] < 150 {
		t.Errorf("only %d passes", counts[engine.StatusPass])
	}
	want := []string{"Prob099", "Prob151", "Prob156"}
	if len(unjudged) != len(want) {
		t.Errorf("unjudged %v, want the references of %v", unjudged, want)
	}
	for i, w := range want {
		if i < len(unjudged) && !strings.Contains(unjudged[i], w) {
			t.Errorf("unjudged[%d] = %s, want %s", i, unjudged[i], w)
		}
	}
}
