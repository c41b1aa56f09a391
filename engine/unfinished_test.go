package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A stage that calls Unfinished commits (its shards and manifest are
// there, the count recorded), but its next run runs again instead of
// skipping; once a run finishes, the run after it skips.
func TestUnfinishedCommitRunsAgain(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("x"), 0o644)
	runs := 0
	unfinishedRuns := 2 // the first two runs leave work undone
	reg := NewRegistry()
	reg.RegisterType(StageType{Name: "resumable", Parallelism: PerPart, Outputs: []string{"nums"},
		Factory: func(StageConfig) (Stage, error) {
			return StageFunc(func(ctx context.Context, sc *StageContext) error {
				runs++
				if runs <= unfinishedRuns {
					sc.Unfinished("an endpoint failed")
				}
				return WriteRows(sc, "nums", []unfinishedRow{{N: int64(runs)}})
			}), nil
		}})
	out := filepath.Join(dir, "out")
	one := OneStage{Spec: StageSpec{Name: "resumable", Type: "resumable", Inputs: []string{in}}, Out: out}
	manifest := func() *Manifest {
		t.Helper()
		m, err := ReadManifest(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	res, _ := runOne(t, reg, one, false)
	if res.Status != "ran" || manifest().Counts[CountUnfinished] != 1 || manifest().Rows("nums") != 1 {
		t.Fatalf("first run: %s, manifest %+v", res.Status, manifest())
	}
	// Unfinished: the same run on the same inputs runs again.
	if res, _ := runOne(t, reg, one, false); res.Status != "ran" || runs != 2 {
		t.Fatalf("rerun after an unfinished commit: %s after %d runs, want ran", res.Status, runs)
	}
	// This one finishes: no unfinished count, and the next run skips.
	res, finished := runOne(t, reg, one, false)
	if res.Status != "ran" || runs != 3 {
		t.Fatalf("third run: %s after %d runs, want ran", res.Status, runs)
	}
	if _, ok := manifest().Counts[CountUnfinished]; ok {
		t.Fatalf("a finished run recorded %s: %+v", CountUnfinished, manifest().Counts)
	}
	res, again := runOne(t, reg, one, false)
	if res.Status != "skipped" || runs != 3 || string(again) != string(finished) {
		t.Fatalf("rerun after a finished commit: %s after %d runs (manifest changed: %v), want skipped", res.Status, runs, string(again) != string(finished))
	}
}

type unfinishedRow struct {
	N int64 `parquet:"n"`
}
