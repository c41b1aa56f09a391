package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

type idsOut struct {
	ID     string `arrow:"id"`
	Text   string `arrow:"text"`
	Reason string `arrow:"_dedup_reason"`
}

// A repeated id (issue 18: it0000001 appeared twice in kept) is exit 3
// naming the id and both rows, or with --on-duplicate-id keep-first the
// later rows become duplicate_id rejections and the rest is deduplicated as
// if they were not there.
func TestDedupDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(`{"id":"x1","text":"module alpha counts up on every clock edge when enable is set"}
{"id":"x2","text":"a completely different design that shifts a register left by one"}
`), 0o644)
	os.WriteFile(b, []byte(`{"id":"x3","text":"module alpha counts up on every clock edge when enable is set"}
{"id":"x2","text":"yet another text that happens to reuse the id of an earlier row"}
`), 0o644)
	o := DedupOptions{In: []string{a, b}, IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, "out"),
		Config: dedup.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &bytes.Buffer{}}
	err := runDedup(context.Background(), o)
	if !errors.Is(err, engine.ErrInput) || exitCode(context.Background(), err) != exitInput ||
		!strings.Contains(err.Error(), `"x2"`) || !strings.Contains(err.Error(), "row 2 of "+a) || !strings.Contains(err.Error(), "row 2 of "+b) {
		t.Fatalf("duplicate id: err = %v, want exit 3 naming x2, row 2 of a.jsonl and row 2 of b.jsonl", err)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "manifest.json")); !os.IsNotExist(err) {
		t.Fatal("a refused run committed a manifest")
	}

	o.OnDupID = onDupKeepFirst
	if err := runDedup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	out, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := engine.ReadAll[idsOut](out.Shards("kept")...)
	rej, _ := engine.ReadAll[idsOut](out.Shards("removed")...)
	var keptIDs, rejected []string
	for _, k := range kept {
		keptIDs = append(keptIDs, k.ID)
	}
	for _, r := range rej {
		rejected = append(rejected, r.ID+":"+r.Reason)
	}
	if strings.Join(keptIDs, ",") != "x1,x2" || strings.Join(rejected, ",") != "x3:exact_duplicate,x2:duplicate_id" {
		t.Fatalf("keep-first: kept %v, rejected %v", keptIDs, rejected)
	}
	for _, k := range kept {
		if k.ID == "x2" && !strings.HasPrefix(k.Text, "a completely") {
			t.Fatalf("keep-first kept the later x2: %q", k.Text)
		}
	}
}
