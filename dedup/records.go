package dedup

import (
	"context"
	"encoding/json"
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

// Field is one named text of a record.
type Field struct {
	Name string
	Text string
}

// Record is one row of a JSONL or Parquet file reduced to an id and the
// requested text fields (in the requested order; absent fields omitted).
// Signature is set when the row carries the stored-signature columns
// (_dedup_minhash, _dedup_text_hash, _dedup_minhash_params, or the
// unprefixed names of older outputs) written by an earlier dedup run.
type Record struct {
	Path      string
	Row       int64 // 1-based line (JSONL) or row (Parquet)
	ID        string
	Fields    []Field
	Signature *Signature
}

// Stored-signature column names.
const (
	ColMinhash       = "minhash"
	ColTextHash      = "text_hash"
	ColMinhashParams = "minhash_params"
)

// FormatTextHash renders a 128-bit text hash as 32 hex digits.
func FormatTextHash(h [2]uint64) string { return fmt.Sprintf("%016x%016x", h[1], h[0]) }

// ParseTextHash parses FormatTextHash's output.
func ParseTextHash(s string) ([2]uint64, bool) {
	if len(s) != 32 {
		return [2]uint64{}, false
	}
	hi, err1 := strconv.ParseUint(s[:16], 16, 64)
	lo, err2 := strconv.ParseUint(s[16:], 16, 64)
	return [2]uint64{lo, hi}, err1 == nil && err2 == nil
}

// signatureColumns are the (params, text hash, minhash) column names of
// stored signatures, in order of preference: those `crucible dedup
// --keep-signatures` writes, then the unprefixed ones of older outputs.
var signatureColumns = [][3]string{
	{ColumnPrefix + ColMinhashParams, ColumnPrefix + ColTextHash, ColumnPrefix + ColMinhash},
	{ColMinhashParams, ColTextHash, ColMinhash},
}

func storedSignature(params, textHash string, values []int64) *Signature {
	h, ok := ParseTextHash(textHash)
	if !ok || params == "" {
		return nil
	}
	sg := &Signature{Params: params, TextHash: h}
	if len(values) > 0 {
		sg.Values = make([]uint64, len(values))
		for i, v := range values {
			sg.Values[i] = uint64(v)
		}
	}
	return sg
}

// Text joins the record's fields with blank lines.
func (r Record) Text() string {
	if len(r.Fields) == 1 {
		return r.Fields[0].Text
	}
	parts := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		parts[i] = f.Text
	}
	return strings.Join(parts, "\n\n")
}

// ScanRecords streams the rows of a JSONL or Parquet file (by extension) with
// any id/text column names. idField may list alternatives separated by "|"
// ("item_id|id"): the first one present is used. A row without the id field, or with none of the
// text fields, is an error naming file, row and field: a file that does not
// fit the mapping is a usage error, not data to drop silently. It is shared
// by dedup and decontam, so its errors carry no package prefix (each caller
// adds its own).
func ScanRecords(ctx context.Context, path, idField string, textFields []string, fn func(Record) error) error {
	return scanRecords(ctx, path, idField, textFields, nil, nil, fn)
}

// scanRecords is ScanRecords; a JSONL file's rows are also merged into
// schema when it is not nil (see JSONLSchema), and kept in sp when it is
// not nil.
func scanRecords(ctx context.Context, path, idField string, textFields []string, schema *jtype, sp *rowSpool, fn func(Record) error) error {
	if idField == "" || len(textFields) == 0 {
		return fmt.Errorf("%w: %s: need an id field and at least one text field", engine.ErrConfig, path)
	}
	fm := engine.MeterFile(ctx, path)
	defer fm.Done()
	if engine.IsParquet(path) {
		return scanParquet(ctx, path, idField, textFields, func(r Record) error { fm.Row(0); return fn(r) })
	}
	var n int64
	var bad error
	err := engine.ScanJSONL(path, func(line int64, raw []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		fm.Row(int64(len(raw)) + 1)
		rec, err := parseJSONLRow(path, line, raw, idField, textFields, schema, sp)
		if err != nil {
			return err
		}
		return fn(rec)
	}, func(e *engine.JSONLError) {
		if bad == nil {
			bad = fmt.Errorf("%w: %v", engine.ErrInput, e)
		}
	})
	if err != nil {
		return err
	}
	return bad
}

// parseJSONLRow decodes one JSONL line into a Record. Only the id, text
// and stored-signature members are decoded; the scanner validates the
// rest of the line as encoding/json would. A repeated key: the last one
// counts, as with encoding/json. With schema (not nil) every member is also
// merged into the inferred row type, as inferJSONL does, in the same walk,
// and with sp (not nil) the row is spooled.
func parseJSONLRow(path string, line int64, raw []byte, idField string, textFields []string, schema *jtype, sp *rowSpool) (Record, error) {
	if sp != nil {
		defer sp.drop() // endRow has written the row, or it failed
	}
	if schema != nil && (len(raw) == 0 || raw[0] != '{') {
		return Record{}, fmt.Errorf("%w: %s:%d: not a JSON object", engine.ErrInput, path, line) // inferJSONL's error
	}
	// Wanted members: the id alternatives, then the text fields, then the
	// stored-signature columns.
	alts := strings.Split(idField, "|")
	var want [16][]byte
	var wantMore [][]byte // beyond 16 names
	names := len(alts) + len(textFields) + 2*3
	get := func(k int) []byte {
		if k < len(want) {
			return want[k]
		}
		return wantMore[k-len(want)]
	}
	set := func(k int, v []byte) {
		if k < len(want) {
			want[k] = v
			return
		}
		wantMore[k-len(want)] = v
	}
	if names > len(want) {
		wantMore = make([][]byte, names-len(want))
	}
	nameAt := func(k int) string {
		if k < len(alts) {
			return alts[k]
		}
		if k -= len(alts); k < len(textFields) {
			return textFields[k]
		}
		k -= len(textFields)
		return signatureColumns[k/3][k%3]
	}
	if string(raw) != "null" { // encoding/json decodes null as an empty map
		err := jsonscan.Members(raw, func(key []byte, slow bool, v []byte) error {
			if schema != nil {
				if err := schema.mergeMember(key, slow, v); err != nil {
					return err
				}
			}
			if sp != nil {
				sp.member(key, slow, v)
			}
			ks := ""
			if slow {
				ks = jsonscan.Key(key, true)
			}
			for k := 0; k < names; k++ {
				if (!slow && string(key) == nameAt(k)) || (slow && ks == nameAt(k)) {
					set(k, v) // a name may be wanted twice (id and text): keep looking
				}
			}
			return nil
		})
		if err != nil {
			return Record{}, fmt.Errorf("%w: %s:%d: not a JSON object: %v", engine.ErrInput, path, line, err)
		}
	}
	rec := Record{Path: path, Row: line}
	var spoolText []int // with sp: per rec.Fields entry, its index in sp.texts
	var idRaw []byte
	for k := range alts {
		if v := get(k); v != nil && string(v) != "null" {
			idRaw = v
			break
		}
	}
	if idRaw == nil {
		return Record{}, fmt.Errorf("%w: %s:%d: missing id field %q", engine.ErrInput, path, line, idField)
	}
	rec.ID = jsonIDText(idRaw) // numbers and other scalars keep their JSON text
	for i, f := range textFields {
		v := get(len(alts) + i)
		if v == nil || string(v) == "null" {
			continue
		}
		if len(v) < 2 || v[0] != '"' {
			return Record{}, fmt.Errorf("%w: %s:%d: field %q is not a string", engine.ErrInput, path, line, f)
		}
		if sp != nil {
			// endRow writes the value to the spool and gives it back
			// from there, below
			spoolText = append(spoolText, sp.text(v))
			rec.Fields = append(rec.Fields, Field{Name: f})
			continue
		}
		t, _ := jsonString(v)
		rec.Fields = append(rec.Fields, Field{Name: f, Text: t})
	}
	if len(rec.Fields) == 0 {
		return Record{}, fmt.Errorf("%w: %s:%d: none of the text fields %v present", engine.ErrInput, path, line, textFields)
	}
	for g := range signatureColumns {
		base := len(alts) + len(textFields) + 3*g
		p := get(base)
		if p == nil {
			continue
		}
		params, ok1 := jsonString(p)
		th, ok2 := jsonString(get(base + 1))
		if ok1 && ok2 {
			var vals []int64
			if v := get(base + 2); v == nil || string(v) == "null" || decodeInt64s(v, &vals) == nil {
				rec.Signature = storedSignature(params, th, vals)
			}
		}
		break
	}
	if sp != nil {
		if err := sp.endRow(line); err != nil {
			return Record{}, err
		}
		for i, k := range spoolText {
			rec.Fields[i].Text = sp.texts[k].s
		}
	}
	return rec, nil
}

func scanParquet(ctx context.Context, path, idField string, textFields []string, fn func(Record) error) (err error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("%w: %s: not a readable Parquet file: %v", engine.ErrInput, path, err)
	}
	defer pf.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: corrupt Parquet: %v", engine.ErrInput, path, p)
		}
	}()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	// Only the needed top-level columns are read (by leaf index; the
	// mapped columns must be flat strings or scalars).
	colOf := func(name string) int {
		idx := schema.FieldIndices(name)
		if len(idx) == 0 {
			return -1
		}
		return idx[0]
	}
	idCol := -1
	for _, f := range strings.Split(idField, "|") {
		if idCol = colOf(f); idCol >= 0 {
			break
		}
	}
	if idCol < 0 {
		return fmt.Errorf("%w: %s: no column %q (columns: %s)", engine.ErrInput, path, idField, columnNames(schema))
	}
	cols := []int{idCol}
	var names []string
	for _, f := range textFields {
		if c := colOf(f); c >= 0 {
			cols = append(cols, c)
			names = append(names, f)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: %s: none of the text columns %v (columns: %s)", engine.ErrInput, path, textFields, columnNames(schema))
	}
	// Stored-signature columns, when all three exist, ride along at the end.
	var sigCols []int
	withSig := false
	for _, names := range signatureColumns {
		sigCols = []int{colOf(names[0]), colOf(names[1]), colOf(names[2])}
		if withSig = sigCols[0] >= 0 && sigCols[1] >= 0 && sigCols[2] >= 0; withSig {
			break
		}
	}
	// The record reader returns each selected top-level field once, in
	// order of first request; pos maps a field index to its column.
	pos := map[int]int{}
	var leaves []int
	want := func(field, leaf int) {
		if _, ok := pos[field]; !ok {
			pos[field] = len(pos)
			leaves = append(leaves, leaf)
		}
	}
	if withSig {
		mh := fr.Manifest.Fields[sigCols[2]]
		if mh.Field.Type.ID() != arrow.LIST || len(mh.Children) != 1 {
			withSig = false
		}
	}
	for _, c := range cols {
		lf := fr.Manifest.Fields[c]
		if lf.Field.Type.ID() == arrow.STRUCT || lf.Field.Type.ID() == arrow.LIST {
			return fmt.Errorf("%w: %s: column %q is nested; map a flat string column", engine.ErrInput, path, lf.Field.Name)
		}
		want(c, lf.ColIndex)
	}
	if withSig {
		want(sigCols[0], fr.Manifest.Fields[sigCols[0]].ColIndex)
		want(sigCols[1], fr.Manifest.Fields[sigCols[1]].ColIndex)
		want(sigCols[2], fr.Manifest.Fields[sigCols[2]].Children[0].ColIndex)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrInput, path, err)
	}
	defer rr.Release()
	var row int64
	for rr.Next() {
		rec := rr.RecordBatch()
		idArr := rec.Column(pos[idCol])
		for i := 0; i < int(rec.NumRows()); i++ {
			row++
			if idArr.IsNull(i) {
				return fmt.Errorf("%w: %s: row %d: null id field %q", engine.ErrInput, path, row, idField)
			}
			r := Record{Path: path, Row: row, ID: cellString(idArr, i)}
			for k, name := range names {
				a := rec.Column(pos[cols[k+1]])
				if a.IsNull(i) {
					continue
				}
				r.Fields = append(r.Fields, Field{Name: name, Text: cellString(a, i)})
			}
			if len(r.Fields) == 0 {
				return fmt.Errorf("%w: %s: row %d: all text fields %v are null", engine.ErrInput, path, row, names)
			}
			if withSig {
				pa, ta := rec.Column(pos[sigCols[0]]), rec.Column(pos[sigCols[1]])
				if la, ok := rec.Column(pos[sigCols[2]]).(*array.List); ok && !pa.IsNull(i) && !ta.IsNull(i) {
					var vals []int64
					if !la.IsNull(i) {
						if iv, ok := la.ListValues().(*array.Int64); ok {
							lo, hi := la.ValueOffsets(i)
							vals = iv.Int64Values()[lo:hi]
						}
					}
					r.Signature = storedSignature(cellString(pa, i), cellString(ta, i), vals)
				}
			}
			if err := fn(r); err != nil {
				return err
			}
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

func cellString(a arrow.Array, i int) string {
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.LargeString:
		return x.Value(i)
	case *array.Binary:
		return string(x.Value(i))
	case *array.LargeBinary:
		return string(x.Value(i))
	}
	return a.ValueStr(i)
}

func columnNames(s *arrow.Schema) string {
	var n []string
	for _, f := range s.Fields() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ", ")
}

// FileSource is a Source over JSONL/Parquet files with a field mapping.
// Tier, when set, gives each record's survivor priority tier.
type FileSource struct {
	Paths      []string
	IDField    string
	TextFields []string
	Tier       func(Record) uint8
	// ReuseSignatures passes stored signatures (the _dedup_minhash,
	// _dedup_text_hash and _dedup_minhash_params columns of `crucible dedup
	// --keep-signatures`, or the unprefixed ones of older outputs) on to
	// Run, which uses those made with its own SignatureParams instead of
	// re-tokenising. A file with rows but no stored signature at all is a
	// config error naming it.
	ReuseSignatures bool
	// Schema, when set, infers the JSONL files' row schema during the first
	// complete Scan (the dedup signature pass reads every row anyway), for
	// OpenInputInferred.
	Schema *JSONLSchema
}

// Scan implements Source.
func (s FileSource) Scan(ctx context.Context, fn func(d Doc) error) error {
	var infer *jtype
	var spool *rowSpool
	if s.Schema != nil && !s.Schema.done {
		if err := s.Schema.start(); err != nil {
			return err
		}
		infer, spool = s.Schema.root, s.Schema.spool
	}
	for _, p := range s.Paths {
		var rows, sigs int64
		var schema *jtype
		var sp *rowSpool
		if !engine.IsParquet(p) {
			schema, sp = infer, spool
		}
		if sp != nil {
			sp.beginFile()
		}
		err := scanRecords(ctx, p, s.IDField, s.TextFields, schema, sp, func(r Record) error {
			d := Doc{ID: r.ID, Text: r.Text(), Tier: TierOther}
			rows++
			if s.ReuseSignatures {
				d.Signature = r.Signature
				if r.Signature != nil {
					sigs++
				}
			}
			if s.Tier != nil {
				d.Tier = s.Tier(r)
			}
			return fn(d)
		})
		if err != nil {
			return fmt.Errorf("dedup: %w", err)
		}
		if sp != nil {
			sp.endFile(p)
		}
		if s.ReuseSignatures && rows > 0 && sigs == 0 {
			return fmt.Errorf("%w: dedup: --reuse-signatures: %s has no stored signatures (columns %s, %s, %s); write them with crucible dedup --keep-signatures, or leave out --reuse-signatures",
				engine.ErrConfig, p, ColSigMinhash, ColSigText, ColSigParams)
		}
	}
	if infer != nil {
		return s.Schema.finish()
	}
	return nil
}

// Fetch implements Fetcher. Files are read again in order, but only the
// requested rows are decoded (JSONL lines are otherwise only counted), which
// is most of the cost of a rescan. idx must be ascending.
func (s FileSource) Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error {
	if len(idx) == 0 {
		return nil
	}
	// A second pass: the progress bar counted the input once.
	ctx = engine.WithReadMeter(ctx, nil)
	var n int32 // global record index
	k := 0      // next wanted position in idx
	done := errors.New("done")
	emit := func(r Record) error {
		d := Doc{ID: r.ID, Text: r.Text(), Tier: TierOther}
		if s.Tier != nil {
			d.Tier = s.Tier(r)
		}
		if err := fn(n, d); err != nil {
			return err
		}
		k++
		if k == len(idx) {
			return done
		}
		return nil
	}
	for _, p := range s.Paths {
		var err error
		if engine.IsParquet(p) {
			err = ScanRecords(ctx, p, s.IDField, s.TextFields, func(r Record) error {
				defer func() { n++ }()
				if n != idx[k] {
					return nil
				}
				return emit(r)
			})
		} else if sp := s.Schema.spooled(); sp.has(p) {
			err = sp.scan(ctx, p, func() bool { return n == idx[k] }, func(body []byte) error {
				defer func() { n++ }()
				if body == nil {
					return nil
				}
				r, err := spooledRecord(p, body, s.IDField, s.TextFields)
				if err != nil {
					return err
				}
				return emit(r)
			})
		} else {
			err = engine.ScanJSONL(p, func(line int64, raw []byte) error {
				defer func() { n++ }()
				if n%4096 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				if n != idx[k] {
					return nil
				}
				r, err := parseJSONLRow(p, line, raw, s.IDField, s.TextFields, nil, nil)
				if err != nil {
					return err
				}
				return emit(r)
			}, func(*engine.JSONLError) {})
		}
		if errors.Is(err, done) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: input shrank: wanted record %d, files hold %d", ErrInput, idx[k], n)
}

// spooledRecord is the Record parseJSONLRow made of a spooled row (id and
// text fields; stored signatures are for the first pass only).
func spooledRecord(path string, body []byte, idField string, textFields []string) (Record, error) {
	alts := strings.Split(idField, "|")
	names := slices.Concat(alts, textFields)
	want := make([][]byte, len(names))
	isText := make([]bool, len(names))
	line, err := spoolRow(body, func(key []byte, text bool, v []byte) {
		for k, name := range names {
			if string(key) == name { // a name may be wanted twice (id and text): keep looking
				want[k], isText[k] = v, text
			}
		}
	})
	if err != nil {
		return Record{}, fmt.Errorf("%w: dedup: row spool of %s: %v", engine.ErrIO, path, err)
	}
	rec := Record{Path: path, Row: line}
	for k := range alts {
		if v := want[k]; isText[k] {
			rec.ID = string(v)
		} else if v != nil && string(v) != "null" {
			rec.ID = jsonIDText(v)
		} else {
			continue
		}
		for i, f := range textFields {
			if k := len(alts) + i; isText[k] { // null text fields are raw "null"
				rec.Fields = append(rec.Fields, Field{Name: f, Text: string(want[k])})
			}
		}
		return rec, nil
	}
	return Record{}, fmt.Errorf("%w: %s:%d: missing id field %q", engine.ErrInput, path, line, idField)
}

// decodeInt64s decodes a JSON array of integers (stored signatures; rare,
// so encoding/json).
func decodeInt64s(v []byte, dst *[]int64) error { return json.Unmarshal(v, dst) }
