package synth

import (
	"context"
	"encoding/json"
	"github.com/crucible-data/crucible/internal/testenv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/ops/pack"
)

func readKind[T any](t *testing.T, dir, kind string) []T {
	t.Helper()
	out, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[T](out.Shards(kind)...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// ingest -> synthesize -> pack through the engine's runner: the pack stage
// renders the trajectories rows as they are, and a re-run after a config
// change moves the stale journal aside.
func TestSynthesizeStageFeedsPack(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	srv := startServer(t, &scriptedGenerator{t: t, items: items})
	seeds := t.TempDir()
	for _, s := range testSeeds {
		if err := os.CopyFS(filepath.Join(seeds, s), os.DirFS(filepath.Join(testenv.RepoRoot(t), "examples", "seeds", "rtl", s))); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	yml := func(rounds int) string {
		return `name: synth-test
work_dir: out
stages:
  - name: ingest
    type: ingest
    inputs: [` + seeds + `]
    config: {preset: taskdir}
  - name: synth
    type: synthesize
    from: [ingest]
    config:
      rounds: ` + itoa(int32(rounds)) + `
      concurrency: 3
      generator: {base_url: "` + srv.URL + `", model: scripted, api_key_env: "", timeout: 5s, backoff: 1ms, max_backoff: 10ms}
  - name: pack
    type: pack
    from: [synth]
    config: {tokenizer: cl100k_base, seq_len: 4096, layout: trl, algorithm: ffs, seed: 3}
`
	}
	run := func(rounds int) *engine.RunSummary {
		path := filepath.Join(dir, "pipeline.yaml")
		if err := os.WriteFile(path, []byte(yml(rounds)), 0o644); err != nil {
			t.Fatal(err)
		}
		reg := engine.NewRegistry()
		ingest.RegisterStages(reg)
		RegisterStages(reg)
		pack.RegisterStages(reg)
		cfg, err := engine.LoadPipeline(path, reg)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	sum := run(4)
	st := sum.Stages[1]
	if st.Rows[KindPack] != 3 || st.Rows[KindRecords] != 3 || st.Rows[KindPairs] != 9 || st.Counts["rtl.pass_at_round_3"] != 3 || st.Rows[KindChatLog] != 9 {
		t.Fatalf("synth stage: rows %v counts %v", st.Rows, st.Counts)
	}
	if p := sum.Stages[2]; p.Counts["packed"] != 3 {
		t.Fatalf("pack stage: %+v", p)
	}
	synthDir := filepath.Join(dir, "out", "synth")
	recs := readKind[TrajectoryRecord](t, synthDir, KindRecords)
	if len(recs) != 3 || len(recs[0].Turns) != 3 || recs[0].Turns[1].Observation.Outcome != OutcomeSimulationMismatch || recs[0].Turns[0].Reasoning == "" {
		t.Fatalf("records round trip: %+v", recs)
	}
	var s Summary
	data, err := os.ReadFile(filepath.Join(synthDir, SummaryFile))
	if err != nil || json.Unmarshal(data, &s) != nil || s.Domains[0].Passed != 3 {
		t.Fatalf("summary: %v %s", err, data)
	}
	// Fewer rounds: another configuration; the old journal is moved aside.
	sum = run(2)
	if st := sum.Stages[1]; st.Status != "ran" || st.Counts["rtl.failed"] != 3 {
		t.Fatalf("re-run: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(synthDir, "synth-journal.jsonl.stale")); err != nil {
		t.Fatal(err)
	}
}
