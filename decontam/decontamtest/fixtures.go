// Package decontamtest holds the fixtures that the decontam package's
// tests and the decontam command's tests share: a VerilogEval problem
// re-encoded so that lexical matching cannot see it, a kernel seed
// rewritten likewise, and writers of benchmark subsets, so both suites
// exercise one rewrite.
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

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/kernels"
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

// MatmulRewrite is the matmul_f32_64 kernel seed rewritten: another name,
// arguments renamed and reordered (the right operand first), a row-pointer
// loop. Behaviourally the seed under the mapping a=p, b=q, c=out, n=size.
const MatmulRewrite = `#include <stdint.h>
void mm_rewrite(float *out, const float *q, const float *p, int64_t size) {
	for (int64_t r = 0; r < size; r++) {
		const float *prow = p + r * size;
		for (int64_t col = 0; col < size; col++) {
			double s = 0;
			for (int64_t t = 0; t < size; t++) s += (double)prow[t] * q[t * size + col];
			out[r * size + col] = (float)s;
		}
	}
}
`

// AddSameShape has MatmulRewrite's signature and adds instead: it runs
// against matmul_f32_64 and must not match.
const AddSameShape = `#include <stdint.h>
void addmat(const float *x, const float *y, float *z, int64_t n) {
	for (int64_t i = 0; i < n * n; i++) z[i] = x[i] + y[i];
}
`

// KernelItem is a CPU kernel item over 64×64 float32 matrices: arguments
// named out or z are outputs, size or n the int64 scalar 64, the others
// inputs, in the order given.
func KernelItem(id, top, ref string, names ...string) engine.Item {
	roles := map[string]string{"out": "output", "z": "output", "size": "scalar", "n": "scalar"}
	it := engine.Item{ItemID: id, Domain: engine.DomainKernel, Instruction: "A 64x64 float kernel.", Reference: ref,
		Verifier: engine.Verifier{Kind: engine.VerifierKernel, Harness: "cpu", Top: top}}
	for _, n := range names {
		a := engine.KernelArg{Name: n, Role: roles[n], Shape: []int64{64, 64}, DType: "float32"}
		switch a.Role {
		case "":
			a.Role = "input"
		case "scalar":
			a.Shape, a.DType = []int64{64}, "int64"
		}
		it.Interface.Args = append(it.Interface.Args, a)
	}
	return it
}

// WriteKernelBench writes the named kernel seeds of examples/seeds/kernel
// to dir/kbench.jsonl as item rows (ids in item_id), a benchmark of CPU
// kernel problems.
func WriteKernelBench(t testing.TB, dir string, seeds ...string) string {
	t.Helper()
	var b strings.Builder
	for _, seed := range seeds {
		it, err := kernels.LoadSeedDir(filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "kernel", seed))
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(it)
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, "kbench.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// RequireKernelCC skips t (fails it under CI) unless gcc, which the kernel
// CPU backend compiles with, is on PATH.
func RequireKernelCC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc not found (CI is set)")
		}
		t.Skip("gcc not found; the kernel CPU backend needs it")
	}
}

// WriteJSONL writes each row as one JSON line of dir/name and returns the
// file's path.
func WriteJSONL(t testing.TB, dir, name string, rows ...any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
