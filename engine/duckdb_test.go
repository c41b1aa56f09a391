package engine

import (
	"context"
	"database/sql"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // an independent Parquet reader
)

// TestDuckDBReadsShards proves the shards are real Parquet: DuckDB (its own
// C++ Parquet reader, not arrow-go) reads every row with identical values,
// nested structs and lists included.
func TestDuckDBReadsShards(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	items := make([]Item, 500)
	evs := make([]Evidence, 200)
	for i := range items {
		items[i] = randomItem(r, i)
	}
	for i := range evs {
		evs[i] = randomEvidence(r, i)
	}
	dir := t.TempDir()
	ctx := context.Background()
	opts := WriterOptions{RowGroupBytes: 16 << 10, ShardBytes: 16 << 10}
	infos, err := WriteAll(ctx, dir, "items", "items", opts, items)
	if err != nil {
		t.Fatal(err)
	}
	evInfos, err := WriteAll(ctx, dir, "evidence", "evidence", DefaultWriterOptions(), evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 2 {
		t.Fatalf("want several shards, got %d", len(infos))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var files []string
	for _, s := range infos {
		files = append(files, "'"+filepath.Join(dir, s.Path)+"'")
	}
	q := `SELECT item_id, parent_id, lineage_id, domain, family, instruction, reference,
	        interface.top, len(interface.ports), coalesce(list_sum(list_transform(interface.ports, p -> p.width)), 0),
	        coalesce(list_aggregate(list_transform(interface.ports, p -> p.name), 'string_agg', ','), ''),
	        interface.reset_polarity, interface.tolerance, interface.allow_delegation,
	        coalesce(list_sum(list_transform(interface.args, a -> list_sum(a.shape))), 0),
	        verifier.kind, verifier.harness, verifier.pass_marker, difficulty, cost,
	        provenance.source, epoch_us(provenance.ingest_time)
	      FROM read_parquet([` + strings.Join(files, ",") + `]) ORDER BY item_id`
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, parent, lineage, domain, family, instr, ref, top, names, pol, vk, harness, marker, src string
		var nports, widthSum, shapeSum, us int64
		var tol, diff, cost float64
		var deleg bool
		if err := rows.Scan(&id, &parent, &lineage, &domain, &family, &instr, &ref, &top, &nports, &widthSum, &names, &pol, &tol, &deleg,
			&shapeSum, &vk, &harness, &marker, &diff, &cost, &src, &us); err != nil {
			t.Fatal(err)
		}
		w := items[n]
		var wantWidth, wantShape int64
		var wantNames []string
		for _, p := range w.Interface.Ports {
			wantWidth += int64(p.Width)
			wantNames = append(wantNames, p.Name)
		}
		for _, a := range w.Interface.Args {
			for _, d := range a.Shape {
				wantShape += d
			}
		}
		got := []any{id, parent, lineage, domain, family, instr, ref, top, nports, widthSum, names, pol, tol, deleg, shapeSum, vk, harness, marker, diff, cost, src, us}
		want := []any{w.ItemID, w.ParentID, w.LineageID, w.Domain, w.Family, w.Instruction, w.Reference, w.Interface.Top, int64(len(w.Interface.Ports)),
			wantWidth, strings.Join(wantNames, ","), w.Interface.ResetPolarity, w.Interface.Tolerance, w.Interface.AllowDelegation, wantShape,
			w.Verifier.Kind, w.Verifier.Harness, w.Verifier.PassMarker, w.Difficulty, w.Cost, w.Provenance.Source, w.Provenance.IngestTime.UnixMicro()}
		for k := range got {
			if got[k] != want[k] {
				t.Fatalf("row %d column %d: duckdb read %v, wrote %v", n, k, got[k], want[k])
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(items) {
		t.Fatalf("duckdb read %d rows, wrote %d", n, len(items))
	}

	// Evidence: statuses and the typed measurement map.
	var pass, mism int64
	err = db.QueryRow(`SELECT count(*) FILTER (WHERE status = 'pass'),
	        sum(list_filter(measurements, m -> m.name = 'mismatches')[1].int)
	      FROM read_parquet('`+filepath.Join(dir, evInfos[0].Path)+`')`).Scan(&pass, &mism)
	if err != nil {
		t.Fatal(err)
	}
	var wantPass, wantMism int64
	for _, e := range evs {
		if e.Status == StatusPass {
			wantPass++
		}
		m, _ := e.Measurement("mismatches")
		wantMism += m.Int
	}
	if pass != wantPass || mism != wantMism {
		t.Fatalf("duckdb: pass=%d mismatches=%d, wrote pass=%d mismatches=%d", pass, mism, wantPass, wantMism)
	}
}
