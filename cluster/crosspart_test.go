package cluster

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // an independent reader of the shards

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// writeCrossPartFixture writes items with planted near and exact
// duplicates of earlier items in later files (so across shard parts), and
// SFT trajectories of varied lengths in 4 files.
func writeCrossPartFixture(t *testing.T, dir string) (items, trajs string) {
	t.Helper()
	items, trajs = filepath.Join(dir, "items"), filepath.Join(dir, "trajs")
	os.MkdirAll(items, 0o755)
	os.MkdirAll(trajs, 0o755)
	syn := dedup.NewSynth(dedup.SynthConfig{N: 240, DocWords: 80, Vocab: 2000, DupFrac: 0.3, EditsMin: 1, EditsMax: 3, ExactFrac: 0.2, Seed: 3})
	for f := range 4 {
		var b, tb bytes.Buffer
		for i := f * 60; i < (f+1)*60; i++ {
			row := map[string]any{"item_id": syn.ID(i), "domain": "rtl", "family": "f", "instruction": syn.Text(i),
				"reference": "module RefModule(); endmodule", "verifier": map[string]any{"kind": "differential", "harness": "module tb; endmodule"}}
			line, _ := json.Marshal(row)
			b.Write(append(line, '\n'))
			tr := map[string]any{"id": fmt.Sprintf("t%04d", i), "domain": "rtl", "family": "f", "messages": []map[string]string{
				{"role": "user", "content": syn.Text(i)}, {"role": "assistant", "content": strings.Repeat(syn.Text(i)+" ", 1+i%5)}}}
			line, _ = json.Marshal(tr)
			tb.Write(append(line, '\n'))
		}
		os.WriteFile(filepath.Join(items, fmt.Sprintf("items-%d.jsonl", f)), b.Bytes(), 0o644)
		os.WriteFile(filepath.Join(trajs, fmt.Sprintf("trajs-%d.jsonl", f)), tb.Bytes(), 0o644)
	}
	return items, trajs
}

const crossPartPack = `{tokenizer: cl100k_base, seq_len: 2048, layout: megatron, seed: 5}`

// TestCrossPartDedupAndPackMatchUnsharded (issue 17): a pipeline with
// duplicates across parts and packing across parts, run as 4-part Slurm
// array jobs (sign/merge/filter, lengths/plan/write) and again as
// `crucible build --shard i/4` by hand, keeps exactly the unsharded
// single-process build's items, rejections and packed rows, compared by
// DuckDB.
func TestCrossPartDedupAndPackMatchUnsharded(t *testing.T) {
	startSlurm(t)
	bin := crucibleBinary(t)
	dir := t.TempDir()
	items, trajs := writeCrossPartFixture(t, dir)
	dd := `{fields: [instruction], threshold: 0.7}`
	single := writePipelineAs(t, dir, "single.yaml", fmt.Sprintf(`name: single
work_dir: single
stages:
  - {name: ingest, type: ingest, inputs: [%s]}
  - {name: dedup, type: dedup, from: [ingest], config: %s}
  - {name: pack, type: pack, inputs: [%s], config: %s}
`, items, dd, trajs, crossPartPack))
	split := writePipelineAs(t, dir, "split.yaml", fmt.Sprintf(`name: split
work_dir: split
stages:
  - {name: ingest, type: ingest, inputs: [%s]}
  - {name: sign, type: dedup_sign, from: [ingest], config: %s}
  - {name: merge, type: dedup_merge, from: [sign], config: %s}
  - {name: dedup, type: dedup_filter, from: [ingest, merge]}
  - {name: lengths, type: pack_lengths, inputs: [%s], config: %s}
  - {name: plan, type: pack_plan, from: [lengths], config: %s}
  - {name: pack, type: pack_write, from: [plan], config: %s}
`, items, dd, dd, trajs, crossPartPack, crossPartPack, crossPartPack))
	localBuild(t, single, filepath.Join(dir, "single"))

	// On Slurm: global stages one task, the rest 4.
	work := filepath.Join(dir, "slurm")
	cfg := loadPipeline(t, split, work)
	ec := DefaultConfig()
	ec.Poll = 200 * time.Millisecond
	ec.Resources.Memory = "512M"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run, err := RunSlurm(ctx, cfg, SlurmOptions{ConfigPath: split, Executor: ec, Binary: bin, Registry: testRegistry(), Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"ingest": 4, "sign": 4, "merge": 1, "dedup": 4, "lengths": 4, "plan": 1, "pack": 4}
	for _, j := range run.Jobs {
		if len(j.Parts) != want[j.Stage] {
			t.Errorf("stage %s ran as %d tasks, want %d", j.Stage, len(j.Parts), want[j.Stage])
		}
	}

	// By hand: each part stops (exit 5) at the first global stage whose
	// upstream parts are not all committed; rounds until none does.
	byHand := filepath.Join(dir, "hand")
	for round := 0; ; round++ {
		if round > 4 {
			t.Fatal("by-hand parts did not converge in 4 rounds")
		}
		waiting := 0
		for i := range 4 {
			out, err := exec.Command(bin, "build", "--config", split, "--work-dir", byHand, "--shard", fmt.Sprintf("%d/4", i),
				"--no-progress", "--log-level", "warn").CombinedOutput()
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee) && ee.ExitCode() == 5 && strings.Contains(string(out), "is global"):
				waiting++
			default:
				t.Fatalf("round %d part %d/4: %v\n%s", round, i, err, out)
			}
		}
		if round == 0 && waiting == 0 {
			t.Fatal("no part waited for a global stage in the first round: the parts ran global stages split")
		}
		if waiting == 0 {
			break
		}
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := func(work, stage, kind string) string {
		out, err := engine.LoadStageOutput(filepath.Join(work, stage))
		if err != nil {
			t.Fatal(err)
		}
		var q []string
		for _, p := range out.Shards(kind) {
			q = append(q, "'"+p+"'")
		}
		if len(q) == 0 {
			return ""
		}
		return "read_parquet([" + strings.Join(q, ",") + "])"
	}
	ref := filepath.Join(dir, "single")
	for _, got := range []string{work, byHand} {
		for _, c := range []struct{ stage, kind, cols string }{
			{"dedup", "items", "item_id, instruction"},
			{"dedup", "rejections", "item_id, gate, reason, detail"},
			{"pack", "packed", "*"},
		} {
			a, b := files(ref, c.stage, c.kind), files(got, c.stage, c.kind)
			if a == "" || b == "" {
				t.Fatalf("%s %s/%s: no shards (reference %q, split %q)", got, c.stage, c.kind, a, b)
			}
			var n, diff int
			q := fmt.Sprintf("SELECT (SELECT count(*) FROM %[1]s), (SELECT count(*) FROM ((SELECT %[3]s FROM %[1]s EXCEPT ALL SELECT %[3]s FROM %[2]s) UNION ALL (SELECT %[3]s FROM %[2]s EXCEPT ALL SELECT %[3]s FROM %[1]s)))", a, b, c.cols)
			if err := db.QueryRow(q).Scan(&n, &diff); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if n == 0 || diff != 0 {
				t.Errorf("%s %s/%s: %d rows in the unsharded build, %d differ", filepath.Base(got), c.stage, c.kind, n, diff)
			}
		}
	}
	// The fixture has cross-part duplicates: without them the test proves nothing.
	var rejected int
	db.QueryRow("SELECT count(*) FROM " + files(ref, "dedup", "rejections")).Scan(&rejected)
	if rejected < 20 {
		t.Fatalf("only %d duplicates in the fixture", rejected)
	}
}

func writePipelineAs(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
