package compose

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// benchPool: n items in n/10 lineages, 20 families, 4 routes, 2 domains.
func benchPool(n int) []engine.Item {
	r := rand.New(rand.NewPCG(5, 6))
	routes := []string{engine.RouteSeed, engine.RouteSolutionFirst, engine.RouteInstructionFirst, engine.RouteContractMutation}
	items := make([]engine.Item, n)
	for i := range items {
		items[i] = engine.Item{ItemID: fmt.Sprintf("it%07d", i), LineageID: fmt.Sprintf("L%06d", r.IntN(n/10+1)),
			Domain: []string{engine.DomainRTL, engine.DomainKernel}[r.IntN(2)], Family: fmt.Sprintf("fam%02d", r.IntN(20)),
			Route: routes[r.IntN(4)], ReferenceStatus: engine.RefVerified, Difficulty: r.Float64(), Cost: r.Float64() * 20}
	}
	return items
}

func BenchmarkCompose100k(b *testing.B) {
	items := benchPool(100_000)
	cfg := DefaultConfig()
	cfg.TrainSize = 40_000
	cfg.Targets = map[string]map[string]float64{DimDomain: {"rtl": 0.7, "kernel": 0.3}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compose(items, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
