package synth

import (
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func TestBundleHashIsContentAddressed(t *testing.T) {
	items := loadSeeds(t, "mux4_8bit", "counter_up8_en")
	a, b := NewBundle(items[0], "rtl/icarus"), NewBundle(items[0], "rtl/icarus")
	if a.ID != b.ID || len(a.ID) != 64 || a.Check() != nil {
		t.Fatalf("unstable: %s %s", a.ID, b.ID)
	}
	if NewBundle(items[0], "rtl/verilator").ID == a.ID {
		t.Error("toolchain profile not in the hash")
	}
	it := items[0]
	it.Verifier.Harness += "\n// changed"
	if NewBundle(it, "rtl/icarus").ID == a.ID {
		t.Error("harness not in the hash")
	}
	a.Reference += " "
	if a.Check() == nil {
		t.Error("Check missed a changed reference")
	}
	if a.Tag != "rtl/combinational" || NewBundle(items[1], "rtl/icarus").Tag != "rtl/sequential" {
		t.Errorf("tags %s", a.Tag)
	}
	seq := NewBundle(items[1], "rtl/icarus")
	if !strings.Contains(strings.Join(seq.Guidance, "\n"), "reset contract") || strings.Contains(strings.Join(a.Guidance, "\n"), "reset contract") {
		t.Errorf("router guidance: %v / %v", seq.Guidance, a.Guidance)
	}
	k := engine.Item{ItemID: "k", Domain: engine.DomainKernel, Verifier: engine.Verifier{Kind: engine.VerifierKernel},
		Interface: engine.Interface{Tolerance: 1e-3, Args: []engine.KernelArg{{Name: "x", Role: "input", Shape: []int64{1024}, DType: "float32"},
			{Name: "y", Role: "output", Shape: []int64{1024}, DType: "float16"}}}}
	kb := NewBundle(k, "kernel/cuda")
	g := strings.Join(kb.Guidance, "\n")
	if kb.Tag != "kernel/kernel" || !strings.Contains(g, "6144 bytes") || !strings.Contains(g, "x[1024]") || !strings.Contains(g, "launch configuration") {
		t.Errorf("kernel route %s: %s", kb.Tag, g)
	}
}
