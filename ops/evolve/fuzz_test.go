package evolve

import (
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// FuzzOperators: every operator returns a mutation or an error on any
// parseable text; none panics.
func FuzzOperators(f *testing.F) {
	for _, s := range []string{counterSrc, asyncSrc, fsmSrc, combSrc} {
		f.Add(s, "clk", "rst", true)
	}
	f.Fuzz(func(t *testing.T, src, clk, rst string, low bool) {
		d, err := vlog.Parse(src, "RefModule")
		if err != nil {
			return
		}
		iface := engine.Interface{Clock: clk, Reset: rst, ResetPolarity: "high", ResetKind: "sync",
			Ports: []engine.Port{{Name: clk, Direction: "input", Width: 1}, {Name: rst, Direction: "input", Width: 1}}}
		if low {
			iface.ResetPolarity, iface.ResetKind = "low", "async"
		}
		for _, op := range Operators() {
			_, _ = op.Apply(d, iface)
		}
		_, _ = Mutants(src, iface, 4)
	})
}
