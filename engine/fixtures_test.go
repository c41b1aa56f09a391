package engine

import (
	"fmt"
	"math/rand"
	"strings"
	"time"
)

// randomItem builds an item with every field set, from a seeded source.
func randomItem(r *rand.Rand, i int) Item {
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyzé漢"
		var b strings.Builder
		for k := 0; k < 1+r.Intn(12); k++ {
			b.WriteString(string([]rune(letters)[r.Intn(len([]rune(letters)))]))
		}
		return b.String()
	}
	ports := make([]Port, r.Intn(5))
	for k := range ports {
		ports[k] = Port{Name: fmt.Sprintf("p%d_%s", k, word()), Direction: []string{"input", "output", "inout"}[r.Intn(3)], Width: int32(1 + r.Intn(64)), Signed: r.Intn(2) == 0}
	}
	args := make([]KernelArg, r.Intn(3))
	for k := range args {
		args[k] = KernelArg{Name: word(), Role: "input", Shape: []int64{int64(1 + r.Intn(9)), int64(1 + r.Intn(1024))}, DType: "float32"}
	}
	return Item{
		ItemID: fmt.Sprintf("item-%05d", i), ParentID: word(), LineageID: word(),
		Domain: []string{DomainRTL, DomainKernel}[r.Intn(2)], Family: word(), Route: RouteSeed, Operator: word(),
		Instruction: strings.Repeat(word()+" ", r.Intn(50)),
		Interface: Interface{Top: "TopModule", Ports: ports, Clock: "clk", Reset: "rst", ResetPolarity: "high", ResetKind: "sync",
			Args: args, Tolerance: r.Float64(), AllowDelegation: r.Intn(2) == 0},
		Reference:       "module RefModule(); endmodule // " + word(),
		Verifier:        Verifier{Kind: VerifierDifferential, Harness: "module tb; endmodule", Top: "tb", PassMarker: word()},
		ReferenceStatus: RefVerified, Difficulty: float64(r.Intn(5)), Cost: r.Float64() * 10,
		Provenance: Provenance{Source: word(), License: "MIT", InstructionSHA256: word(), ReferenceSHA256: word(), VerifierSHA256: word(),
			IngestTime: time.Unix(1700000000+int64(r.Intn(1e6)), int64(r.Intn(1e6))*1000).UTC()},
		VerifierStrength: VerifierStrength{Measured: r.Intn(2) == 0, TrivialKilled: int32(r.Intn(20)), TrivialTried: 20,
			MutantKilled: int32(r.Intn(9)), MutantTried: 8, Survivors: []string{"trivial:all_x", "mutant:" + word()}[:r.Intn(3)]},
	}
}

func randomEvidence(r *rand.Rand, i int) Evidence {
	return Evidence{
		ItemID: fmt.Sprintf("item-%05d", i), CandidateID: fmt.Sprintf("c%d", r.Intn(100)),
		Status: []string{StatusPass, StatusFail, StatusUnjudged}[r.Intn(3)], FailureStage: StageMismatch, Cause: "x",
		Measurements: []Measurement{IntM("mismatches", int64(r.Intn(10))), FloatM("wall_s", r.Float64()), TextM("note", "ok")},
		Provenance: EvidenceProvenance{Verifier: "rtl/differential", Toolchain: []Tool{{"iverilog", "11.0"}}, Flags: []string{"-g2012"},
			Inputs: []InputHash{{"candidate", "abc"}}},
		Attempts: int32(1 + r.Intn(3)), LogExcerpt: strings.Repeat("log ", r.Intn(20)),
	}
}
