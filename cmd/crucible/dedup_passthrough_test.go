package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // an independent reader of input and output

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// passthroughCols are the test input's columns in order, with the
// DuckDB type each must keep: 9 columns of mixed types (the id is an
// integer, sparse is null in 9 rows of 10).
var passthroughCols = []struct{ name, duck string }{
	{"id", "BIGINT"},
	{"n", "BIGINT"},
	{"score", "DOUBLE"},
	{"flag", "BOOLEAN"},
	{"lang", "VARCHAR"},
	{"tags", "VARCHAR[]"},
	{"meta", "STRUCT(a BIGINT, b VARCHAR)"},
	{"sparse", "BIGINT"},
	{"text", "VARCHAR"},
}

// dedupCols are the columns dedup adds after the input's.
var dedupCols = []struct{ name, duck string }{
	{dedup.ColClusterID, "VARCHAR"},
	{dedup.ColClusterSize, "INTEGER"},
	{dedup.ColSurvivorID, "VARCHAR"},
	{dedup.ColReason, "VARCHAR"},
}

// writePassthroughJSONL writes n rows with planted exact and near
// duplicates (dedup.Synth texts) and returns the path and the ids in order.
func writePassthroughJSONL(t *testing.T, path string, syn *dedup.Synth, n int) []int64 {
	t.Helper()
	return writeMixedJSONL(t, path, n, syn.Text)
}

// writeMixedJSONL writes n rows of passthroughCols, row i's text being
// text(i), and returns the ids in order.
func writeMixedJSONL(t *testing.T, path string, n int, textOf func(int) string) []int64 {
	t.Helper()
	var b strings.Builder
	var ids []int64
	for i := 0; i < n; i++ {
		id := int64(1000 + 7*i)
		ids = append(ids, id)
		text, _ := json.Marshal(textOf(i))
		score := strconv.FormatFloat(float64(i)/8, 'g', -1, 64) // integers (2, 3) and fractions mix: float64
		tags := `["t` + strconv.Itoa(i%3) + `","x"]`
		if i%5 == 0 {
			tags = `[]`
		} else if i%17 == 0 {
			tags = `null`
		}
		meta := fmt.Sprintf(`{"a":%d,"b":"m%d"}`, i*3, i%4)
		if i%13 == 0 {
			meta = `{"a":null,"b":"only-b"}`
		}
		sparse := ""
		switch {
		case i%10 == 0:
			sparse = fmt.Sprintf(`,"sparse":%d`, -i)
		case i%2 == 0:
			sparse = `,"sparse":null`
		} // else absent
		fmt.Fprintf(&b, `{"id":%d,"n":%d,"score":%s,"flag":%t,"lang":"l%d","tags":%s,"meta":%s%s,"text":%s}`+"\n",
			id, i*i-50, score, i%3 == 0, i%6, tags, meta, sparse, text)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ids
}

func duckOpen(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func parquetList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "'" + p + "'"
	}
	return "[" + strings.Join(q, ",") + "]"
}

// duckColumns is "name TYPE" of every column of a relation, in order.
func duckColumns(t *testing.T, db *sql.DB, rel string) []string {
	t.Helper()
	rows, err := db.Query("DESCRIBE SELECT * FROM " + rel)
	if err != nil {
		t.Fatalf("describe %s: %v", rel, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v %v", vals[0], vals[1]))
	}
	return out
}

func duckInt(t *testing.T, db *sql.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func duckIDs(t *testing.T, db *sql.DB, q string) []int64 {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Issue 18.1: dedup writes its input rows unchanged. For JSONL input (types
// inferred) and Parquet input (written by DuckDB, its own schema), DuckDB
// reads the input and the output: the output has every input column, same
// name, type and place, then the _dedup_ columns; every cell of every row
// (kept and removed) equals the input's; rows keep the input order.
func TestDedupPassthrough(t *testing.T) {
	dir := t.TempDir()
	const n = 240
	syn := dedup.NewSynth(dedup.SynthConfig{N: n, DocWords: 100, Vocab: 3000, DupFrac: 0.25, EditsMin: 1, EditsMax: 2, ExactFrac: 0.4, Seed: 5})
	jsonl := filepath.Join(dir, "in.jsonl")
	ids := writePassthroughJSONL(t, jsonl, syn, n)
	db := duckOpen(t)
	var spec []string
	var inCols []string
	for _, c := range passthroughCols {
		spec = append(spec, fmt.Sprintf("%s: '%s'", c.name, c.duck))
		inCols = append(inCols, c.name+" "+c.duck)
	}
	jsonRel := fmt.Sprintf("read_json('%s', format='newline_delimited', columns={%s})", jsonl, strings.Join(spec, ", "))
	pq := filepath.Join(dir, "in.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM %s) TO '%s' (FORMAT parquet)", jsonRel, pq)); err != nil {
		t.Fatal(err)
	}
	if got := duckColumns(t, db, fmt.Sprintf("read_parquet('%s')", pq)); !slices.Equal(got, inCols) {
		t.Fatalf("DuckDB wrote the Parquet input as %v, want %v", got, inCols)
	}
	wantOut := slices.Clone(inCols)
	for _, c := range dedupCols {
		wantOut = append(wantOut, c.name+" "+c.duck)
	}
	for _, tc := range []struct{ name, in, inRel string }{
		{"jsonl", jsonl, jsonRel},
		{"parquet", pq, fmt.Sprintf("read_parquet('%s')", pq)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+tc.name)
			o := DedupOptions{In: []string{tc.in}, IDField: "id", TextFields: []string{"text"}, Out: out, Config: dedup.DefaultConfig(),
				Writer: engine.WriterOptions{RowGroupBytes: 8 << 10, ShardBytes: 16 << 10}, Stdout: &bytes.Buffer{}}
			if err := runDedup(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			so, err := engine.LoadStageOutput(out)
			if err != nil {
				t.Fatal(err)
			}
			kept, removed := so.Shards("kept"), so.Shards("removed")
			if len(kept) < 2 || len(removed) == 0 {
				t.Fatalf("%d kept shards, %d removed: want several kept shards (small shards) and some removed rows", len(kept), len(removed))
			}
			for _, files := range [][]string{kept, removed} {
				for _, f := range files {
					if got := duckColumns(t, db, fmt.Sprintf("read_parquet('%s')", f)); !slices.Equal(got, wantOut) {
						t.Fatalf("%s columns:\n got %v\nwant %v", filepath.Base(f), got, wantOut)
					}
				}
			}
			outRel := fmt.Sprintf("read_parquet(%s, filename=true, file_row_number=true)", parquetList(append(slices.Clone(kept), removed...)))
			if got := duckInt(t, db, "SELECT count(*) FROM "+outRel); got != n {
				t.Fatalf("output has %d rows, input %d", got, n)
			}
			if got := duckInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s i JOIN %s o ON i.id = o.id", tc.inRel, outRel)); got != n {
				t.Fatalf("%d of %d input rows found in the output by id", got, n)
			}
			for _, c := range passthroughCols {
				q := fmt.Sprintf(`SELECT count(*) FROM %s i JOIN %s o ON i.id = o.id WHERE i."%s" IS DISTINCT FROM o."%s"`, tc.inRel, outRel, c.name, c.name)
				if bad := duckInt(t, db, q); bad != 0 {
					t.Errorf("column %s: %d rows differ from the input", c.name, bad)
				}
			}
			if got := duckInt(t, db, "SELECT count(*) FROM "+outRel+" WHERE sparse IS NOT NULL"); got != n/10 {
				t.Errorf("sparse has %d values, want %d", got, n/10)
			}
			// Input order, in each output.
			keptSet := map[int64]bool{}
			for _, id := range duckIDs(t, db, fmt.Sprintf("SELECT id FROM read_parquet(%s)", parquetList(kept))) {
				keptSet[id] = true
			}
			var wantKept, wantRemoved []int64
			for _, id := range ids {
				if keptSet[id] {
					wantKept = append(wantKept, id)
				} else {
					wantRemoved = append(wantRemoved, id)
				}
			}
			order := "SELECT id FROM read_parquet(%s, filename=true, file_row_number=true) ORDER BY filename, file_row_number"
			if got := duckIDs(t, db, fmt.Sprintf(order, parquetList(kept))); !slices.Equal(got, wantKept) {
				t.Errorf("kept rows out of input order: %v", got)
			}
			if got := duckIDs(t, db, fmt.Sprintf(order, parquetList(removed))); !slices.Equal(got, wantRemoved) {
				t.Errorf("removed rows out of input order: %v", got)
			}
			// The dedup columns: a removed row names a kept survivor as text and a
			// reason; a kept row is its own survivor.
			rel := func(files []string) string { return fmt.Sprintf("read_parquet(%s)", parquetList(files)) }
			if bad := duckInt(t, db, fmt.Sprintf(`SELECT count(*) FROM %s WHERE _dedup_survivor_id IS DISTINCT FROM CAST(id AS VARCHAR)
				OR _dedup_reason IS NOT NULL OR (_dedup_cluster_id IS NULL) != (_dedup_cluster_size = 1)`, rel(kept))); bad != 0 {
				t.Errorf("%d kept rows with wrong dedup columns", bad)
			}
			if bad := duckInt(t, db, fmt.Sprintf(`SELECT count(*) FROM %s r LEFT JOIN %s k ON r._dedup_survivor_id = CAST(k.id AS VARCHAR)
				WHERE k.id IS NULL OR k._dedup_cluster_id IS DISTINCT FROM r._dedup_cluster_id OR r._dedup_cluster_size < 2
				OR r._dedup_reason NOT IN ('exact_duplicate', 'near_duplicate')`, rel(removed), rel(kept))); bad != 0 {
				t.Errorf("%d removed rows with wrong dedup columns", bad)
			}
			for i, id := range ids {
				if !keptSet[id] && syn.Base(i) < 0 {
					if b := duckInt(t, db, fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d AND CAST(_dedup_survivor_id AS BIGINT) IN (SELECT id FROM %s)", rel(removed), id, rel(kept))); b != 1 {
						t.Errorf("original row %d removed without a kept survivor", id)
					}
				}
			}
			if len(wantRemoved) < n/10 {
				t.Errorf("only %d of %d rows removed; the input plants about %d duplicates", len(wantRemoved), n, n/4)
			}
		})
	}
}

// dedupOutcome is one row's dedup decision as the output says it.
type dedupOutcome struct {
	ID         string `arrow:"id"`
	ClusterID  string `arrow:"_dedup_cluster_id"`
	Size       int32  `arrow:"_dedup_cluster_size"`
	SurvivorID string `arrow:"_dedup_survivor_id"`
	Reason     string `arrow:"_dedup_reason"`
}

// Issue 18.4: the kept set, cluster ids and survivors do not depend on the
// number of signature workers, nor on how the same rows are split over
// files.
func TestDedupDeterministicAcrossWorkersAndFiles(t *testing.T) {
	dir := t.TempDir()
	const n = 1500
	syn := dedup.NewSynth(dedup.SynthConfig{N: n, DocWords: 80, Vocab: 4000, DupFrac: 0.3, EditsMin: 1, EditsMax: 3, ExactFrac: 0.3, Seed: 77})
	var lines []string
	for i := 0; i < n; i++ {
		text, _ := json.Marshal(syn.Text(i))
		lines = append(lines, fmt.Sprintf(`{"id":"%s","text":%s}`, syn.ID(i), text))
	}
	one := filepath.Join(dir, "all.jsonl")
	os.WriteFile(one, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	var five []string
	for k, lo := 0, 0; k < 5; k++ {
		hi := lo + []int{100, 700, 1, 399, 300}[k] // uneven, one file of one row
		p := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", k))
		os.WriteFile(p, []byte(strings.Join(lines[lo:hi], "\n")+"\n"), 0o644)
		five = append(five, p)
		lo = hi
	}
	run := func(name string, in []string, workers int) map[string]dedupOutcome {
		t.Helper()
		cfg := dedup.DefaultConfig()
		cfg.Workers, cfg.BatchDocs = workers, 97 // batches that split unevenly over the workers
		o := DedupOptions{In: in, IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, name), Config: cfg,
			Writer: engine.DefaultWriterOptions(), Stdout: &bytes.Buffer{}}
		if err := runDedup(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		so, err := engine.LoadStageOutput(o.Out)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := engine.ReadAll[dedupOutcome](append(so.Shards("kept"), so.Shards("removed")...)...)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]dedupOutcome{}
		for _, r := range rows {
			m[r.ID] = r
		}
		if len(m) != n {
			t.Fatalf("%s: %d distinct rows, want %d", name, len(m), n)
		}
		return m
	}
	base := run("w1-one", []string{one}, 1)
	removed, clusters := 0, map[string]bool{}
	for _, r := range base {
		if r.Reason != "" {
			removed++
		}
		if r.ClusterID != "" {
			clusters[r.ClusterID] = true
		}
	}
	if removed < n/10 || len(clusters) < 50 {
		t.Fatalf("baseline removed %d rows in %d clusters: too few to compare", removed, len(clusters))
	}
	for _, c := range []struct {
		name    string
		in      []string
		workers int
	}{
		{"w2-one", []string{one}, 2}, {"w8-one", []string{one}, 8},
		{"w1-five", five, 1}, {"w2-five", five, 2}, {"w8-five", five, 8},
	} {
		got := run(c.name, c.in, c.workers)
		diff := 0
		for id, want := range base {
			if got[id] != want {
				if diff++; diff <= 5 {
					t.Errorf("%s: row %s is %+v, with 1 worker and one file %+v", c.name, id, got[id], want)
				}
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d of %d rows differ", c.name, diff, n)
		}
	}
}
