package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// keepRegistry adds a "keep" stage to the test registry: it keeps the
// upstream rows only in shard part keep_part (-1: in every part, -2: in
// none) and writes the others as rejections with reason "dropped_by_test".
func keepRegistry() *Registry {
	reg := testRegistry(map[string]int{})
	reg.Register("keep", func(c StageConfig) (Stage, error) {
		var cfg struct {
			KeepPart int `yaml:"keep_part"`
		}
		if err := c.Decode(&cfg); err != nil {
			return nil, err
		}
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			rows, err := ReadInputs[numRow](sc, "nums")
			if err != nil {
				return err
			}
			kept, _ := StageWriter[numRow](sc, "nums")
			rej, _ := StageWriter[Rejection](sc, "rejections")
			keep := cfg.KeepPart == -1 || cfg.KeepPart == sc.Shard.Index
			for _, r := range rows {
				if keep {
					err = kept.Write(r)
				} else {
					err = rej.Write(Rejection{Stage: sc.Name, Gate: "test", Reason: "dropped_by_test"})
				}
				if err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test keep")
	return reg
}

func keepPipeline(t *testing.T, dir, keepPart, extra string) string {
	return writePipeline(t, dir, "5", `  - name: keep
    type: keep
    from: [dbl]
    config: {keep_part: `+keepPart+`}
`+extra)
}

// Issue 16.2: a stage with input and no output fails the run with ErrYield
// naming it, its counts and reasons, on every run (skipped too).
func TestYieldCheckEmptyOutput(t *testing.T) {
	reg := keepRegistry()
	p := keepPipeline(t, t.TempDir(), "-2", "")
	for run := 0; run < 2; run++ {
		sum, err := runPipeline(t, p, reg, RunOptions{})
		if !errors.Is(err, ErrYield) || !strings.Contains(err.Error(), "stage keep: 20 input rows, nothing passed on (20 rejected)") ||
			!strings.Contains(err.Error(), "test/dropped_by_test 20") {
			t.Fatalf("run %d: %v", run, err)
		}
		last := sum.Stages[len(sum.Stages)-1]
		if last.Name != "keep" || last.Yield == nil || last.Yield.Failure == "" || (run == 1 && last.Status != "skipped") {
			t.Fatalf("run %d: summary %+v", run, last)
		}
	}
	// A limit on a stage is validated and applied.
	p = keepPipeline(t, t.TempDir(), "-1", "    max_reject_fraction: 0\n")
	if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
		t.Fatalf("nothing rejected under max_reject_fraction 0: %v", err)
	}
}

// In a sharded run one part may pass nothing on; the check covers the
// whole stage once every part has committed.
func TestYieldCheckShardedParts(t *testing.T) {
	reg := keepRegistry()
	for _, tc := range []struct {
		keepPart string
		fail     bool
	}{{"0", false}, {"-2", true}} {
		p := keepPipeline(t, t.TempDir(), tc.keepPart, "")
		if _, err := runPipeline(t, p, reg, RunOptions{Shard: Shard{Index: 1, Count: 2}}); err != nil {
			t.Fatalf("keep_part %s: part 1 alone: %v", tc.keepPart, err)
		}
		_, err := runPipeline(t, p, reg, RunOptions{Shard: Shard{Index: 0, Count: 2}})
		if got := errors.Is(err, ErrYield); got != tc.fail {
			t.Errorf("keep_part %s: last part: %v, want failure %v", tc.keepPart, err, tc.fail)
		}
	}
}
