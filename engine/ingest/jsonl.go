package ingest

import (
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// A JSONL file is read in three steps. One goroutine scans the file into
// chunks of whole lines (engine.ScanJSONL: line numbers, blank lines,
// invalid UTF-8 and over-long lines as before); up to Workers goroutines
// decode and validate the chunks' lines (the part of ingest that costs CPU
// and depends on nothing but the line); and the calling goroutine takes
// the chunks back in input order and, line by line, rejects or admits each
// row: the duplicate-id check, the counts and every Sink call happen there,
// in the order of the file, so the output is the same whatever the number
// of workers (Workers 1 runs all three steps on the calling goroutine).
//
// Memory: at most chunkWindow(workers) chunks are read and not yet
// admitted, each up to chunkBytes of line text plus the items decoded from
// it (about as much again), so a few MiB per worker whatever the file size.

const chunkBytes = 1 << 20 // line text per chunk

// chunkLines bounds the lines per chunk, for files of short lines (a
// variable so that tests can cut many chunks from a small file).
var chunkLines = 4096

// chunkWindow is how many chunks may be in flight: enough to keep every
// worker busy while the admitting goroutine works through the oldest.
func chunkWindow(workers int) int { return 2*workers + 2 }

// lineRow is one line of a chunk: its raw text (a span of the chunk's
// buffer), or the scanner's complaint about it, and once decoded the item
// or the reason it is rejected.
type lineRow struct {
	line       int64
	start, end int                // raw text: chunk.buf[start:end]
	bad        *engine.JSONLError // a line the scanner refused (no text)
	it         engine.Item
	rej        *rowRejection // nil: an item for admit
}

// rowRejection is a rejection decided before admit: its id, reason code
// and detail (without the file and line, which reject adds).
type rowRejection struct{ id, reason, detail string }

type chunk struct {
	seq  int
	buf  []byte
	rows []lineRow
}

// workers is the number of decoding goroutines for this ingester.
func (g *Ingester) workers() int {
	if g.Workers > 0 {
		return g.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (g *Ingester) ingestJSONL(ctx context.Context, path string, mtime time.Time, r *engine.FileRange) error {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		return nil // an empty file holds no rows; the stats show 0
	}
	scan := func(fn func(int64, []byte) error, bad func(*engine.JSONLError)) error {
		if r != nil {
			return engine.ScanJSONLRange(path, r.Start, r.End, fn, bad)
		}
		return engine.ScanJSONL(path, fn, bad)
	}
	if g.workers() <= 1 {
		return g.jsonlSequential(ctx, path, mtime, scan)
	}
	return g.jsonlParallel(ctx, path, mtime, scan)
}

// jsonlSequential reads, decodes and admits on the calling goroutine.
func (g *Ingester) jsonlSequential(ctx context.Context, path string, mtime time.Time, scan func(func(int64, []byte) error, func(*engine.JSONLError)) error) error {
	var row lineRow
	return scan(func(line int64, raw []byte) error {
		row = lineRow{line: line, end: len(raw)}
		g.prepare(&g.dec, &row, raw, path, mtime)
		return g.admitLine(ctx, path, &row, len(raw))
	}, func(e *engine.JSONLError) {
		row = lineRow{line: e.Line, bad: e}
		g.prepare(&g.dec, &row, nil, path, mtime)
		_ = g.admitLine(ctx, path, &row, 0)
	})
}

// prepare decodes and validates one line (no shared state but the
// ingester's read-only settings; dec is the goroutine's own decoder).
func (g *Ingester) prepare(dec *lineDecoder, row *lineRow, raw []byte, path string, mtime time.Time) {
	if row.bad != nil {
		reason := "invalid_utf8"
		if strings.Contains(row.bad.Err.Error(), "longer than") {
			reason = "too_large"
		}
		row.rej = &rowRejection{reason: reason, detail: row.bad.Err.Error()}
		return
	}
	// Decoded in place: an Item returned by value was a heap object per
	// line (the decoder's callbacks take its address).
	row.it = engine.Item{}
	if err := g.decode(dec, raw, &row.it); err != nil {
		row.rej = &rowRejection{id: idOf(raw), reason: "invalid_json", detail: err.Error()}
		return
	}
	row.rej = check(&row.it, path, mtime)
}

// admitLine counts a prepared line and passes it to the sink: rejected,
// or admitted unless its id was seen before. An interrupt stops a long
// file within a few hundred rows.
func (g *Ingester) admitLine(ctx context.Context, path string, row *lineRow, size int) error {
	if row.bad == nil && row.line%256 == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	g.Stats.Rows++
	if row.bad == nil {
		g.meter.Row(int64(size) + 1)
	}
	if row.rej != nil {
		err := g.reject(row.rej.id, path, row.line, row.rej.reason, row.rej.detail)
		if row.bad != nil {
			return nil // as before: a refused line's sink error is not the scan's
		}
		return err
	}
	return g.admit(row.it, path, row.line)
}

// jsonlParallel runs the three steps on their goroutines (see above).
func (g *Ingester) jsonlParallel(ctx context.Context, path string, mtime time.Time, scan func(func(int64, []byte) error, func(*engine.JSONLError)) error) error {
	workers := g.workers()
	window := chunkWindow(workers)
	eg, ectx := errgroup.WithContext(ctx)
	tokens := make(chan struct{}, window) // one per chunk read and not yet admitted
	decoded := make(chan *chunk, window)
	// Chunks admitted, for the reader to fill again (SinkCopies only):
	// fresh 1 MiB buffers for a whole file were page faults, zeroing and
	// GC work about as costly as reading it.
	free := make(chan *chunk, window)
	eg.Go(func() error {
		defer close(decoded)
		dec := errgroup.Group{}
		dec.SetLimit(workers)
		decoders := make(chan *lineDecoder, workers)
		for range workers {
			// Strings into the chunk only for a sink that copies them: a
			// sink that kept a few rows of a big file would keep their
			// chunks. The chunk is not written again until it is admitted.
			decoders <- &lineDecoder{alias: g.SinkCopies}
		}
		var cur *chunk
		seq := 0
		send := func() error {
			c := cur
			cur = nil
			dec.Go(func() error {
				d := <-decoders
				for i := range c.rows {
					row := &c.rows[i]
					g.prepare(d, row, c.buf[row.start:row.end], path, mtime)
				}
				decoders <- d
				select {
				case decoded <- c:
					return nil
				case <-ectx.Done():
					return ectx.Err()
				}
			})
			return nil
		}
		rowsHint := 256 // lines in the last chunk: the next one's row capacity
		start := func(need int) error {
			select {
			case tokens <- struct{}{}:
			case <-ectx.Done():
				return ectx.Err()
			}
			select {
			case cur = <-free:
			default:
			}
			if cur != nil && cap(cur.buf) >= need {
				cur.seq, cur.buf, cur.rows = seq, cur.buf[:0], cur.rows[:0]
			} else {
				cur = &chunk{seq: seq, buf: make([]byte, 0, max(chunkBytes, need)), rows: make([]lineRow, 0, rowsHint)}
			}
			seq++
			return nil
		}
		add := func(row lineRow, raw []byte) error {
			// A line that does not fit the chunk's buffer starts the next
			// chunk: the buffer never grows, which would copy it (and the
			// decoded items' strings point into it, see lineDecoder).
			if cur != nil && len(cur.buf)+len(raw) > cap(cur.buf) {
				rowsHint = len(cur.rows) + len(cur.rows)/8 + 1
				if err := send(); err != nil {
					return err
				}
			}
			if cur == nil {
				if err := start(len(raw)); err != nil {
					return err
				}
			}
			row.start = len(cur.buf)
			cur.buf = append(cur.buf, raw...)
			row.end = len(cur.buf)
			cur.rows = append(cur.rows, row)
			if len(cur.buf) >= chunkBytes || len(cur.rows) >= chunkLines {
				rowsHint = len(cur.rows) + len(cur.rows)/8 + 1
				return send()
			}
			return nil
		}
		var addErr error
		err := scan(func(line int64, raw []byte) error {
			return add(lineRow{line: line}, raw)
		}, func(e *engine.JSONLError) {
			if addErr == nil {
				addErr = add(lineRow{line: e.Line, bad: e}, nil)
			}
		})
		if err == nil {
			err = addErr
		}
		if err == nil && cur != nil {
			err = send()
		}
		if derr := dec.Wait(); err == nil {
			err = derr
		}
		return err
	})
	// An error here cancels ectx, which every blocked send of the reader
	// and the workers selects on.
	eg.Go(func() error { return g.admitChunks(ctx, path, decoded, tokens, free, window) })
	return eg.Wait()
}

// admitChunks takes decoded chunks (in any order) and admits their lines
// in input order; pending is a ring of window slots indexed by sequence
// number, enough since at most window chunks are out at once.
func (g *Ingester) admitChunks(ctx context.Context, path string, decoded <-chan *chunk, tokens <-chan struct{}, free chan<- *chunk, window int) error {
	pending := make([]*chunk, window)
	next := 0
	for c := range decoded {
		pending[c.seq%window] = c
		for pending[next%window] != nil && pending[next%window].seq == next {
			c := pending[next%window]
			pending[next%window] = nil
			for i := range c.rows {
				row := &c.rows[i]
				if err := g.admitLine(ctx, path, row, row.end-row.start); err != nil {
					return err
				}
			}
			next++
			if g.SinkCopies {
				select {
				case free <- c:
				default:
				}
			}
			<-tokens
		}
	}
	return nil
}
