package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// passthroughColumns picks the input columns `crucible dedup` writes
// through: all of them. A column named with dedup.ColumnPrefix would
// collide with dedup's own and is a usage error naming it, except that with
// --reuse-signatures the columns an earlier dedup wrote are dropped (this
// run writes its own).
func passthroughColumns(in *dedup.Input, reuse bool) ([]int, error) {
	var pass []int
	for i, f := range in.Schema.Fields() {
		if !strings.HasPrefix(f.Name, dedup.ColumnPrefix) {
			pass = append(pass, i)
			continue
		}
		if reuse && dedup.IsOutputColumn(f.Name) {
			continue
		}
		hint := "rename it"
		if dedup.IsOutputColumn(f.Name) {
			hint = "rename it, or, when the input is an earlier dedup's output, pass --reuse-signatures to replace its " + dedup.ColumnPrefix + " columns"
		}
		return nil, fmt.Errorf("%w: input column %q of %s: the %s prefix is reserved for the columns dedup adds; %s",
			errUsage, f.Name, in.Paths[0], dedup.ColumnPrefix, hint)
	}
	return pass, nil
}

// dedupWriter writes the second pass of `crucible dedup`: every input row,
// unchanged, to kept-*.parquet or removed-*.parquet, with the _dedup_
// columns after the input's.
//
// Memory: one input batch (dedup.BatchRows rows) at a time, plus what the
// two shard writers buffer (about one row group each); the per-row dedup
// state is Result's.
type dedupWriter struct {
	pass          []int // input columns written, in order
	sigs          bool  // --keep-signatures
	mem           memory.Allocator
	schema        *arrow.Schema // both outputs' (one schema, so a later run reads kept and removed rows together)
	kept, removed *engine.ShardWriter[arrow.RecordBatch]
}

func dedupFields(sigs bool) []arrow.Field {
	fs := []arrow.Field{
		{Name: dedup.ColClusterID, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: dedup.ColClusterSize, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: dedup.ColSurvivorID, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: dedup.ColReason, Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if sigs {
		fs = append(fs, arrow.Field{Name: dedup.ColSigMinhash, Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
			arrow.Field{Name: dedup.ColSigText, Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: dedup.ColSigParams, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return fs
}

// newDedupWriter opens the stage's kept and removed writers (the runner
// commits them, or aborts them when the stage fails).
func newDedupWriter(sc *engine.StageContext, in *arrow.Schema, pass []int, sigs bool, mem memory.Allocator) (*dedupWriter, error) {
	w := &dedupWriter{pass: pass, sigs: sigs, mem: mem}
	if w.mem == nil {
		w.mem = memory.DefaultAllocator
	}
	var fs []arrow.Field
	for _, i := range pass {
		fs = append(fs, in.Field(i))
	}
	w.schema = arrow.NewSchema(append(fs, dedupFields(sigs)...), nil)
	var err error
	if w.kept, err = engine.StageRecordWriter(sc, "kept", w.schema); err != nil {
		return nil, err
	}
	if w.removed, err = engine.StageRecordWriter(sc, "removed", w.schema); err != nil {
		return nil, err
	}
	return w, nil
}

// extraCols builds the _dedup_ columns of one output batch.
type extraCols struct {
	b   *array.RecordBuilder
	sig int // index of the first signature field, -1 without
}

func newExtraCols(mem memory.Allocator, sigs bool) *extraCols {
	fs := dedupFields(sigs)
	e := &extraCols{b: array.NewRecordBuilder(mem, arrow.NewSchema(fs, nil)), sig: -1}
	if sigs {
		e.sig = len(fs) - 3
	}
	return e
}

func appendStr(b array.Builder, s string, null bool) {
	if null {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

// add appends one row's dedup columns; dup marks a duplicate_id row (no
// cluster, no signature).
func (e *extraCols) add(dec dedup.Decision, dup bool, sg *dedup.Signature) {
	appendStr(e.b.Field(0), dec.ClusterID, dup || dec.ClusterID == "")
	if dup {
		e.b.Field(1).AppendNull()
	} else {
		e.b.Field(1).(*array.Int32Builder).Append(int32(dec.ClusterSize))
	}
	appendStr(e.b.Field(2), dec.SurvivorID, false)
	appendStr(e.b.Field(3), dec.Reason, dec.Kept)
	if e.sig < 0 {
		return
	}
	if sg == nil {
		for k := e.sig; k < e.sig+3; k++ {
			e.b.Field(k).AppendNull()
		}
		return
	}
	lb := e.b.Field(e.sig).(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.Int64Builder)
	for _, v := range sg.Values {
		vb.Append(int64(v))
	}
	appendStr(e.b.Field(e.sig+1), dedup.FormatTextHash(sg.TextHash), false)
	appendStr(e.b.Field(e.sig+2), sg.Params, false)
}

// takeRows returns the rows (ascending) of a, as one array.
func takeRows(mem memory.Allocator, a arrow.Array, rows []int) (arrow.Array, error) {
	if len(rows) == a.Len() {
		a.Retain()
		return a, nil
	}
	var parts []arrow.Array
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		parts = append(parts, array.NewSlice(a, int64(rows[i]), int64(rows[j]+1)))
		i = j + 1
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, mem)
}

// emit writes rows of rec with their dedup columns to sw.
func (w *dedupWriter) emit(sw *engine.ShardWriter[arrow.RecordBatch], rec arrow.RecordBatch, rows []int, e *extraCols) error {
	extra := e.b.NewRecordBatch()
	defer extra.Release()
	if len(rows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, w.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, i := range w.pass {
		c, err := takeRows(w.mem, rec.Column(i), rows)
		if err != nil {
			return fmt.Errorf("%w: select rows of column %q: %v", engine.ErrIO, rec.ColumnName(i), err)
		}
		cols = append(cols, c)
	}
	for _, c := range extra.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	out := array.NewRecordBatch(w.schema, cols, int64(len(rows)))
	defer out.Release()
	return sw.WriteRecord(out)
}

// writeRows reads the input again and writes every row: src's rows in res's
// order, with src's duplicate-id rows (keep-first) in their input places.
// A row whose id is not the one the first pass saw there is an input error
// (the input changed between the passes).
func (w *dedupWriter) writeRows(ctx context.Context, in *dedup.Input, src *uniqueIDs, res *dedup.Result) error {
	var p int32  // position in src (all rows)
	j, k := 0, 0 // next res row, next duplicate-id row
	lastPath, row := "", int64(0)
	changed := func(path string, row int64) error {
		return fmt.Errorf("%w: %s: input changed between passes at row %d", engine.ErrInput, path, row)
	}
	ke, re := newExtraCols(w.mem, w.sigs), newExtraCols(w.mem, w.sigs)
	defer ke.b.Release()
	defer re.b.Release()
	err := in.ScanBatches(ctx, func(path string, rec arrow.RecordBatch, ids []string) error {
		if path != lastPath {
			lastPath, row = path, 0
		}
		var keptRows, remRows []int
		for r, id := range ids {
			row++
			if k < len(src.dups) && src.dups[k].later == p {
				if id != src.dups[k].doc.ID {
					return changed(path, row)
				}
				remRows = append(remRows, r)
				re.add(dedup.Decision{ID: id, SurvivorID: id, Reason: "duplicate_id"}, true, nil)
				k++
				p++
				continue
			}
			if j >= res.Len() || j >= len(src.keep) || src.keep[j] != p || res.IDs[j] != id {
				return changed(path, row)
			}
			dec := res.Decision(j)
			var sg *dedup.Signature
			if w.sigs {
				s, err := res.Signature(j)
				if err != nil {
					return err
				}
				sg = &s
			}
			if dec.Kept {
				keptRows = append(keptRows, r)
				ke.add(dec, false, sg)
			} else {
				remRows = append(remRows, r)
				re.add(dec, false, sg)
			}
			j++
			p++
		}
		if err := w.emit(w.kept, rec, keptRows, ke); err != nil {
			return err
		}
		return w.emit(w.removed, rec, remRows, re)
	})
	if err == nil && (j != res.Len() || k != len(src.dups)) {
		err = fmt.Errorf("%w: input changed between passes: %d rows read again, the first pass had %d", engine.ErrInput, p, res.Len()+len(src.dups))
	}
	return err
}

// close flushes both outputs' last shards, so the write phase's time
// includes them; the runner commits the files (a writer closed here is
// closed already when it does). On failure the runner drops what was
// written.
func (w *dedupWriter) close() error {
	for _, sw := range []*engine.ShardWriter[arrow.RecordBatch]{w.kept, w.removed} {
		if _, err := sw.Close(); err != nil {
			return err
		}
	}
	return nil
}
