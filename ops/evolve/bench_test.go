package evolve

import (
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// BenchmarkOperators parses each bundled seed reference and applies every
// operator (no tools run): the CPU cost of mutation itself.
func BenchmarkOperators(b *testing.B) {
	seeds := bundledSeeds(b)
	ifaces := make([]engine.Interface, len(seeds))
	for i, s := range seeds {
		ifaces[i] = s.Interface
		ifaces[i].Clock, ifaces[i].Reset, ifaces[i].ResetPolarity, ifaces[i].ResetKind = "clk", "rst", "high", "sync"
	}
	ops := Operators()
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for k, s := range seeds {
			d, err := vlog.Parse(s.Reference, "RefModule")
			if err != nil {
				b.Fatal(err)
			}
			for _, op := range ops {
				if _, err := op.Apply(d, ifaces[k]); err == nil {
					n++
				}
			}
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "mutations/op")
}
