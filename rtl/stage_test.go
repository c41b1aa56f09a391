package rtl

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
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
	stagetest.Run(t, dir, pipeline, RegisterStages)
	o := stagetest.Read(t, dir, "verify")
	items, rejs, evs := o.Items, o.Rejections, o.Evidence
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
