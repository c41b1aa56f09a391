package decontam_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/decontam/decontamtest"
	"github.com/crucible-data/crucible/engine"
)

// TestCorpusIndexKeepsKernels: a corpus index built with its kernel index
// keeps the corpus's CPU kernel items with their places among all rows, so
// the kernel matcher run over the index finds what it finds over the
// corpus files: the same matches at the same rows, the same counts. Rows
// that are not items give an index with no kernels, not an error; an index
// of version 3 has no kernel index and says so; a damaged kernels.jsonl is
// an input error naming its line.
func TestCorpusIndexKeepsKernels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bench := decontamtest.WriteKernelBench(t, dir, "matmul_f32_64", "vector_add_f32")
	bbs, err := decontam.OpenBehaviouralBenchmarks(ctx, []decontam.BenchmarkSpec{{Path: bench}}, decontam.BehaviouralConfig{})
	if err != nil || len(bbs) != 1 || bbs[0].Kernels == nil {
		t.Fatalf("benchmark: %+v %v", bbs, err)
	}
	kx := bbs[0].Kernels
	// A stand-in for the kernel verifier (no compiler needed): the wrapper
	// passes when it calls the row-pointer matmul in the order a=p, b=q,
	// c=out, n=size, the one mapping under which the rewrite is the seed.
	judge := engine.JudgeFunc(engine.DomainKernel, func(_ context.Context, _ engine.Item, c engine.Candidate) (engine.Evidence, error) {
		if strings.Contains(c.Code, "prow") && strings.Contains(c.Code, "(c, b, a, n);") {
			return engine.Evidence{Status: engine.StatusPass}, nil
		}
		return engine.Evidence{Status: engine.StatusFail}, nil
	})
	mm := decontamtest.KernelItem("mm", "mm_rewrite", decontamtest.MatmulRewrite, "out", "q", "p", "size")
	add := decontamtest.KernelItem("add", "addmat", decontamtest.AddSameShape, "x", "y", "z", "n")
	prose := map[string]string{"item_id": "prose", "instruction": "Explain what a cache line is."}
	text := map[string]string{"id": "d1", "text": "Caches hold recently used lines close to the core."}
	for _, tc := range []struct {
		name        string
		rows        []any
		wantKernels int64
		wantRows    int64
		wantItems   int64
		wantMatches []string // "row corpus_id benchmark_id mapping"
	}{
		{name: "rewrite after prose", rows: []any{prose, add, mm}, wantKernels: 2, wantRows: 3, wantItems: 2,
			wantMatches: []string{"2 mm matmul_f32_64 a=p,b=q,c=out,n=size"}},
		{name: "same signature other function", rows: []any{add}, wantKernels: 1, wantRows: 1, wantItems: 1},
		{name: "rows that are not items", rows: []any{text, text}, wantRows: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdir := t.TempDir()
			corpus := decontamtest.WriteJSONL(t, cdir, "corpus.jsonl", tc.rows...)
			idx := filepath.Join(cdir, "cidx")
			src := decontam.FileRecords{Paths: []string{corpus}, IDField: "item_id|id", Fields: []string{"instruction", "reference", "text"}}
			meta, err := decontam.BuildIndexWith(ctx, decontam.DefaultConfig(), idx, "corpus", decontam.SideCorpus, src, decontam.IndexOptions{KernelPaths: []string{corpus}})
			if err != nil {
				t.Fatal(err)
			}
			if !meta.KernelIndex || meta.Version != 4 || meta.Kernels != tc.wantKernels || meta.KernelRows != tc.wantRows || meta.KernelItems != tc.wantItems || meta.Behavioural {
				t.Fatalf("meta %+v", meta)
			}
			if tc.wantItems == 0 && meta.KernelFirstRejection == "" {
				t.Errorf("no items, and no word on why: %+v", meta)
			}
			fromFiles, err := decontam.ReadKernelCorpus(ctx, []string{corpus})
			if err != nil {
				t.Fatal(err)
			}
			ix, err := decontam.OpenDesignIndex(idx)
			if err != nil || ix.KernelsUnavailable() != "" {
				t.Fatalf("open: %v %q", err, ix.KernelsUnavailable())
			}
			fromIndex, err := ix.KernelCorpus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if fromIndex.Rows != fromFiles.Rows || fromIndex.Items != fromFiles.Items || fromIndex.Kernels() != fromFiles.Kernels() || fromIndex.FirstRejection != fromFiles.FirstRejection {
				t.Errorf("index read back as %+v, the files as %+v", fromIndex, fromFiles)
			}
			run := func(kc *decontam.KernelCorpus) ([]string, map[string]int64) {
				var got []string
				s, err := decontam.CheckKernels(ctx, kx, judge, kc, decontam.BehaviouralConfig{Workers: 2}, func(row int64, m decontam.Match) error {
					got = append(got, fmt.Sprintf("%d %s %s %s", row, m.CorpusID, m.BenchmarkID, m.PortMapping))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return got, s.Counts(false)
			}
			gotFiles, countsFiles := run(fromFiles)
			gotIndex, countsIndex := run(fromIndex)
			if !slices.Equal(gotIndex, tc.wantMatches) || !slices.Equal(gotFiles, tc.wantMatches) {
				t.Errorf("matches: index %q, files %q, want %q", gotIndex, gotFiles, tc.wantMatches)
			}
			if !maps.Equal(countsIndex, countsFiles) {
				t.Errorf("counts: index %v, files %v", countsIndex, countsFiles)
			}
		})
	}

	// An index written before kernel indexes (version 3): none, and why.
	corpus := decontamtest.WriteJSONL(t, dir, "copy.jsonl", prose, mm)
	src := decontam.FileRecords{Paths: []string{corpus}, IDField: "item_id", Fields: []string{"instruction", "reference"}}
	build := func(name string) string {
		idx := filepath.Join(dir, name)
		if _, err := decontam.BuildIndexWith(ctx, decontam.DefaultConfig(), idx, "corpus", decontam.SideCorpus, src, decontam.IndexOptions{KernelPaths: []string{corpus}}); err != nil {
			t.Fatal(err)
		}
		return idx
	}
	old := build("v3")
	var m map[string]any
	raw, _ := os.ReadFile(filepath.Join(old, "meta.json"))
	json.Unmarshal(raw, &m)
	for k := range m {
		if strings.HasPrefix(k, "kernel") {
			delete(m, k)
		}
	}
	m["version"] = 3
	raw, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(old, "meta.json"), raw, 0o644)
	os.Remove(filepath.Join(old, "kernels.jsonl"))
	oix, err := decontam.OpenDesignIndex(old)
	if err != nil || !strings.Contains(oix.KernelsUnavailable(), "version 3") {
		t.Fatalf("version 3: %v %q", err, oix.KernelsUnavailable())
	}
	if _, err := oix.KernelCorpus(ctx); !errors.Is(err, engine.ErrInput) {
		t.Errorf("kernels of a version 3 index: %v, want an input error", err)
	}
	if full, err := decontam.Open(old); err != nil {
		t.Errorf("version 3 index no longer opens: %v", err)
	} else {
		full.Close()
	}

	// A damaged kernels.jsonl: the error names the file and line.
	bad := build("bad")
	os.WriteFile(filepath.Join(bad, "kernels.jsonl"), []byte("{\"row\": 1, \"id\": \"mm\", \"harness\": \"cpu\"}\n"), 0o644)
	bix, err := decontam.OpenDesignIndex(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bix.KernelCorpus(ctx); !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), "kernels.jsonl:1") {
		t.Errorf("damaged kernel index: %v, want an input error naming kernels.jsonl:1", err)
	}
	// A rebuild removes the kernel index with the rest of the index.
	if err := decontam.RemoveIndex(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bad, "kernels.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RemoveIndex left kernels.jsonl: %v", err)
	}
}
