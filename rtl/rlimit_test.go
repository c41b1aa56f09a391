package rtl

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// TestLimitsApplied reads /proc/self/limits of a tool started the way every
// tool is (runLimited, in a sandbox), and checks that the known-bad
// candidates that depend on the limits still end at the right stage.
func TestLimitsApplied(t *testing.T) {
	cfg := testConfig(t)
	cfg.Limits.CPUSeconds, cfg.Limits.CPUFloorSeconds = 2, 2 // the reference's and every candidate's budget
	cfg.Limits.AddressSpaceBytes = 1 << 30
	v := newTestVerifier(t, cfg)
	res, err := runLimited(context.Background(), t.TempDir(), cfg.Limits, time.Minute, []string{"cat", "/proc/self/limits"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("cat in the sandbox: %+v %s", res, res.Stderr.String())
	}
	l := res.Stdout.String()
	for _, want := range []string{"Max address space         1073741824", "Max cpu time              2                    3",
		"Max file size             " + strconv.FormatInt(cfg.Limits.FileSizeBytes, 10), "Max core file size        0",
		"Max processes             " + strconv.Itoa(cfg.Limits.Processes)} {
		if !strings.Contains(l, want) {
			t.Errorf("limit %q not applied:\n%s", want, l)
		}
	}
	runCases(t, v, counterItem(t, 50), []caseWant{
		{"good", goodCounter, engine.StatusPass, ""},
		{"infinite-loop", wrapCounter("  always @(posedge clk) if (en) while (1) begin end"), engine.StatusFail, engine.StageTimeout},
		{"huge-memory", wrapCounter("  reg [63:0] mem [0:(1<<28)-1];\n  always @(posedge clk) mem[q] <= {60'd0, q};"), engine.StatusFail, engine.StageResource},
	})
}
