package pack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestStageInPipeline runs the pack stage through the engine's runner on
// raw input files and audits what it wrote into its stage directory.
func TestStageInPipeline(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 40)
	cfg := `name: p
work_dir: work
stages:
  - name: pack
    type: pack
    inputs: [` + filepath.Base(in) + `]
    config: {tokenizer: cl100k_base, seq_len: 1024, layout: trl, algorithm: ffs, seed: 3}
`
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	RegisterStages(reg)
	pc, err := engine.LoadPipeline(p, reg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), pc, engine.RunOptions{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Stages[0]
	if st.Rows[KindPacked] == 0 || st.Counts["packed"] == 0 || st.Counts["dropped_too_long"] == 0 {
		t.Fatalf("stage result %+v", st)
	}
	stageDir := filepath.Join(dir, "work", "pack")
	if _, err := os.Stat(filepath.Join(stageDir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(context.Background(), []string{in}, stageDir, 2, quiet)
	if err != nil {
		t.Fatalf("audit of the stage output: %v %+v", err, rep)
	}
}
