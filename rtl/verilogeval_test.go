package rtl

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestVerilogEvalSelfCheck submits every spec-to-rtl reference (renamed
// TopModule) as its own candidate through the full candidate path (static
// check, replay of the reference's recorded inputs, trace comparison): all
// pass, except the references that fail their own harness under Icarus 11,
// which are unjudged with a reference_self_check cause, and the one task
// whose harness cannot tell any candidate from the reference (Prob053: its
// reference output goes x at the first edge, so every sample is a
// don't-care), which is unjudged weak_verifier — never fail.
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
	var unjudged, weak []string
	for _, ev := range evs {
		counts[ev.Status]++
		switch ev.Status {
		case engine.StatusFail:
			t.Errorf("%s failed at %s: %s\n%s", ev.ItemID, ev.FailureStage, ev.Cause, ev.LogExcerpt)
		case engine.StatusUnjudged:
			if ev.FailureStage == engine.StageWeakVerifier {
				weak = append(weak, ev.ItemID)
				continue
			}
			unjudged = append(unjudged, ev.ItemID)
			if ev.FailureStage != engine.StageReferenceSelfCheck || !strings.Contains(ev.Cause, "icarus") {
				t.Errorf("%s unjudged with stage %q cause %q, want reference_self_check naming the toolchain", ev.ItemID, ev.FailureStage, ev.Cause)
			}
		case engine.StatusPass:
			m, ok := ev.Measurement("samples")
			e, _ := ev.Measurement("expected_samples")
			if !ok || m.Int <= 0 || m.Int != e.Int {
				t.Errorf("%s passed with samples %d, expected %d", ev.ItemID, m.Int, e.Int)
			}
		}
	}
	t.Logf("spec-to-rtl self-check: %v; unjudged: %v; weak: %v", counts, unjudged, weak)
	if counts[engine.StatusPass] != 152 {
		t.Errorf("%d passes, want 152 (153 judged references less the weak Prob053)", counts[engine.StatusPass])
	}
	if len(weak) != 1 || !strings.Contains(weak[0], "Prob053") {
		t.Errorf("weak_verifier %v, want Prob053 alone", weak)
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
