package rtl

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// TestLimitsApplied reads /proc/<pid>/limits of the running tools under
// both ways of applying limits, and checks that the known-bad candidates
// that depend on them still end at the right stage.
func TestLimitsApplied(t *testing.T) {
	for _, traced := range []bool{true, false} {
		name := "prlimit"
		if traced {
			name = "ptrace"
			if !ptraceLimitsWork() {
				t.Log("ptrace not permitted here; only the prlimit(1) path is tested")
				continue
			}
		}
		t.Run(name, func(t *testing.T) {
			old := useTracedStart
			useTracedStart = func() bool { return traced }
			defer func() { useTracedStart = old }()
			cfg := testConfig(t)
			cfg.Limits.CPUSeconds, cfg.Limits.CPUFloorSeconds = 2, 2 // the reference's and every candidate's budget
			cfg.Limits.AddressSpaceBytes = 1 << 30
			v := newTestVerifier(t, cfg)
			var mu sync.Mutex
			var limits []string
			v.onProcessStart = func(phase string, pid int) {
				proc := "/proc/" + strconv.Itoa(pid)
				// Under prlimit(1) the limits exist once it has exec'd the tool.
				for i := 0; i < 2000; i++ {
					comm, err := os.ReadFile(proc + "/comm")
					if err != nil || strings.TrimSpace(string(comm)) != "prlimit" {
						break
					}
					time.Sleep(time.Millisecond)
				}
				b, err := os.ReadFile(proc + "/limits")
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					limits = append(limits, phase+"\n"+string(b))
				}
			}
			runCases(t, v, counterItem(t, 50), []caseWant{
				{"good", goodCounter, engine.StatusPass, ""},
				{"infinite-loop", wrapCounter("  always @(posedge clk) if (en) while (1) begin end"), engine.StatusFail, engine.StageTimeout},
				{"huge-memory", wrapCounter("  reg [63:0] mem [0:(1<<28)-1];\n  always @(posedge clk) mem[q] <= {60'd0, q};"), engine.StatusFail, engine.StageResource},
			})
			mu.Lock()
			defer mu.Unlock()
			if len(limits) == 0 {
				t.Fatal("no process limits observed")
			}
			for _, l := range limits {
				if !strings.Contains(l, "Max address space         1073741824") {
					t.Errorf("address-space limit not applied:\n%s", l)
				}
				if strings.HasPrefix(l, "run") && !strings.Contains(l, "Max cpu time              2                    3") {
					t.Errorf("cpu limit not applied to a run:\n%s", l)
				}
				if !strings.Contains(l, "Max file size             "+strconv.FormatInt(cfg.Limits.FileSizeBytes, 10)) {
					t.Errorf("file-size limit not applied:\n%s", l)
				}
			}
		})
	}
}
