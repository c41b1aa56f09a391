package rtl

import "testing"

// BenchmarkGoSideWork measures the verifier's in-process work per task
// (contract, token checks, recorder insertion, harness rewrite) over the VerilogEval references,
// excluding the simulator processes.
func BenchmarkGoSideWork(b *testing.B) {
	items := loadVerilogEval(b, "verilog-eval/spec-to-rtl.jsonl")
	cands := selfCandidates(b, items)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, it := range items {
			c, err := ContractFor(it)
			if err != nil {
				b.Fatal(err)
			}
			a, _ := c.Assemble(cands[k].Code)
			checkTokens(a)
			ref, err := c.dutReference()
			if err != nil {
				b.Fatal(err)
			}
			if _, _, _, err := instrumentedReference(ref, c.DUT(), false); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.trustedRun(newSecret(), false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(items)), "us/task")
}
