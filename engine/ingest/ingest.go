// Package ingest turns input files into item rows: JSONL or Parquet in the
// item contract, the VerilogEval layout, or a directory of task folders.
// Every row is validated; a bad row becomes a rejection row naming the file,
// line and field, and ingest goes on. Only an unreadable file is an error.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crucible-data/crucible/engine"
)

// Presets name input layouts.
const (
	PresetItems       = "items"        // the item contract (JSONL field names = Parquet columns)
	PresetVerilogEval = "verilog-eval" // {id, source, task, prompt, ref, test}
	PresetTaskDir     = "taskdir"      // <dir>/<task>/{task.json, instruction.md, reference.*, testbench.sv}
)

// Presets lists the valid preset names.
var Presets = []string{PresetItems, PresetVerilogEval, PresetTaskDir}

// Sink receives ingested rows in input order, always on the goroutine that
// called IngestPaths, IngestFile or IngestRange (the JSONL workers only
// decode), so a sink needs no locking.
type Sink struct {
	Item   func(engine.Item) error
	Reject func(engine.Rejection) error
}

// Stats counts what ingest saw.
type Stats struct {
	Files    int
	Rows     int64
	Items    int64
	Rejected int64
	Reasons  map[string]int64
}

// Ingester validates rows and passes them on, rejecting duplicates.
type Ingester struct {
	Preset string
	Sink   Sink
	Stats  Stats
	// Workers is the number of goroutines decoding and validating JSONL
	// lines (0: GOMAXPROCS; 1: all on the calling goroutine). The output
	// is the same for every value; see jsonl.go.
	Workers int
	// SinkCopies promises that the Sink copies what it keeps of a row
	// before returning (the ingest stage's shard writers do): the JSONL
	// reader then passes on rows whose strings point into its line
	// buffers, with no copy per field, and fills those buffers again once
	// their rows are admitted (see lineDecoder). Without it every string
	// is the row's own.
	SinkCopies bool

	seen  map[string]bool
	meter *engine.FileMeter // the file being read, for a progress bar of rows and bytes
	dec   lineDecoder       // the calling goroutine's decoder (see decode.go)
}

// New returns an ingester for a preset.
func New(preset string, sink Sink) (*Ingester, error) {
	if preset == "" {
		preset = PresetItems
	}
	ok := false
	for _, p := range Presets {
		ok = ok || p == preset
	}
	if !ok {
		return nil, fmt.Errorf("%w: unknown preset %q (known: %s)", engine.ErrConfig, preset, strings.Join(Presets, ", "))
	}
	return &Ingester{Preset: preset, Sink: sink, seen: map[string]bool{}, Stats: Stats{Reasons: map[string]int64{}}}, nil
}

// IngestPaths ingests files and directories in order. A directory under
// the taskdir preset is a folder of task folders; under other presets it
// stands for the .jsonl (also .jsonl.gz, .jsonl.zst) and .parquet files below it.
func (g *Ingester) IngestPaths(ctx context.Context, paths []string) error {
	files, err := g.expand(paths)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.IngestFile(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

func (g *Ingester) expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			switch {
			case d.IsDir():
			case g.Preset == PresetTaskDir && name == "task.json":
				out = append(out, path)
			case g.Preset != PresetTaskDir && (engine.IsJSONLName(name) || engine.IsParquet(name)):
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
	}
	return out, nil
}

// IngestFile ingests one file (for taskdir: one task.json).
func (g *Ingester) IngestFile(ctx context.Context, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	g.Stats.Files++
	g.meter = engine.MeterFile(ctx, path)
	defer g.meter.Done()
	// The source snapshot time stands for the ingest time, so that re-running
	// an ingest over unchanged files writes identical shards.
	mtime := st.ModTime().UTC().Truncate(time.Second)
	switch {
	case g.Preset == PresetTaskDir || filepath.Base(path) == "task.json":
		g.Stats.Rows++
		g.meter.Row(0)
		it, ferr := readTaskDir(filepath.Dir(path))
		if ferr != nil {
			return g.reject("", path, 0, "invalid_value", ferr.Error())
		}
		return g.accept(it, path, 0, mtime)
	case engine.IsParquet(path):
		return g.ingestParquet(ctx, path, nil, mtime)
	default:
		return g.ingestJSONL(ctx, path, mtime, nil)
	}
}

// IngestRange ingests one shard part's piece of a file (see
// engine.PlanFileParts): whole files as IngestFile, JSONL lines starting in a
// byte range, Parquet row groups. Row and line numbers are the file's own.
func (g *Ingester) IngestRange(ctx context.Context, r engine.FileRange) error {
	switch r.Unit {
	case engine.RangeWhole:
		return g.IngestFile(ctx, r.Path)
	case engine.RangeBytes, engine.RangeRowGroups:
	default:
		return fmt.Errorf("%w: %s: unknown range unit %q", engine.ErrInput, r.Path, r.Unit)
	}
	st, err := os.Stat(r.Path)
	if err != nil {
		return fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	g.Stats.Files++
	g.meter = engine.MeterFile(ctx, r.Path)
	defer g.meter.Done()
	mtime := st.ModTime().UTC().Truncate(time.Second)
	if r.Unit == engine.RangeRowGroups {
		groups := make([]int, 0, r.End-r.Start)
		for i := r.Start; i < r.End; i++ {
			groups = append(groups, int(i))
		}
		return g.ingestParquet(ctx, r.Path, groups, mtime)
	}
	return g.ingestJSONL(ctx, r.Path, mtime, &r)
}

func (g *Ingester) ingestParquet(ctx context.Context, path string, rowGroups []int, mtime time.Time) error {
	if g.Preset == PresetVerilogEval {
		return g.parquetRows(ctx, path, rowGroups, func(r veRow) engine.Item { return fromVerilogEval(r) }, mtime)
	}
	return g.parquetRows(ctx, path, rowGroups, func(it engine.Item) engine.Item { return it }, mtime)
}

// parquetLoop calls fn for every row; a row with a value that does not
// convert to T's field types (see engine.Codec.Read) goes to bad instead.
func parquetLoop[T any](ctx context.Context, path string, rowGroups []int, fn func(row int64, v T) error, bad func(*engine.RowError) error) error {
	r, err := engine.OpenParquetRowGroups[T](ctx, path, nil, rowGroups)
	if err != nil {
		return err
	}
	defer r.Close()
	r.Lenient()
	row := r.Offset()
	for {
		rows, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w (after row %d)", err, row)
		}
		for i, v := range rows {
			row++
			if rerr := r.RowError(i); rerr != nil {
				err = bad(rerr)
			} else {
				err = fn(row, v)
			}
			if err != nil {
				return err
			}
		}
	}
}

func (g *Ingester) parquetRows(ctx context.Context, path string, rowGroups []int, conv any, mtime time.Time) error {
	bad := func(e *engine.RowError) error {
		g.Stats.Rows++
		g.meter.Row(0)
		return g.reject("", path, e.Row, "invalid_value", e.Err.Error())
	}
	switch f := conv.(type) {
	case func(veRow) engine.Item:
		return parquetLoop(ctx, path, rowGroups, func(row int64, v veRow) error {
			g.Stats.Rows++
			g.meter.Row(0)
			return g.acceptChecked(f(v), path, row, mtime)
		}, bad)
	case func(engine.Item) engine.Item:
		return parquetLoop(ctx, path, rowGroups, func(row int64, v engine.Item) error {
			g.Stats.Rows++
			g.meter.Row(0)
			return g.acceptChecked(f(v), path, row, mtime)
		}, bad)
	}
	return nil
}

// acceptChecked screens strings from Parquet for invalid UTF-8, which the
// JSONL path catches per line.
func (g *Ingester) acceptChecked(it engine.Item, path string, row int64, mtime time.Time) error {
	for name, s := range map[string]string{"item_id": it.ItemID, "instruction": it.Instruction, "reference": it.Reference, "verifier.harness": it.Verifier.Harness} {
		if !utf8.ValidString(s) {
			return g.reject(it.ItemID, path, row, "invalid_utf8", name+": invalid UTF-8")
		}
	}
	return g.accept(it, path, row, mtime)
}

// decode decodes one line of the ingester's preset with dec into *it
// (zero on entry; left zero on an error).
func (g *Ingester) decode(dec *lineDecoder, raw []byte, it *engine.Item) error {
	if g.Preset == PresetVerilogEval {
		var r veRow
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		*it = fromVerilogEval(r)
		return nil
	}
	return dec.decodeTo(raw, it)
}

func (g *Ingester) accept(it engine.Item, path string, line int64, mtime time.Time) error {
	if rej := check(&it, path, mtime); rej != nil {
		return g.reject(rej.id, path, line, rej.reason, rej.detail)
	}
	return g.admit(it, path, line)
}

// check normalizes an item and validates it: nil, or why it is rejected.
// It touches nothing but it, so the JSONL workers call it in parallel.
func check(it *engine.Item, path string, mtime time.Time) *rowRejection {
	it.Normalize(mtime)
	if it.Provenance.Source == "" {
		it.Provenance.Source = filepath.Base(path)
	}
	if errs := it.Validate(); len(errs) > 0 {
		var parts []string
		for _, e := range errs {
			parts = append(parts, e.Error())
		}
		return &rowRejection{id: it.ItemID, reason: errs[0].Reason, detail: strings.Join(parts, "; ")}
	}
	return nil
}

// admit passes a checked item to the sink unless its id was seen before.
func (g *Ingester) admit(it engine.Item, path string, line int64) error {
	if g.seen[it.ItemID] {
		return g.reject(it.ItemID, path, line, "duplicate_id", "item_id already ingested")
	}
	g.seen[strings.Clone(it.ItemID)] = true // not a string into a JSONL chunk, which it would keep
	g.Stats.Items++
	return g.Sink.Item(it)
}

func (g *Ingester) reject(id, path string, line int64, reason, detail string) error {
	g.Stats.Rejected++
	g.Stats.Reasons[reason]++
	where := path
	if line > 0 {
		where = fmt.Sprintf("%s:%d", path, line)
	}
	if len(detail) > 1024 {
		detail = detail[:1024] + "…"
	}
	return g.Sink.Reject(engine.Rejection{ItemID: id, Stage: "ingest", Gate: "schema", Reason: reason, Detail: where + ": " + detail})
}

// idOf digs an item id out of a row that failed to decode, best effort.
func idOf(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"item_id", "id"} {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
