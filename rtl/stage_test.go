package rtl

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
)

// TestVerifyRTLStage runs ingest (verilog-eval preset) then verify_rtl in
// a pipeline over three VerilogEval problems, one of whose references
// fails its own harness under Icarus 11.
func TestVerifyRTLStage(t *testing.T) {
	src := datasetPath(t, "verilog-eval/spec-to-rtl.jsonl")
	requireTools(t, "iverilog", "vvp", "prlimit")
	dir := t.TempDir()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var subset []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		for _, id := range []string{`"Prob001_zero"`, `"Prob099_m2014_q6c"`, `"Prob035_count1to10"`} {
			if strings.Contains(sc.Text(), `"id": `+id) {
				subset = append(subset, sc.Text())
			}
		}
	}
	if len(subset) != 3 {
		t.Fatalf("found %d of 3 problems", len(subset))
	}
	if err := os.WriteFile(filepath.Join(dir, "ve.jsonl"), []byte(strings.Join(subset, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := `name: rtl-stage-test
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [ve.jsonl]
    config: {preset: verilog-eval}
  - name: verify
    type: verify_rtl
    from: [ingest]
    config: {workers: 2, sim_timeout: 20s}
`
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	RegisterStages(reg)
	cfg, err := engine.LoadPipeline(filepath.Join(dir, "p.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Runner{Registry: reg}
	if _, err := r.Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := engine.LoadStageOutput(filepath.Join(dir, "work", "verify"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := engine.ReadAll[engine.Item](out.Shards("items")...)
	if err != nil {
		t.Fatal(err)
	}
	rejs, err := engine.ReadAll[engine.Rejection](out.Shards("rejections")...)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := engine.ReadAll[engine.Evidence](out.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || len(rejs) != 1 || len(evs) != 3 {
		t.Fatalf("items %d, rejections %d, evidence %d; want 2, 1, 3", len(items), len(rejs), len(evs))
	}
	for _, it := range items {
		if it.ReferenceStatus != engine.RefVerified {
			t.Errorf("%s: reference_status %q", it.ItemID, it.ReferenceStatus)
		}
		if s := it.VerifierStrength; !s.Measured || s.Weak() || s.TrivialTried == 0 {
			t.Errorf("%s: verifier_strength %+v, want a measured strong harness", it.ItemID, s)
		}
	}
	if !strings.Contains(rejs[0].ItemID, "Prob099") || rejs[0].Reason != "reference_failed" {
		t.Errorf("rejection %+v, want Prob099 reference_failed", rejs[0])
	}
	for _, ev := range evs {
		if ev.CandidateID != ReferenceCandidateID {
			t.Errorf("evidence candidate %q", ev.CandidateID)
		}
	}
}
