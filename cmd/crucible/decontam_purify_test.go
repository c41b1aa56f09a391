package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// purifyFixture is a benchmark of 5 items and a 200-row corpus of
// passthroughCols in which some rows copy (or embed) benchmark texts.
type purifyFixture struct {
	bench, corpus, jsonRel string
	ids                    []int64
	inCols                 []string
	want                   map[int64]string // contaminated row id → _decontam_benchmark
}

func newPurifyFixture(t *testing.T, dir string) purifyFixture {
	t.Helper()
	bsyn := dedup.NewSynth(dedup.SynthConfig{N: 10, DocWords: 60, Vocab: 2000, Seed: 91})
	var b strings.Builder
	ref := func(k int) string { return bsyn.Text(2*k + 1) }
	for k := range 5 {
		p, _ := json.Marshal(bsyn.Text(2 * k))
		r, _ := json.Marshal(ref(k))
		fmt.Fprintf(&b, `{"id":"bench-%d","prompt":%s,"ref":%s}`+"\n", k, p, r)
	}
	f := purifyFixture{bench: filepath.Join(dir, "bench.jsonl"), corpus: filepath.Join(dir, "corpus.jsonl")}
	if err := os.WriteFile(f.bench, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 200
	syn := dedup.NewSynth(dedup.SynthConfig{N: n, DocWords: 100, Vocab: 3000, Seed: 5})
	plant := map[int]string{
		3:   ref(0),
		17:  bsyn.Text(2), // bench-1's prompt
		40:  ref(2),
		41:  ref(2),
		99:  ref(3) + "\n" + ref(4),
		150: syn.Text(150) + "\n" + ref(0) + "\n" + syn.Text(151),
	}
	wantBench := map[int]string{3: "bench-0", 17: "bench-1", 40: "bench-2", 41: "bench-2", 99: "bench-3,bench-4", 150: "bench-0"}
	f.ids = writeMixedJSONL(t, f.corpus, n, func(i int) string {
		if s, ok := plant[i]; ok {
			return s
		}
		return syn.Text(i)
	})
	f.want = map[int64]string{}
	for i, bm := range wantBench {
		f.want[f.ids[i]] = bm
	}
	var spec []string
	for _, c := range passthroughCols {
		spec = append(spec, fmt.Sprintf("%s: '%s'", c.name, c.duck))
		f.inCols = append(f.inCols, c.name+" "+c.duck)
	}
	f.jsonRel = fmt.Sprintf("read_json('%s', format='newline_delimited', columns={%s})", f.corpus, strings.Join(spec, ", "))
	return f
}

func purifyOpts(f purifyFixture, corpus []string, out, purify string) DecontamCheckOptions {
	return DecontamCheckOptions{Corpus: corpus, CorpusIDField: "id", CorpusFields: []string{"text"},
		Benchmarks: []string{f.bench}, IDField: "id", Fields: []string{"prompt", "ref"}, Out: out, Purify: purify,
		Workers: 2, Config: decontam.DefaultConfig(), Writer: engine.WriterOptions{RowGroupBytes: 8 << 10, ShardBytes: 16 << 10},
		Stdout: &bytes.Buffer{}}
}

// Issue 18 (purify): for a mixed-type corpus as JSONL, JSONL.gz, JSONL.zst
// and Parquet, --purify writes the corpus minus its contaminated rows: the
// kept rows have every input column (name, DuckDB type, place) and equal
// the input's cells, in input order; the removed rows are the contaminated
// ones, in order, with all their cells and the benchmark ids they matched;
// the exit code stays 6.
func TestDecontamPurify(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	db := duckOpen(t)
	pq := filepath.Join(dir, "corpus.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM %s) TO '%s' (FORMAT parquet)", f.jsonRel, pq)); err != nil {
		t.Fatal(err)
	}
	comp := testenv.CompressedCopies(t, f.corpus)
	var wantKept, wantRemoved []int64
	for _, id := range f.ids {
		if _, bad := f.want[id]; bad {
			wantRemoved = append(wantRemoved, id)
		} else {
			wantKept = append(wantKept, id)
		}
	}
	wantRemCols := append(slices.Clone(f.inCols), colDecBenchmark+" VARCHAR", colDecMethod+" VARCHAR", colDecScore+" DOUBLE")
	for _, tc := range []struct{ name, in string }{
		{"jsonl", f.corpus}, {"jsonl.gz", comp["gz"]}, {"jsonl.zst", comp["zst"]}, {"parquet", pq},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := purifyOpts(f, []string{tc.in}, filepath.Join(dir, "m-"+tc.name), filepath.Join(dir, "p-"+tc.name))
			if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitFindings {
				t.Fatalf("exit %d, want %d", code, exitFindings)
			}
			so, err := engine.LoadStageOutput(o.Purify)
			if err != nil {
				t.Fatal(err)
			}
			if so.Parts[0].Counts["kept"] != int64(len(wantKept)) || so.Parts[0].Counts["removed"] != int64(len(wantRemoved)) {
				t.Fatalf("manifest counts %v, want kept %d removed %d", so.Parts[0].Counts, len(wantKept), len(wantRemoved))
			}
			kept, removed := so.Shards(purifyKept), so.Shards(purifyRemoved)
			if len(kept) < 2 || len(removed) != 1 {
				t.Fatalf("%d kept shards (want several: small shards), %d removed", len(kept), len(removed))
			}
			for _, fl := range kept {
				if got := duckColumns(t, db, fmt.Sprintf("read_parquet('%s')", fl)); !slices.Equal(got, f.inCols) {
					t.Fatalf("%s columns:\n got %v\nwant %v", filepath.Base(fl), got, f.inCols)
				}
			}
			if got := duckColumns(t, db, fmt.Sprintf("read_parquet('%s')", removed[0])); !slices.Equal(got, wantRemCols) {
				t.Fatalf("removed columns:\n got %v\nwant %v", got, wantRemCols)
			}
			order := "SELECT id FROM read_parquet(%s, filename=true, file_row_number=true) ORDER BY filename, file_row_number"
			if got := duckIDs(t, db, fmt.Sprintf(order, parquetList(kept))); !slices.Equal(got, wantKept) {
				t.Errorf("kept ids (file order) %v\nwant %v", got, wantKept)
			}
			if got := duckIDs(t, db, fmt.Sprintf(order, parquetList(removed))); !slices.Equal(got, wantRemoved) {
				t.Errorf("removed ids (file order) %v, want %v", got, wantRemoved)
			}
			for _, part := range []struct {
				files []string
				n     int
			}{{kept, len(wantKept)}, {removed, len(wantRemoved)}} {
				rel := fmt.Sprintf("read_parquet(%s)", parquetList(part.files))
				if got := duckInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s i JOIN %s o ON i.id = o.id", f.jsonRel, rel)); got != int64(part.n) {
					t.Fatalf("%d of %d output rows found in the input by id", got, part.n)
				}
				for _, c := range passthroughCols {
					q := fmt.Sprintf(`SELECT count(*) FROM %s i JOIN %s o ON i.id = o.id WHERE i."%s" IS DISTINCT FROM o."%s"`, f.jsonRel, rel, c.name, c.name)
					if bad := duckInt(t, db, q); bad != 0 {
						t.Errorf("column %s: %d output rows differ from the input", c.name, bad)
					}
				}
			}
			rows, err := db.Query(fmt.Sprintf("SELECT id, %s, %s, %s FROM read_parquet('%s')", colDecBenchmark, colDecMethod, colDecScore, removed[0]))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				var bm, method string
				var score float64
				if err := rows.Scan(&id, &bm, &method, &score); err != nil {
					t.Fatal(err)
				}
				if bm != f.want[id] || score < o.Config.Threshold || !slices.Contains([]string{"lexical", "structural", "minhash"}, method) {
					t.Errorf("row %d: benchmark %q method %q score %.3f; want benchmark %q, a method, score ≥ %.2f", id, bm, method, score, f.want[id], o.Config.Threshold)
				}
			}
		})
	}
}

// A clean corpus: exit 0, every row kept, no removed rows.
func TestDecontamPurifyClean(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	clean := filepath.Join(dir, "clean.jsonl")
	syn := dedup.NewSynth(dedup.SynthConfig{N: 50, DocWords: 80, Vocab: 3000, Seed: 6})
	writeMixedJSONL(t, clean, 50, syn.Text)
	o := purifyOpts(f, []string{clean}, filepath.Join(dir, "m"), filepath.Join(dir, "p"))
	if err := runDecontamCheck(context.Background(), o); err != nil {
		t.Fatalf("clean corpus: %v", err)
	}
	so, err := engine.LoadStageOutput(o.Purify)
	if err != nil {
		t.Fatal(err)
	}
	if so.Parts[0].Counts["kept"] != 50 || so.Parts[0].Counts["removed"] != 0 || len(so.Shards(purifyRemoved)) != 0 {
		t.Fatalf("counts %v, removed shards %v", so.Parts[0].Counts, so.Shards(purifyRemoved))
	}
	rows, err := engine.ReadAll[struct {
		ID int64 `arrow:"id"`
	}](so.Shards(purifyKept)...)
	if err != nil || len(rows) != 50 {
		t.Fatalf("%d kept rows (%v)", len(rows), err)
	}
}

// Usage errors: --purify with --corpus-index, --purify equal to --out, a
// corpus column named _decontam_...
func TestDecontamPurifyUsage(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	o := purifyOpts(f, nil, filepath.Join(dir, "m"), filepath.Join(dir, "p"))
	o.CorpusIndex = filepath.Join(dir, "some-index")
	err := runDecontamCheck(context.Background(), o)
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), "--corpus-index") {
		t.Fatalf("--purify with --corpus-index: exit %d (%v), want %d naming --corpus-index", code, err, exitUsage)
	}
	o = purifyOpts(f, []string{f.corpus}, filepath.Join(dir, "same"), filepath.Join(dir, ".", "same"))
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitUsage {
		t.Fatalf("--purify = --out: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(dir, "reserved.jsonl")
	os.WriteFile(bad, []byte(`{"id":1,"text":"a b c","_decontam_score":1}`+"\n"), 0o644)
	o = purifyOpts(f, []string{bad}, filepath.Join(dir, "m2"), filepath.Join(dir, "p2"))
	err = runDecontamCheck(context.Background(), o)
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), "_decontam_score") {
		t.Fatalf("reserved column: exit %d (%v), want %d naming the column", code, err, exitUsage)
	}
}

// Rows are told apart by place: a clean row repeating a contaminated row's
// id is kept. A row matching items of two --benchmark files names both ids.
func TestDecontamPurifyByPlace(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	data, _ := os.ReadFile(f.bench)
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	b1, b2 := filepath.Join(dir, "b1.jsonl"), filepath.Join(dir, "b2.jsonl")
	os.WriteFile(b1, []byte(strings.Join(lines[:4], "")), 0o644) // bench-0..3
	os.WriteFile(b2, []byte(lines[4]+"\n"), 0o644)               // bench-4
	var bench []struct {
		ID  string `json:"id"`
		Ref string `json:"ref"`
	}
	for _, l := range lines {
		var r struct {
			ID  string `json:"id"`
			Ref string `json:"ref"`
		}
		json.Unmarshal([]byte(l), &r)
		bench = append(bench, r)
	}
	syn := dedup.NewSynth(dedup.SynthConfig{N: 10, DocWords: 80, Vocab: 3000, Seed: 8})
	row := func(id int, text string) string {
		j, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":%d,"text":%s}`+"\n", id, j)
	}
	corpus := filepath.Join(dir, "dup-ids.jsonl")
	os.WriteFile(corpus, []byte(row(1, syn.Text(1))+row(2, bench[0].Ref)+row(2, syn.Text(2))+
		row(3, bench[3].Ref+"\n"+bench[4].Ref)+row(2, syn.Text(3))), 0o644)
	o := purifyOpts(f, []string{corpus}, filepath.Join(dir, "m"), filepath.Join(dir, "p"))
	o.Benchmarks = []string{b1, b2}
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitFindings {
		t.Fatalf("exit %d, want %d", code, exitFindings)
	}
	so, err := engine.LoadStageOutput(o.Purify)
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		ID    int64   `arrow:"id"`
		Text  string  `arrow:"text"`
		Bench string  `arrow:"_decontam_benchmark"`
		Score float64 `arrow:"_decontam_score"`
	}
	kept, err := engine.ReadAll[out](so.Shards(purifyKept)...)
	if err != nil {
		t.Fatal(err)
	}
	removed, err := engine.ReadAll[out](so.Shards(purifyRemoved)...)
	if err != nil {
		t.Fatal(err)
	}
	var keptIDs []int64
	for _, k := range kept {
		keptIDs = append(keptIDs, k.ID)
	}
	if !slices.Equal(keptIDs, []int64{1, 2, 2}) || kept[1].Text != syn.Text(2) || kept[2].Text != syn.Text(3) {
		t.Errorf("kept %v, want ids 1, 2, 2 with the clean texts", keptIDs)
	}
	if len(removed) != 2 || removed[0].ID != 2 || removed[0].Bench != "bench-0" || removed[1].ID != 3 || removed[1].Bench != "bench-3,bench-4" {
		t.Errorf("removed %+v, want id 2 (bench-0) and id 3 (bench-3,bench-4)", removed)
	}
}

// An output directory holding an input whose name the output would reuse
// is refused (exit 2), and the input survives.
func TestDecontamDedupRefuseClobberingInput(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	d := filepath.Join(dir, "d")
	o := DedupOptions{In: []string{f.corpus}, IDField: "id", TextFields: []string{"text"}, Out: d,
		Config: dedup.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &discard{}}
	if err := runDedup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(d, "kept-00000.parquet")
	o.In = []string{filepath.Join(d, "kept-*.parquet")}
	if code := exitCode(context.Background(), runDedup(context.Background(), o)); code != exitUsage {
		t.Errorf("dedup --in d/kept-* --out d: exit %d, want %d", code, exitUsage)
	}
	c := purifyOpts(f, []string{kept}, filepath.Join(dir, "m"), d)
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), c)); code != exitUsage {
		t.Errorf("decontam --corpus d/kept-00000.parquet --purify d: exit %d, want %d", code, exitUsage)
	}
	c = purifyOpts(f, []string{kept}, d, filepath.Join(dir, "p"))
	c.Benchmarks = []string{filepath.Join(d, "manifest.json")}
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), c)); code != exitUsage {
		t.Errorf("decontam --benchmark d/manifest.json --out d: exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the input is gone: %v", err)
	}
}
