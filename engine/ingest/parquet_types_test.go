package ingest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/duckdb/duckdb-go/v2" // writes Parquet the way users' tools do

	"github.com/crucible-data/crucible/engine"
)

func duckdb(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// duckRows is the goodRow item as DuckDB would write it from integer
// literals: difficulty BIGINT (the contract says DOUBLE), port width BIGINT
// (int32 in the contract), kernel arg shape INTEGER[] (int64[]).
const duckRows = `SELECT 'a' || i AS item_id, 'rtl' AS domain, 'counter' AS family, 'Build a counter.' AS instruction,
	'module RefModule(input clk); endmodule' AS reference,
	{'kind': 'differential', 'harness': 'module tb; endmodule', 'top': 'tb'} AS verifier,
	{'ports': [{'name': 'clk', 'direction': 'input', 'width': 1::BIGINT}], 'clock': 'clk',
	 'args': [{'name': 'x', 'role': 'input', 'shape': [4, 8]::INTEGER[], 'dtype': 'float32'}]} AS interface,
	(i % 4)::BIGINT AS difficulty
	FROM range(1, 4) t(i)`

// TestParquetIntegersWidenLosslessly: the same rows as DuckDB writes them
// (BIGINT where the contract has DOUBLE or INT32, INTEGER[] where it has
// BIGINT[]) ingest to the items their JSONL form gives (this was exit 3,
// "type int64, want float64"); a value that cannot convert exactly rejects
// only its row, naming file, row and field.
func TestParquetIntegersWidenLosslessly(t *testing.T) {
	dir := t.TempDir()
	db := duckdb(t)
	pq := filepath.Join(dir, "items.parquet")
	if _, err := db.Exec(`COPY (` + duckRows + `) TO '` + pq + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	jl := filepath.Join(dir, "items.jsonl")
	if _, err := db.Exec(`COPY (` + duckRows + `) TO '` + jl + `' (FORMAT json)`); err != nil {
		t.Fatal(err)
	}
	fromPQ, _, err := ingestAll(t, PresetItems, pq)
	if err != nil {
		t.Fatalf("Parquet with BIGINT difficulty: %v", err)
	}
	fromJL, _, err := ingestAll(t, PresetItems, jl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromPQ.items) != 3 || len(fromPQ.rejs) != 0 {
		t.Fatalf("Parquet: %d items, rejections %+v", len(fromPQ.items), fromPQ.rejs)
	}
	if !reflect.DeepEqual(comparableItems(fromPQ.items), comparableItems(fromJL.items)) {
		t.Fatalf("Parquet items differ from the JSONL ones:\n%+v\n%+v", fromPQ.items[0], fromJL.items[0])
	}
	if it := fromPQ.items[2]; it.Difficulty != 3 || it.Interface.Ports[0].Width != 1 || !reflect.DeepEqual(it.Interface.Args[0].Shape, []int64{4, 8}) {
		t.Fatalf("converted values: difficulty %v, width %v, shape %v", it.Difficulty, it.Interface.Ports[0].Width, it.Interface.Args[0].Shape)
	}

	// 2^53+1 has no exact float64; 2^31 does not fit an int32 width.
	bad := filepath.Join(dir, "bad.parquet")
	q := `SELECT * REPLACE (CASE WHEN item_id = 'a2' THEN 9007199254740993 ELSE difficulty END AS difficulty,
		CASE WHEN item_id = 'a3' THEN {'ports': [{'name': 'clk', 'direction': 'input', 'width': 2147483648::BIGINT}], 'clock': 'clk', 'args': interface.args} ELSE interface END AS interface)
		FROM (` + duckRows + `)`
	if _, err := db.Exec(`COPY (` + q + `) TO '` + bad + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	c, _, err := ingestAll(t, PresetItems, bad)
	if err != nil {
		t.Fatalf("one bad value must reject its row, not fail the file: %v", err)
	}
	if len(c.items) != 1 || c.items[0].ItemID != "a1" || len(c.rejs) != 2 {
		t.Fatalf("items %d, rejections %+v", len(c.items), c.rejs)
	}
	for i, want := range []string{bad + ":2: difficulty: int64 value 9007199254740993", bad + ":3: interface.ports[0].width: int64 value 2147483648 does not fit int32"} {
		if r := c.rejs[i]; r.Reason != "invalid_value" || !strings.HasPrefix(r.Detail, want) {
			t.Errorf("rejection %d: %s %q, want invalid_value %q…", i, r.Reason, r.Detail, want)
		}
	}
}

// TestParquetLargeStringsAndLists: large_string and large_list columns
// (pyarrow's defaults for big tables) read like string and list.
func TestParquetLargeStringsAndLists(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "item_id", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "domain", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "instruction", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "reference", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "verifier", Type: arrow.StructOf(arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "harness", Type: arrow.BinaryTypes.LargeString, Nullable: true}), Nullable: true},
		{Name: "interface", Type: arrow.StructOf(arrow.Field{Name: "args", Type: arrow.LargeListOf(arrow.StructOf(
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
			arrow.Field{Name: "shape", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
			arrow.Field{Name: "dtype", Type: arrow.BinaryTypes.String, Nullable: true})), Nullable: true}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, id := range []string{"k1", "k2"} {
		b.Field(0).(*array.LargeStringBuilder).Append(id)
		b.Field(1).(*array.LargeStringBuilder).Append("kernel")
		b.Field(2).(*array.LargeStringBuilder).Append("Add two vectors.")
		b.Field(3).(*array.LargeStringBuilder).Append("def f(x): return x")
		vb := b.Field(4).(*array.StructBuilder)
		vb.Append(true)
		vb.FieldBuilder(0).(*array.StringBuilder).Append("kernel")
		vb.FieldBuilder(1).(*array.LargeStringBuilder).Append("check")
		ib := b.Field(5).(*array.StructBuilder)
		ib.Append(true)
		args := ib.FieldBuilder(0).(*array.LargeListBuilder)
		args.Append(true)
		ab := args.ValueBuilder().(*array.StructBuilder)
		ab.Append(true)
		ab.FieldBuilder(0).(*array.LargeStringBuilder).Append("x")
		sb := ab.FieldBuilder(1).(*array.LargeListBuilder)
		sb.Append(true)
		sb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(16 << i), 3}, nil)
		ab.FieldBuilder(2).(*array.StringBuilder).Append("float32")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "large.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := engine.OpenParquet[engine.Item](context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Schema().Field(0).Type.ID(); got != arrow.LARGE_STRING {
		t.Fatalf("the file reads back as %s, not large_string: the test does not exercise it", got)
	}
	rows, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].ItemID != "k2" || rows[1].Verifier.Harness != "check" || !reflect.DeepEqual(rows[1].Interface.Args[0].Shape, []int64{32, 3}) {
		t.Fatalf("rows: %+v", rows)
	}
}

// TestEmptyInputWritesEmptyReadableShard: a 0-byte JSONL file and a Parquet
// file with no rows each give an items shard DuckDB reads (0 rows, the item
// columns) and a manifest listing it — not no file.
func TestEmptyInputWritesEmptyReadableShard(t *testing.T) {
	dir := t.TempDir()
	db := duckdb(t)
	emptyJL := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(emptyJL, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyPQ := filepath.Join(dir, "empty.parquet")
	if _, err := db.Exec(`COPY (SELECT * FROM (` + duckRows + `) WHERE false) TO '` + emptyPQ + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	RegisterStages(reg)
	for _, in := range []string{emptyJL, emptyPQ} {
		work := filepath.Join(dir, "work-"+filepath.Ext(in)[1:])
		cfgPath := filepath.Join(dir, "p"+filepath.Ext(in)+".yaml")
		os.WriteFile(cfgPath, []byte("name: e\nwork_dir: "+work+"\nstages:\n  - name: ingest\n    type: ingest\n    inputs: ["+in+"]\n"), 0o644)
		cfg, err := engine.LoadPipeline(cfgPath, reg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := engine.LoadStageOutput(filepath.Join(work, "ingest"))
		if err != nil {
			t.Fatal(err)
		}
		shards := out.Shards("items")
		if len(shards) != 1 || out.Rows("items") != 0 {
			t.Fatalf("%s: items shards %v (%d rows), want one empty shard", in, shards, out.Rows("items"))
		}
		var n, cols int
		if err := db.QueryRow(`SELECT count(*) FROM read_parquet('` + shards[0] + `')`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: DuckDB count %d, %v", in, n, err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet('` + shards[0] + `'))`).Scan(&cols); err != nil || cols < 10 {
			t.Fatalf("%s: DuckDB sees %d columns, %v", in, cols, err)
		}
	}
}
