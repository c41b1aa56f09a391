package rtl

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
)

// datasetPath returns a shared dataset file, skipping (or failing under CI)
// when it is absent.
func datasetPath(t testing.TB, rel string) string { return testenv.Dataset(t, rel) }

// loadVerilogEval reads a VerilogEval JSONL through the engine's ingest preset.
func loadVerilogEval(t testing.TB, rel string) []engine.Item {
	t.Helper()
	var items []engine.Item
	g, err := ingest.New(ingest.PresetVerilogEval, ingest.Sink{
		Item: func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error {
			t.Errorf("rejected %s: %s %s", r.ItemID, r.Reason, r.Detail)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.IngestPaths(context.Background(), []string{datasetPath(t, rel)}); err != nil {
		t.Fatal(err)
	}
	return items
}

func requireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if ti := probeTool(n); ti.Err != "" {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s", ti.Err)
			}
			t.Skipf("%s; skipping", ti.Err)
		}
	}
}

func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.TempDir = t.TempDir()
	// The production CPU budgets (relative to the reference, ceiling 120 s):
	// a test must not shrink the reference's budget, or a loaded machine
	// turns a slow reference unjudged.
	cfg.RetryBackoff = time.Millisecond
	// The strength audit simulates ~20 candidates per task; the tests of
	// other behaviour count processes and run all of VerilogEval, so they
	// turn it off. strength_test.go turns it on.
	cfg.StrengthAudit = false
	return cfg
}

func newTestVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	requireTools(t, "iverilog", "vvp", "prlimit")
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// selfCandidates submits each item's reference as its candidate.
func selfCandidates(t testing.TB, items []engine.Item) []engine.Candidate {
	t.Helper()
	var cands []engine.Candidate
	for _, it := range items {
		c, err := ContractFor(it)
		if err != nil {
			t.Fatal(err)
		}
		code, err := c.ReferenceCandidate()
		if err != nil {
			t.Fatalf("%s: %v", it.ItemID, err)
		}
		cands = append(cands, engine.Candidate{ItemID: it.ItemID, CandidateID: "self", Code: code})
	}
	return cands
}
