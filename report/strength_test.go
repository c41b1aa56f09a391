package report

import (
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestHarnessStrengthFigure: per-family aggregates and the weakest tasks
// (weak first, then by kill rate), from item fields and from reference
// evidence measurements alike, and the page shows them.
func TestHarnessStrengthFigure(t *testing.T) {
	fromEv, ok := strengthFromMeasurements([]engine.Measurement{
		engine.IntM("strength_trivial_killed", 10), engine.IntM("strength_trivial_tried", 11),
		engine.IntM("strength_mutants_killed", 3), engine.IntM("strength_mutants_tried", 8),
		engine.TextM("strength_survivors", "trivial:all_x, mutant:netlist_2")})
	if !ok || !fromEv.Weak() || len(fromEv.Survivors) != 2 {
		t.Fatalf("from measurements: %+v %v", fromEv, ok)
	}
	byID := map[string]engine.VerifierStrength{
		"a": {Measured: true, TrivialKilled: 8, TrivialTried: 8, MutantKilled: 8, MutantTried: 8},
		"b": {Measured: true, TrivialKilled: 8, TrivialTried: 8, MutantKilled: 6, MutantTried: 8, Survivors: []string{"mutant:x", "mutant:y"}},
		"c": fromEv,
		"d": {Measured: true, TrivialKilled: 5, TrivialTried: 5}, // nothing to mutate
	}
	fam := map[string]string{"a": "rtl/counter", "b": "rtl/counter", "c": "rtl/alu", "d": "rtl/alu"}
	hs := harnessStrength(byID, fam)
	if hs.Tasks != 4 || hs.Weak != 1 || len(hs.Families) != 2 {
		t.Fatalf("figure %+v", hs)
	}
	if c := hs.Families[1]; c.Family != "rtl/counter" || c.MeanMutantKillRate != 0.875 || c.MinMutantKillRate != 0.75 {
		t.Errorf("counter family %+v", c)
	}
	if got := []string{hs.Weakest[0].ItemID, hs.Weakest[1].ItemID}; got[0] != "c" || got[1] != "b" {
		t.Errorf("weakest order %v, want c (weak) then b (75%%)", got)
	}
	page, err := RenderHTML(&Report{Strength: hs})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="strength"`, "rtl/counter", "trivial:all_x, mutant:netlist_2", "(weak)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page, _ := RenderHTML(&Report{}); strings.Contains(string(page), `id="strength"`) {
		t.Error("a report without strength figures shows the section")
	}
}
