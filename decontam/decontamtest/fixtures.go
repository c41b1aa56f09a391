// Package decontamtest holds the fixtures that the decontam package's
// tests and the decontam command's tests share: a VerilogEval problem
// re-encoded so that lexical matching cannot see it, and a benchmark
// subset writer, so both suites exercise one rewrite.
package decontamtest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/internal/testenv"
)

// FaddLUT is VerilogEval's Prob027_fadd as a case table, ports renamed and
// reordered: lexically clean, behaviourally the problem.
const FaddLUT = `module adder_lut (output reg s_q, output reg c_q, input z, input y, input x);
  always @(*) begin
    case ({x, y, z})
      3'b000: {c_q, s_q} = 2'b00;
      3'b001: {c_q, s_q} = 2'b01;
      3'b010: {c_q, s_q} = 2'b01;
      3'b011: {c_q, s_q} = 2'b10;
      3'b100: {c_q, s_q} = 2'b01;
      3'b101: {c_q, s_q} = 2'b10;
      3'b110: {c_q, s_q} = 2'b10;
      default: {c_q, s_q} = 2'b11;
    endcase
  end
endmodule
`

// FaddLookalike has FaddLUT's interface and another function (the carry is
// an OR): it is simulated against Prob027_fadd and must not match.
const FaddLookalike = "module near_adder (input x, input y, input z, output s_q, output c_q);\n  assign s_q = x ^ y ^ z;\n  assign c_q = x | y | z;\nendmodule\n"

// WriteBenchSubset copies the named VerilogEval spec-to-rtl rows to
// dir/bench.jsonl (the dataset as testenv.Dataset finds it: a skip, or a
// failure under CI, when it is missing).
func WriteBenchSubset(t testing.TB, dir string, ids ...string) string {
	t.Helper()
	f, err := os.Open(testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var row struct{ ID string }
		if json.Unmarshal(sc.Bytes(), &row) == nil && slices.Contains(ids, row.ID) {
			out = append(out, sc.Text())
		}
	}
	if len(out) != len(ids) {
		t.Fatalf("found %d of %v", len(out), ids)
	}
	p := filepath.Join(dir, "bench.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// RequireBehaviouralTools skips t (fails it under CI) unless Icarus
// Verilog and Yosys, which behavioural matching runs, are on PATH.
func RequireBehaviouralTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"iverilog", "vvp", "yosys"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found (CI is set)", tool)
			}
			t.Skipf("%s not found; behavioural matching needs Icarus and Yosys", tool)
		}
	}
}
