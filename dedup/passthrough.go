package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/jsonscan"
)

// Passthrough: `crucible dedup` writes its input rows unchanged (every
// column, same names, same Arrow types, same order) and adds its own
// columns, all named with ColumnPrefix so they cannot collide with input
// columns.
const (
	ColumnPrefix = "_dedup_"

	ColClusterID   = ColumnPrefix + "cluster_id"
	ColClusterSize = ColumnPrefix + "cluster_size"
	ColSurvivorID  = ColumnPrefix + "survivor_id"
	ColReason      = ColumnPrefix + "reason"
	// Stored signatures (`crucible dedup --keep-signatures`), read back by
	// FileSource.ReuseSignatures. The unprefixed ColMinhash, ColTextHash and
	// ColMinhashParams of older outputs are still read.
	ColSigMinhash = ColumnPrefix + ColMinhash
	ColSigText    = ColumnPrefix + ColTextHash
	ColSigParams  = ColumnPrefix + ColMinhashParams
)

// IsOutputColumn reports whether name is one of the columns dedup writes.
func IsOutputColumn(name string) bool {
	switch name {
	case ColClusterID, ColClusterSize, ColSurvivorID, ColReason, ColSigMinhash, ColSigText, ColSigParams:
		return true
	}
	return false
}

// BatchRows is the number of rows per batch ScanBatches hands out.
const BatchRows = 1024

// Input is the rows of a set of JSONL/Parquet files as Arrow record
// batches of one schema, for writing them through unchanged.
type Input struct {
	Paths   []string
	IDField string
	// Schema is the rows' schema, the same for all files (column names,
	// order and types; a column nullable in one file is nullable here). A
	// Parquet file's schema is its own (pqarrow: the stored Arrow schema when
	// the file has one). JSONL files get one schema inferred from all their
	// rows (see InferJSONLSchema): a pass of its own, or part of the
	// signature pass (JSONLSchema, OpenInputInferred).
	Schema *arrow.Schema
	json   *jtype    // inferred JSONL types (nil without JSONL files)
	spool  *rowSpool // the JSONL files' rows, kept by the scan that inferred json (nil: read the files)
}

// OpenInput reads the schema of paths' rows; files of different schemas
// are an error naming the first file of each and the first differing
// column.
func OpenInput(ctx context.Context, paths []string, idField string) (*Input, error) {
	return openInput(ctx, paths, idField, nil)
}

// JSONLSchema is the row schema of JSONL files inferred while a
// FileSource with it scans them (the same inference as InferJSONLSchema):
// `crucible dedup` reads every row in its signature pass anyway, and a
// separate schema pass was one more full read and validation of the input.
// Use it through OpenInputInferred once the Scan has completed. A spooled
// one (NewSpooledJSONLSchema) also keeps the rows it scans (see rowSpool)
// for the FileSource's Fetch and the Input's ScanBatches; Close removes
// them.
type JSONLSchema struct {
	root  *jtype
	done  bool
	spool *rowSpool // nil: not spooled
}

// NewJSONLSchema returns an empty schema for FileSource.Schema.
func NewJSONLSchema() *JSONLSchema { return &JSONLSchema{} }

// NewSpooledJSONLSchema is NewJSONLSchema keeping the scanned rows: in
// memory up to 128 MiB, past that in a temporary file in dir ("": the
// system's temp directory).
func NewSpooledJSONLSchema(dir string) *JSONLSchema {
	return &JSONLSchema{spool: newRowSpool(dir)}
}

// Close removes the spooled rows (nothing to do without a spool).
func (j *JSONLSchema) Close() {
	if j != nil && j.spool != nil {
		j.spool.close()
	}
}

// start resets the inference for a Scan (an earlier one failed or stopped
// part way: its rows must not count twice).
func (j *JSONLSchema) start() error {
	j.root = &jtype{kind: jObject, fields: map[string]*jtype{}}
	if j.spool != nil {
		return j.spool.reset()
	}
	return nil
}

// finish fixes the types after a complete Scan, as inferJSONL does.
func (j *JSONLSchema) finish() error {
	j.root.pos = map[string]int{}
	j.root.settle()
	if j.spool != nil {
		if err := j.spool.finish(); err != nil {
			return err
		}
	}
	j.done = true
	return nil
}

// spooled is the spool of a completed scan, nil when there is none.
func (j *JSONLSchema) spooled() *rowSpool {
	if j == nil || !j.done {
		return nil
	}
	return j.spool
}

// OpenInputInferred is OpenInput with the JSONL files' schema taken from
// js, inferred by a completed FileSource.Scan over the same paths, instead
// of a pass of its own. An incomplete js is an error.
func OpenInputInferred(ctx context.Context, paths []string, idField string, js *JSONLSchema) (*Input, error) {
	if js == nil || !js.done {
		return nil, fmt.Errorf("%w: JSONL schema not inferred (no completed scan)", ErrInput)
	}
	in, err := openInput(ctx, paths, idField, js.root)
	if in != nil {
		in.spool = js.spooled()
	}
	return in, err
}

// openInput is OpenInput; root, when not nil, is the JSONL files' inferred
// row type.
func openInput(ctx context.Context, paths []string, idField string, inferred *jtype) (*Input, error) {
	in := &Input{Paths: paths, IDField: idField}
	var jsonl []string
	var from string
	merge := func(s *arrow.Schema, path string) error {
		if in.Schema == nil {
			in.Schema, from = s, path
			return nil
		}
		m, err := mergeSchemas(in.Schema, s)
		if err != nil {
			return fmt.Errorf("%w: %s and %s have different columns: %v (their rows are written through unchanged, so all inputs need one schema)",
				engine.ErrInput, from, path, err)
		}
		in.Schema = m
		return nil
	}
	for _, p := range paths {
		if !engine.IsParquet(p) {
			jsonl = append(jsonl, p)
			continue
		}
		s, err := parquetSchema(p)
		if err != nil {
			return nil, err
		}
		if err := merge(s, p); err != nil {
			return nil, err
		}
	}
	if len(jsonl) > 0 {
		root := inferred
		if root == nil {
			var err error
			if root, err = inferJSONL(ctx, jsonl); err != nil {
				return nil, err
			}
		}
		in.json = root
		if err := merge(root.schema(), jsonl[0]); err != nil {
			return nil, err
		}
	}
	if in.Schema == nil {
		in.Schema = arrow.NewSchema(nil, nil)
	}
	return in, nil
}

// mergeSchemas returns a with b's nullability folded in, or an error naming
// the first column that differs in name or type.
func mergeSchemas(a, b *arrow.Schema) (*arrow.Schema, error) {
	if a.NumFields() != b.NumFields() {
		return nil, fmt.Errorf("%d columns (%s) vs %d (%s)", a.NumFields(), columnNames(a), b.NumFields(), columnNames(b))
	}
	fs := make([]arrow.Field, a.NumFields())
	for i := range fs {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return nil, fmt.Errorf("column %d is %q %s vs %q %s", i+1, fa.Name, fa.Type, fb.Name, fb.Type)
		}
		fs[i] = arrow.Field{Name: fa.Name, Type: fa.Type, Nullable: fa.Nullable || fb.Nullable}
	}
	return arrow.NewSchema(fs, nil), nil
}

func openArrowParquet(path string) (*file.Reader, *pqarrow.FileReader, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: not a readable Parquet file: %v", engine.ErrInput, path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: BatchRows}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, nil, fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	return pf, fr, nil
}

func parquetSchema(path string) (s *arrow.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: corrupt Parquet: %v", engine.ErrInput, path, p)
		}
	}()
	pf, fr, err := openArrowParquet(path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	s, err = fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	fs := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fs[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable} // field ids and metadata dropped
	}
	return arrow.NewSchema(fs, nil), nil
}

// ScanBatches streams the rows of the input files, in order, as record
// batches of Schema of at most BatchRows rows, with each row's id as
// ScanRecords gives it (a JSON string unquoted, other JSON values as their
// text; a Parquet cell as text). Only one batch is held at a time.
func (in *Input) ScanBatches(ctx context.Context, fn func(path string, rec arrow.RecordBatch, ids []string) error) error {
	for _, p := range in.Paths {
		var err error
		if engine.IsParquet(p) {
			err = scanParquetBatches(ctx, p, in.Schema, in.IDField, fn)
		} else {
			err = scanJSONLBatches(ctx, p, in.Schema, in.json, in.spool, in.IDField, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func scanParquetBatches(ctx context.Context, path string, schema *arrow.Schema, idField string, fn func(string, arrow.RecordBatch, []string) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: corrupt Parquet: %v", engine.ErrInput, path, p)
		}
	}()
	pf, fr, err := openArrowParquet(path)
	if err != nil {
		return err
	}
	defer pf.Close()
	idCol := -1
	for _, f := range strings.Split(idField, "|") {
		if idx := schema.FieldIndices(f); len(idx) > 0 {
			idCol = idx[0]
			break
		}
	}
	if idCol < 0 {
		return fmt.Errorf("%w: %s: no column %q (columns: %s)", engine.ErrInput, path, idField, columnNames(schema))
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	defer rr.Release()
	var ids []string
	var row int64
	for rr.Next() {
		in := rr.RecordBatch()
		if int(in.NumCols()) != schema.NumFields() {
			return fmt.Errorf("%w: %s: %d columns, the schema read before has %d (input changed between passes)", engine.ErrInput, path, in.NumCols(), schema.NumFields())
		}
		rec := array.NewRecordBatch(schema, in.Columns(), in.NumRows())
		ids = ids[:0]
		a := rec.Column(idCol)
		for i := 0; i < int(rec.NumRows()); i++ {
			row++
			if a.IsNull(i) {
				rec.Release()
				return fmt.Errorf("%w: %s: row %d: null id field %q", engine.ErrInput, path, row, idField)
			}
			ids = append(ids, cellString(a, i))
		}
		err := fn(path, rec, ids)
		rec.Release()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	return nil
}

// scanJSONLBatches decodes path's rows in one goroutine while fn consumes
// the previous batch in this one (on two cores decoding overlaps writing);
// batches reach fn in input order, and at most two are held besides fn's.
func scanJSONLBatches(ctx context.Context, path string, schema *arrow.Schema, root *jtype, sp *rowSpool, idField string, fn func(string, arrow.RecordBatch, []string) error) error {
	type batch struct {
		rec arrow.RecordBatch
		ids []string
	}
	ch := make(chan batch, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var perr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		perr = decodeJSONLBatches(pctx, path, schema, root, sp, idField, func(_ string, rec arrow.RecordBatch, ids []string) error {
			rec.Retain()
			select {
			case ch <- batch{rec, slices.Clone(ids)}:
				return nil
			case <-pctx.Done():
				rec.Release()
				return pctx.Err()
			}
		})
	}()
	var ferr error
	for b := range ch {
		if ferr == nil {
			if ferr = fn(path, b.rec, b.ids); ferr != nil {
				cancel()
			}
		}
		b.rec.Release()
	}
	<-done
	if ferr != nil {
		return ferr
	}
	return perr
}

// decodeJSONLBatches decodes path's rows as batches of schema (root's):
// from sp when it holds them, else from the file.
func decodeJSONLBatches(ctx context.Context, path string, schema *arrow.Schema, root *jtype, sp *rowSpool, idField string, fn func(string, arrow.RecordBatch, []string) error) error {
	if !arrow.TypeEqual(arrow.StructOf(schema.Fields()...), arrow.StructOf(root.schema().Fields()...)) {
		return fmt.Errorf("%w: %s: JSONL rows cannot be read as %s", engine.ErrInput, path, schema)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var ids []string
	n := 0
	// Each batch's string columns are built with room for as many bytes as
	// the batch before held: a builder starts empty after NewRecordBatch,
	// and growing a 2 MB text column by doubling, every batch, was a tenth
	// of this pass.
	hint := make([]int, schema.NumFields())
	flush := func() error {
		if n == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		for i, c := range rec.Columns() {
			if s, ok := c.(*array.String); ok {
				hint[i] = len(s.ValueBytes())
			}
		}
		err := fn(path, rec, ids)
		ids, n = ids[:0], 0
		for i, h := range hint {
			if sb, ok := b.Field(i).(*array.StringBuilder); ok && h > 0 {
				sb.Reserve(BatchRows)
				sb.ReserveData(h + h/8) // room for a slightly larger batch: no doubling at its end
			}
		}
		return err
	}
	// The id alternatives as columns: every top-level key of every row is
	// one (the schema pass saw them all).
	var idCols []int
	for _, f := range strings.Split(idField, "|") {
		if k, ok := root.pos[f]; ok {
			idCols = append(idCols, k)
		}
	}
	var d rowDecoder
	vals := make([][]byte, len(root.names))
	var text []bool // spooled rows: vals[i] is a decoded text string
	row := func(line int64) error {
		id, ok := "", false
		for _, k := range idCols {
			if v := vals[k]; v != nil && (text != nil && text[k]) {
				id, ok = string(v), true
				break
			} else if v != nil && string(v) != "null" {
				id, ok = jsonIDText(v), true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w: %s:%d: missing id field %q", engine.ErrInput, path, line, idField)
		}
		for i, name := range root.names {
			if text != nil && text[i] {
				sb, ok := b.Field(i).(*array.StringBuilder)
				if !ok {
					return fmt.Errorf("%w: %s:%d: text field %q is not a string column", engine.ErrInput, path, line, name)
				}
				sb.BinaryBuilder.Append(vals[i])
				continue
			}
			if err := d.appendJSON(b.Field(i), root.fields[name], vals[i]); err != nil {
				return fmt.Errorf("%w: %s:%d: field %q: %v (input changed between passes?)", engine.ErrInput, path, line, name, err)
			}
		}
		ids = append(ids, id)
		if n++; n == BatchRows {
			if err := flush(); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	}
	var err error
	if sp.has(path) {
		text = make([]bool, len(root.names))
		err = sp.scan(ctx, path, nil, func(body []byte) error {
			clear(vals)
			clear(text)
			line, err := spoolRow(body, func(key []byte, isText bool, v []byte) {
				if k, ok := root.pos[string(key)]; ok {
					vals[k], text[k] = v, isText
				}
			})
			if err != nil {
				return fmt.Errorf("%w: dedup: row spool of %s: %v", engine.ErrIO, path, err)
			}
			return row(line)
		})
	} else {
		var bad error
		err = engine.ScanJSONL(path, func(line int64, raw []byte) error {
			clear(vals)
			if err := root.columns(raw, vals); err != nil {
				return fmt.Errorf("%w: %s:%d: not a JSON object: %v", engine.ErrInput, path, line, err)
			}
			return row(line)
		}, func(e *engine.JSONLError) {
			if bad == nil {
				bad = fmt.Errorf("%w: %v", engine.ErrInput, e)
			}
		})
		if err == nil {
			err = bad
		}
	}
	if err == nil {
		err = flush()
	}
	return err
}

// jsonIDText is an id's text: a JSON string unquoted, any other value its
// JSON text.
func jsonIDText(v []byte) string {
	if s, ok := jsonString(v); ok {
		return s
	}
	return string(v)
}

// JSON kinds of schema inference, in no order.
type jkind uint8

const (
	jNull   jkind = iota // only nulls (or absent) so far
	jBool                // true/false
	jInt                 // integers that fit int64
	jFloat               // numbers, not all integers
	jString              // JSON strings
	jList                // arrays
	jObject              // objects
	jRaw                 // incompatible kinds: the raw JSON text as a string
)

// jtype is the inferred type of one JSON value position.
type jtype struct {
	kind   jkind
	elem   *jtype            // jList
	names  []string          // jObject: keys in order of first appearance
	fields map[string]*jtype // jObject
	pos    map[string]int    // jObject: index of each key in names (set by settle)
}

// columns stores the raw value of each member of the JSON object raw in
// vals at its key's index in t.names (a repeated key: the last one, as
// encoding/json decodes it; a key t does not have is skipped).
func (t *jtype) columns(raw []byte, vals [][]byte) error {
	return jsonscan.Members(raw, func(key []byte, slow bool, v []byte) error {
		var k int
		var ok bool
		if slow {
			k, ok = t.pos[jsonscan.Key(key, true)]
		} else {
			k, ok = t.pos[string(key)]
		}
		if ok {
			vals[k] = v
		}
		return nil
	})
}

// settle fixes the inferred types for decoding: an object that never had
// a key becomes raw (Parquet has no empty struct) and every object gets
// its key index.
func (t *jtype) settle() {
	switch t.kind {
	case jList:
		t.elem.settle()
	case jObject:
		if len(t.names) == 0 && t.pos == nil {
			*t = jtype{kind: jRaw}
			return
		}
		t.pos = make(map[string]int, len(t.names))
		for i, name := range t.names {
			t.pos[name] = i
			t.fields[name].settle()
		}
	}
}

// InferJSONLSchema infers one Arrow schema from every row of the JSONL
// files: top-level keys in order of first appearance become columns; a
// column is int64 when every value is an integer that fits, float64 when
// numbers mix integers and fractions, bool, string, a list of the inferred
// element type, or a struct (nested objects, same rules per field); nulls
// and absent keys are nulls. A column (or nested field or list element)
// whose values mix incompatible kinds (a string and a number, an object
// and a list, ...) becomes a string holding each value's raw JSON text
// (strings keep their quotes); so does an object that never has a key. A
// column that is null in every row is a string column of nulls. Memory: the
// inferred type tree only.
func InferJSONLSchema(ctx context.Context, paths []string) (*arrow.Schema, error) {
	root, err := inferJSONL(ctx, paths)
	if err != nil {
		return nil, err
	}
	return root.schema(), nil
}

func inferJSONL(ctx context.Context, paths []string) (*jtype, error) {
	root := &jtype{kind: jObject, fields: map[string]*jtype{}}
	var n int64
	for _, p := range paths {
		var bad error
		err := engine.ScanJSONL(p, func(line int64, raw []byte) error {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if len(raw) == 0 || raw[0] != '{' {
				return fmt.Errorf("%w: %s:%d: not a JSON object", engine.ErrInput, p, line)
			}
			if err := root.merge(raw); err != nil {
				return fmt.Errorf("%w: %s:%d: not a JSON object: %v", engine.ErrInput, p, line, err)
			}
			return nil
		}, func(e *engine.JSONLError) {
			if bad == nil {
				bad = fmt.Errorf("%w: %v", engine.ErrInput, e)
			}
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return nil, err
		}
	}
	root.pos = map[string]int{}
	root.settle() // an object without keys becomes raw; key indexes
	return root, nil
}

// schema is the Arrow schema of a top-level (row) jtype.
func (t *jtype) schema() *arrow.Schema {
	fs := make([]arrow.Field, len(t.names))
	for i, name := range t.names {
		fs[i] = arrow.Field{Name: name, Type: t.fields[name].arrowType(), Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

func kindOf(raw []byte) (jkind, error) {
	if len(raw) == 0 {
		return jNull, errors.New("empty value")
	}
	switch raw[0] {
	case 'n':
		return jNull, nil
	case 't', 'f':
		return jBool, nil
	case '"':
		return jString, nil
	case '[':
		return jList, nil
	case '{':
		return jObject, nil
	}
	if bytes.ContainsAny(raw, ".eE") {
		return jFloat, nil
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return jFloat, nil // an integer beyond int64
	}
	return jInt, nil
}

// merge widens t to hold the JSON value raw.
func (t *jtype) merge(raw []byte) error {
	k, err := kindOf(raw)
	if err != nil || k == jNull || t.kind == jRaw {
		return err
	}
	switch {
	case t.kind == jNull:
		t.kind = k
		switch k {
		case jList:
			t.elem = &jtype{}
		case jObject:
			t.fields = map[string]*jtype{}
		}
	case t.kind == k:
	case (t.kind == jInt && k == jFloat) || (t.kind == jFloat && k == jInt):
		t.kind = jFloat
		return nil
	default:
		*t = jtype{kind: jRaw}
		return nil
	}
	switch k {
	case jList:
		return jsonscan.Elems(raw, t.elem.merge)
	case jObject:
		return jsonscan.Members(raw, t.mergeMember)
	}
	return nil // a scalar, validated with its parent
}

// mergeMember widens the object type t with one member (key as
// jsonscan.Members gives it).
func (t *jtype) mergeMember(key []byte, slow bool, v []byte) error {
	var f *jtype
	var ok bool
	if slow {
		f, ok = t.fields[jsonscan.Key(key, true)]
	} else {
		f, ok = t.fields[string(key)]
	}
	if !ok {
		name := jsonscan.Key(key, slow)
		f = &jtype{}
		t.fields[name] = f
		t.names = append(t.names, name)
	}
	return f.merge(v)
}

func (t *jtype) arrowType() arrow.DataType {
	switch t.kind {
	case jBool:
		return arrow.FixedWidthTypes.Boolean
	case jInt:
		return arrow.PrimitiveTypes.Int64
	case jFloat:
		return arrow.PrimitiveTypes.Float64
	case jList:
		return arrow.ListOf(t.elem.arrowType())
	case jObject:
		if len(t.names) == 0 {
			*t = jtype{kind: jRaw} // Parquet has no empty struct
			return arrow.BinaryTypes.String
		}
		fs := make([]arrow.Field, len(t.names))
		for i, name := range t.names {
			fs[i] = arrow.Field{Name: name, Type: t.fields[name].arrowType(), Nullable: true}
		}
		return arrow.StructOf(fs...)
	}
	return arrow.BinaryTypes.String // jString, jRaw, jNull
}

// rowDecoder appends JSON values to Arrow builders; its scratch buffer
// holds unquoted strings, so decoding a row allocates only for nested
// objects.
type rowDecoder struct {
	scratch []byte
}

// appendJSON appends the JSON value raw (nil: absent), which the scanner
// has validated, to b as type t.
func (d *rowDecoder) appendJSON(b array.Builder, t *jtype, raw []byte) error {
	if len(raw) == 0 || string(raw) == "null" {
		b.AppendNull()
		return nil
	}
	switch t.kind {
	case jBool:
		switch string(raw) {
		case "true":
			b.(*array.BooleanBuilder).Append(true)
		case "false":
			b.(*array.BooleanBuilder).Append(false)
		default:
			return fmt.Errorf("value %.40s is not a bool", raw)
		}
	case jInt:
		v, ok := parseInt64(raw)
		if !ok {
			var err error
			if v, err = strconv.ParseInt(string(raw), 10, 64); err != nil {
				return err
			}
		}
		b.(*array.Int64Builder).Append(v)
	case jFloat:
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return err
		}
		b.(*array.Float64Builder).Append(v)
	case jRaw:
		b.(*array.StringBuilder).BinaryBuilder.Append(raw)
	case jString:
		if raw[0] != '"' {
			return fmt.Errorf("value %.40s is not a string", raw)
		}
		var s []byte
		s, d.scratch = jsonContents(raw, d.scratch)
		b.(*array.StringBuilder).BinaryBuilder.Append(s)
	case jList:
		if raw[0] != '[' {
			return jsonscan.ErrNotArray
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		return jsonscan.Elems(raw, func(e []byte) error { return d.appendJSON(lb.ValueBuilder(), t.elem, e) })
	case jObject:
		vals := make([][]byte, len(t.names))
		if err := t.columns(raw, vals); err != nil {
			return err
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, name := range t.names {
			if err := d.appendJSON(sb.FieldBuilder(i), t.fields[name], vals[i]); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
	default: // jNull: no value was seen by the inference pass
		return fmt.Errorf("value %.40s where the first pass saw only nulls", raw)
	}
	return nil
}

// parseInt64 parses a JSON integer of at most 18 digits (no overflow
// possible); ok is false for anything else (strconv decides those).
func parseInt64(raw []byte) (int64, bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}
