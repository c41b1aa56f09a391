package gates

import (
	"os"
	"testing"

	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
)

// TestVerilogEvalFull evolves every spec-to-rtl reference (minutes on two
// cores): run with CRUCIBLE_EVOLVE_FULL=1 for the full yield report.
func TestVerilogEvalFull(t *testing.T) {
	if os.Getenv("CRUCIBLE_EVOLVE_FULL") == "" {
		t.Skip("set CRUCIBLE_EVOLVE_FULL=1 to evolve all 156 VerilogEval references")
	}
	all := loadItems(t, ingest.PresetVerilogEval, testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl"))
	_, res := evolveAndAdmit(t, all, evolve.DefaultOperatorNames(), nil)
	perOp := checkInvariant(t, res)
	t.Logf("admitted per operator: %v", perOp)
	for _, op := range evolve.DefaultOperatorNames() {
		if perOp[op] == 0 {
			t.Errorf("operator %s: nothing admitted over VerilogEval", op)
		}
	}
}
