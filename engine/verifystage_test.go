package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// verifyFixture is 2600 items (three batches of DefaultBatchSize): every
// fifth of another domain (passed through), a third with a reference the
// fake judge fails; and candidates naming an item of the first batch, one
// of the last and one missing.
func verifyFixture() ([]Item, []Candidate) {
	items := make([]Item, 2600)
	for i := range items {
		items[i] = Item{ItemID: fmt.Sprintf("it-%05d", i), Domain: DomainRTL, Reference: "ok", Instruction: "x"}
		if i%5 == 4 {
			items[i].Domain = "other"
		}
		if i%3 == 0 {
			items[i].Reference = "bad"
		}
	}
	cands := []Candidate{
		{ItemID: "it-00001", CandidateID: "c1", Code: "ok"},
		{ItemID: "it-02501", CandidateID: "c2", Code: "bad"},
		{ItemID: "it-09999", CandidateID: "c3", Code: "ok"},
		{ItemID: "it-00002", CandidateID: "c4", Code: "ok"},
	}
	return items, cands
}

// wholeVerify is what the verify stage wrote when it held every item: the
// reference the streaming stage must match.
func wholeVerify(t *testing.T, judges *Judges, items []Item, cands []Candidate) (kept []Item, rejs []Rejection, evs []Evidence) {
	t.Helper()
	var checked []Item
	for _, it := range items {
		if judges.For(it.Domain) != nil {
			checked = append(checked, it)
		}
	}
	refs, err := judges.SelfCheckAll(context.Background(), checked)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, it := range items {
		if judges.For(it.Domain) == nil {
			kept = append(kept, it)
			continue
		}
		out, r := DefaultReferenceRuling(it, refs[k], false)
		k++
		if r != nil {
			r.ItemID, r.Stage = it.ItemID, "verify"
			rejs = append(rejs, *r)
			continue
		}
		kept = append(kept, out)
	}
	candEvs, err := judges.JudgeAll(context.Background(), ItemsByID(items), cands)
	if err != nil {
		t.Fatal(err)
	}
	return kept, rejs, append(refs, candEvs...)
}

func TestVerifyStageStreamsLikeTheWholeRead(t *testing.T) {
	items, cands := verifyFixture()
	judges, err := NewJudges(4, &fakeJudge{domain: DomainRTL})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register("vsrc", func(StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			if err := WriteRows(sc, "items", items); err != nil {
				return err
			}
			return WriteRows(sc, "candidates", cands)
		}), nil
	}, "test items and candidates")
	reg.Register("vtest", func(StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error { return RunVerifyStage(ctx, sc, judges) }), nil
	}, "test verify")
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte("name: v\nwork_dir: work\nstages:\n  - {name: src, type: vsrc}\n  - {name: verify, type: vtest, from: [src]}\n"), 0o644)
	if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := LoadStageOutput(filepath.Join(dir, "work", "verify"))
	if err != nil {
		t.Fatal(err)
	}
	gotItems, err := ReadAll[Item](out.Shards("items")...)
	if err != nil {
		t.Fatal(err)
	}
	gotRejs, err := ReadAll[Rejection](out.Shards("rejections")...)
	if err != nil {
		t.Fatal(err)
	}
	gotEvs, err := ReadAll[Evidence](out.Shards("evidence")...)
	if err != nil {
		t.Fatal(err)
	}
	wantItems, wantRejs, wantEvs := wholeVerify(t, judges, items, cands)
	normalizeEmpty(gotItems)
	normalizeEmpty(wantItems)
	if len(gotItems) != len(wantItems) || !reflect.DeepEqual(gotItems, wantItems) {
		t.Fatalf("items: %d written, want %d (or they differ)", len(gotItems), len(wantItems))
	}
	if !reflect.DeepEqual(gotRejs, wantRejs) {
		t.Fatalf("rejections: %d written, want %d (or they differ)", len(gotRejs), len(wantRejs))
	}
	if len(gotEvs) != len(wantEvs) {
		t.Fatalf("evidence: %d rows, want %d", len(gotEvs), len(wantEvs))
	}
	for i := range wantEvs {
		g, w := gotEvs[i], wantEvs[i]
		if g.ItemID != w.ItemID || g.CandidateID != w.CandidateID || g.Status != w.Status || g.FailureStage != w.FailureStage {
			t.Fatalf("evidence row %d: %s/%s %s %s, want %s/%s %s %s", i, g.ItemID, g.CandidateID, g.Status, g.FailureStage,
				w.ItemID, w.CandidateID, w.Status, w.FailureStage)
		}
	}
	// The candidates of the first and last batch found their items.
	if n := len(wantEvs); wantEvs[n-4].Status != StatusPass || wantEvs[n-3].Status != StatusFail || wantEvs[n-2].FailureStage != StagePayloadCorrupt {
		t.Fatalf("the fixture does not exercise the candidates: %+v", wantEvs[n-4:])
	}
}
