package rtl

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

func TestCandidateCPUSecondsRule(t *testing.T) {
	lim := Limits{CPUSeconds: 120, CPUFloorSeconds: 5, CPUFactor: 10}
	for _, tc := range []struct {
		ref  time.Duration
		want int
	}{
		{0, 5},
		{3 * time.Millisecond, 5},     // tiny reference: the floor
		{499 * time.Millisecond, 5},   // 4.99 s -> 5
		{510 * time.Millisecond, 6},   // 5.1 s rounds up
		{9500 * time.Millisecond, 95}, // a heavy reference scales its candidates' budget
		{12 * time.Second, 120},       // capped at the ceiling
		{10 * time.Minute, 120},       // a reference over the ceiling never got here, but the rule still caps
		{time.Duration(math.MaxInt64), 120},
	} {
		if got := lim.CandidateCPUSeconds(tc.ref); got != tc.want {
			t.Errorf("reference %v: budget %d s, want %d s", tc.ref, got, tc.want)
		}
	}
}

// busyCounter is the counter with a loop of n iterations per clock edge
// that changes no output: its cost grows with n, its behaviour does not.
func busyCounter(module string, n int) string {
	return fmt.Sprintf(`
module %s (input clk, input reset, input en, output reg [3:0] q);
  integer i, acc;
  always @(posedge clk) begin
    for (i = 0; i < %d; i = i + 1) acc = acc ^ i;
    if (reset) q <= 0;
    else if (en) q <= q + 1;
  end
endmodule
`, module, n)
}

// TestBudgetIsRelativeToTheReference: a task whose reference is heavy
// gives its candidates a budget proportional to the reference's measured
// CPU time, so a correct candidate twelve times slower than the reference
// passes where the floor alone would time it out, and a hostile loop is
// stopped at that budget with a cause that names the rule.
func TestBudgetIsRelativeToTheReference(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.CPUFloorSeconds, cfg.Limits.CPUFactor, cfg.Limits.CPUSeconds = 1, 20, 60
	v := newTestVerifier(t, cfg)
	item := counterItem(t, 100)
	const unit = 1000 // about 0.1 CPU-second per module instance over 100 cycles
	item.Reference = busyCounter("RefModule", unit)
	ctx := context.Background()
	refs, err := v.VerifyReferences(ctx, []engine.Item{item})
	if err != nil {
		t.Fatal(err)
	}
	if refs[0].Status != engine.StatusPass {
		t.Fatalf("reference: %s %s %s", refs[0].Status, refs[0].FailureStage, refs[0].Cause)
	}
	refCPU, _ := refs[0].Measurement("cpu_time_ms")
	budget, _ := refs[0].Measurement("candidate_cpu_budget_s")
	want := cfg.Limits.CandidateCPUSeconds(time.Duration(refCPU.Float * float64(time.Millisecond)))
	if budget.Int != int64(want) || want < 2 {
		t.Fatalf("reference took %.0f ms CPU; candidate budget %d s, want %d s (>= 2 s, above the floor)", refCPU.Float, budget.Int, want)
	}
	slow := busyCounter("TopModule", 12*unit)
	evs, err := v.Verify(ctx, []engine.Item{item}, []engine.Candidate{
		{ItemID: item.ItemID, CandidateID: "slow-correct", Code: slow},
		{ItemID: item.ItemID, CandidateID: "hostile-loop", Code: wrapCounter("  always @(posedge clk) if (en) while (1) begin end")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ev := evs[0]; ev.Status != engine.StatusPass {
		t.Errorf("slow correct candidate: %s at %s: %s", ev.Status, ev.FailureStage, ev.Cause)
	} else if cpu, _ := ev.Measurement("cpu_time_ms"); cpu.Float < 1000*float64(cfg.Limits.CPUFloorSeconds) {
		t.Logf("note: the slow candidate used %.0f ms CPU, under the floor; the machine is faster than this test assumes", cpu.Float)
	}
	ev := evs[1]
	if ev.Status != engine.StatusFail || ev.FailureStage != engine.StageTimeout {
		t.Fatalf("hostile loop: %s at %s: %s", ev.Status, ev.FailureStage, ev.Cause)
	}
	if b, _ := ev.Measurement("cpu_budget_s"); b.Int != budget.Int {
		t.Errorf("hostile loop ran under a %d s budget, want the task's %d s", b.Int, budget.Int)
	}
	if !strings.Contains(ev.Cause, "reference's CPU time") || !strings.Contains(ev.Cause, fmt.Sprintf("limit of %ds", budget.Int)) {
		t.Errorf("timeout cause does not name the budget rule: %s", ev.Cause)
	}
}

// TestReferenceOverTheCeilingIsUnjudged: a reference that spends the
// ceiling makes the task unjudged (reference_self_check, the cause names
// the ceiling); its candidates are never failed for it.
func TestReferenceOverTheCeilingIsUnjudged(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.CPUFloorSeconds, cfg.Limits.CPUSeconds = 1, 1
	v := newTestVerifier(t, cfg)
	item := counterItem(t, 100)
	item.Reference = strings.Replace(busyCounter("RefModule", 1), "acc = acc ^ i;", "while (1) acc = acc ^ i;", 1)
	evs, err := v.Verify(context.Background(), []engine.Item{item}, []engine.Candidate{{ItemID: item.ItemID, CandidateID: "good", Code: goodCounter}})
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	if ev.Status != engine.StatusUnjudged || ev.FailureStage != engine.StageReferenceSelfCheck {
		t.Fatalf("got %s at %s: %s", ev.Status, ev.FailureStage, ev.Cause)
	}
	if !strings.Contains(ev.Cause, "ceiling cpu_seconds=1") {
		t.Errorf("cause does not name the budget: %s", ev.Cause)
	}
}
