package decontam

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/dedup"
)

// TestCheckRecordsAllEqualsOneCheckPerIndex: checking a corpus against
// several benchmarks in one pass (each text prepared once, with every
// index's window lengths) gives each benchmark exactly the matches and the
// summary of a check against it alone — also when the benchmarks' short
// items give them different window lengths, and when their analysis
// settings differ (then they are checked one at a time).
func TestCheckRecordsAllEqualsOneCheckPerIndex(t *testing.T) {
	ds := datasets(t)
	ve := readAll(t, filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl"), "id", "prompt", "ref")
	kb := readAll(t, filepath.Join(ds, "kernelbench", "level1.jsonl"), "id", "code")
	// Short items (fewer tokens than the n-gram) add window lengths of
	// their own to a benchmark's index.
	short := RecordSlice{
		{ID: "s9", Fields: []dedup.Field{{Name: "text", Text: "assign q = a & b | c;"}}},
		{ID: "s11", Fields: []dedup.Field{{Name: "text", Text: "out[i] = x[i] * 2;"}}},
	}
	var corpus RecordSlice
	for i, r := range ve[:30] {
		corpus = append(corpus, dedup.Record{ID: fmt.Sprintf("ve%d", i), Fields: []dedup.Field{{Name: "reference",
			Text: strings.ReplaceAll(r.Fields[1].Text, "RefModule", "TopModule")}}})
	}
	for i, r := range kb[:20] {
		corpus = append(corpus, dedup.Record{ID: fmt.Sprintf("kb%d", i), Fields: []dedup.Field{{Name: "code", Text: r.Fields[0].Text}}})
	}
	corpus = append(corpus,
		dedup.Record{ID: "short-copy", Fields: []dedup.Field{{Name: "text", Text: "// see below\nassign q = a & b | c;\n"}}},
		dedup.Record{ID: "short-loop", Fields: []dedup.Field{{Name: "text", Text: "out[i] = x[i] * 2;"}}},
		dedup.Record{ID: "prose", Fields: []dedup.Field{{Name: "text", Text: "Nothing here resembles any benchmark problem at all."}}})

	ctx := context.Background()
	cfg := DefaultConfig()
	other := cfg
	other.NGram = 10
	for _, tc := range []struct {
		name   string
		cfgs   [3]Config
		shared bool
	}{
		{"shared analysis", [3]Config{cfg, cfg, cfg}, true},
		{"one index with another n-gram", [3]Config{cfg, other, cfg}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ixs := []*Index{benchIndex(t, tc.cfgs[0], "ve", ve), benchIndex(t, tc.cfgs[1], "kb", kb), benchIndex(t, tc.cfgs[2], "short", short)}
			if got := sharesAnalysis(ixs); got != tc.shared {
				t.Fatalf("sharesAnalysis = %v, want %v", got, tc.shared)
			}
			if tc.shared && reflect.DeepEqual(ixs[0].Meta.Lens, ixs[2].Meta.Lens) {
				t.Fatalf("the short benchmark adds no window length: %v vs %v", ixs[0].Meta.Lens, ixs[2].Meta.Lens)
			}
			type rec struct {
				record int64
				m      Match
			}
			all := make([][]rec, len(ixs))
			sums, err := CheckRecordsAll(ctx, ixs, corpus, 2, func(i int, record int64, m Match) error {
				all[i] = append(all[i], rec{record, m})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for i, ix := range ixs {
				var one []rec
				s, err := CheckRecords(ctx, ix, corpus, 2, func(record int64, m Match) error {
					one = append(one, rec{record, m})
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(all[i], one) {
					t.Errorf("%s: %d matches in one pass, %d alone; first difference:\n%s", ix.Meta.Name, len(all[i]), len(one), firstDiff(all[i], one))
				}
				if !reflect.DeepEqual(sums[i], s) {
					t.Errorf("%s: summary %+v in one pass, %+v alone", ix.Meta.Name, sums[i], s)
				}
				total += len(one)
			}
			if len(all[0]) == 0 || len(all[1]) == 0 || len(all[2]) == 0 {
				t.Fatalf("every benchmark should match some corpus row: %d / %d / %d", len(all[0]), len(all[1]), len(all[2]))
			}
		})
	}
}

func firstDiff[T any](a, b []T) string {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Sprintf("%d: %+v\n   vs %+v", i, a[i], b[i])
		}
	}
	return "(one is a prefix of the other)"
}
