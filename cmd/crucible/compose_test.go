package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/ops/selection"
)

// `crucible compose` is the compose stage run through the pipeline runner:
// a second identical run skips; a changed flag, a --set key, a changed
// --restrict-to file or a changed items file runs it again.
func TestComposeSkipsWhenCurrent(t *testing.T) {
	dir := t.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	var rows []any
	for i := 0; i < 6; i++ {
		it := and4Item(t)
		it.ItemID, it.LineageID = fmt.Sprintf("and4-%d", i), fmt.Sprintf("root-%d", i%3)
		rows = append(rows, it)
	}
	writeJSONL(t, items, rows...)
	gap := filepath.Join(dir, "gap.jsonl")
	writeJSONL(t, gap, selection.TaskSelection{TaskID: "and4-1"}, selection.TaskSelection{TaskID: "and4-2"})
	out := filepath.Join(dir, "out")
	args := []string{"compose", "--no-progress", "--items", items, "--out", out, "--require-verified=false", "--validation-fraction", "0"}
	expectRun(t, out, "ran", "train 6 items from 3 lineages", args...)
	expectRun(t, out, "skipped", "train", args...)
	expectRun(t, out, "ran", "train 3 items from 3 lineages", append(args, "--lineage-cap", "1")...)
	expectRun(t, out, "ran", "train 6 items", append(args, "--set", "targets.domain.rtl=1")...)
	expectRun(t, out, "skipped", "train", append(args, "--set", "targets.domain.rtl=1")...)
	expectRun(t, out, "ran", "train 2 items", append(args, "--restrict-to", gap)...)
	writeJSONL(t, gap, selection.TaskSelection{TaskID: "and4-1"})
	expectRun(t, out, "ran", "train 1 items", append(args, "--restrict-to", gap)...)
	writeJSONL(t, items, rows[:4]...)
	expectRun(t, out, "ran", "train 4 items", args...)
}
