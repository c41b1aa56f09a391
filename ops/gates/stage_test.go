package gates

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/rtl"
)

// TestPipelineStages runs ingest → evolve → admit from a pipeline YAML and
// checks the outputs and the funnel counters in the run summary.
func TestPipelineStages(t *testing.T) {
	requireTools(t)
	root := testenv.RepoRoot(t)
	seeds := t.TempDir()
	for _, s := range []string{"counter_mod10_tc", "fsm_moore_1011"} {
		if err := os.CopyFS(filepath.Join(seeds, s), os.DirFS(filepath.Join(root, "examples", "seeds", "rtl", s))); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	yml := `name: evolve-test
work_dir: out
stages:
  - name: ingest
    type: ingest
    inputs: [` + seeds + `]
    config: {preset: taskdir}
  - name: verify
    type: verify_rtl
    from: [ingest]
  - name: evolve
    type: evolve
    from: [verify]
    config:
      operators: [counter_modulus, fsm_transition, reset_polarity, dead_code]
      solution_first: true
      tb_cycles: 150
  - name: admit
    type: admit
    from: [evolve]
    config:
      order: [static, strength, audit, dedup, difficulty, compose]
      strength: {max_mutants: 2}
`
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	rtl.RegisterStages(reg)
	evolve.RegisterStages(reg)
	RegisterStages(reg)
	cfg, err := engine.LoadPipeline(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]int64{}
	for _, s := range sum.Stages {
		counts[s.Name] = s.Counts
		t.Logf("%s: rows %v counts %v", s.Name, s.Rows, s.Counts)
	}
	ev, ad := counts["evolve"], counts["admit"]
	// 2 seeds: respecify ×2, reset_polarity ×2, dead_code ×2, counter_modulus ×1, fsm_transition ×1.
	if ev["seeds"] != 2 || ev["candidates"] != 8 {
		t.Errorf("evolve counts %v", ev)
	}
	if ad["candidates"] != 8 || ad["gate1.static.in"] != 8 || ad["rejected.strength.parent_not_distinguished"] != 2 || ad["admitted"] != 6 {
		t.Errorf("admit counts %v", ad)
	}
	out := filepath.Join(dir, "out", "admit")
	m, err := engine.ReadManifest(filepath.Join(out, engine.ManifestName(engine.Shard{Index: 0, Count: 1})))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows("items") != 2+6 || m.Rows(KindYield) < 5 || m.Rows("rejections") != 2 || m.Rows(KindGateEvidence) == 0 {
		t.Errorf("manifest rows: items %d yield %d rejections %d evidence %d", m.Rows("items"), m.Rows(KindYield), m.Rows("rejections"), m.Rows(KindGateEvidence))
	}
	var yfiles []string
	for _, s := range m.Shards {
		if s.Kind == KindYield {
			yfiles = append(yfiles, filepath.Join(out, s.Path))
		}
	}
	rows, err := engine.ReadAll[YieldRow](yfiles...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no yield rows")
	}
	if last := rows[len(rows)-1]; last.Operator != "*" || last.Candidates != 8 || last.Admitted != 6 || len(last.Rejections) != 1 {
		t.Errorf("total yield row %+v", last)
	}
}
