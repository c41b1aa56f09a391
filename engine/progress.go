package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress reports units of work done.
type Progress interface {
	Add(n int64)
	Done()
}

// ProgressFactory makes a reporter for a named task with a known total.
type ProgressFactory func(name string, total int64) Progress

type nopProgress struct{}

func (nopProgress) Add(int64) {}
func (nopProgress) Done()     {}

// IsTerminal reports whether f is a character device (an interactive terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Bars draws progress bars on a terminal; elsewhere it draws nothing, so
// scheduler logs stay clean (the structured log has per-stage lines).
type Bars struct {
	once sync.Once
	p    *mpb.Progress
	out  io.Writer
}

// NewBars returns bars drawn on w when w is a terminal, or a no-op.
func NewBars(w *os.File, enabled bool) *Bars {
	if !enabled || !IsTerminal(w) {
		return &Bars{}
	}
	return &Bars{out: w}
}

// Factory returns the ProgressFactory for a pipeline run.
func (b *Bars) Factory() ProgressFactory {
	if b.out == nil {
		return nil
	}
	return func(name string, total int64) Progress {
		b.once.Do(func() { b.p = mpb.New(mpb.WithOutput(b.out), mpb.WithWidth(40), mpb.WithAutoRefresh()) })
		bar := b.p.AddBar(total,
			mpb.PrependDecorators(decor.Name(name, decor.WC{C: decor.DindentRight | decor.DextraSpace}), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO)),
		)
		return &mpbProgress{bar: bar}
	}
}

// Wait flushes the bars.
func (b *Bars) Wait() {
	if b.p != nil {
		b.p.Wait()
	}
}

type mpbProgress struct{ bar *mpb.Bar }

func (m *mpbProgress) Add(n int64) { m.bar.IncrInt64(n) }
func (m *mpbProgress) Done() {
	if !m.bar.Completed() {
		m.bar.SetTotal(m.bar.Current(), true)
	}
}

// ReadMeter is told how much of its input a command has read: rows and
// bytes. Readers find it in their context (WithReadMeter), so a command's
// progress bar measures rows and bytes, not files: one big file moves the
// bar as it is read.
type ReadMeter interface {
	Add(rows, bytes int64)
}

type readMeterKey struct{}

// WithReadMeter returns ctx carrying m; a nil m switches metering off (for
// a second pass over the same input).
func WithReadMeter(ctx context.Context, m ReadMeter) context.Context {
	return context.WithValue(ctx, readMeterKey{}, m)
}

// AlsoMeter returns ctx whose read meter is m and, when ctx already
// carries one, that one too: a stage drawing its own progress keeps the
// caller's meter (a command's rows-and-bytes bar) counting.
func AlsoMeter(ctx context.Context, m ReadMeter) context.Context {
	if prev, _ := ctx.Value(readMeterKey{}).(ReadMeter); prev != nil {
		m = teeMeter{prev, m}
	}
	return WithReadMeter(ctx, m)
}

type teeMeter [2]ReadMeter

func (t teeMeter) Add(rows, bytes int64) {
	t[0].Add(rows, bytes)
	t[1].Add(rows, bytes)
}

// FileMeter meters the reading of one input file.
type FileMeter struct {
	m          ReadMeter
	size, seen int64
}

// MeterFile starts metering path for the ReadMeter in ctx (none: a no-op).
func MeterFile(ctx context.Context, path string) *FileMeter {
	m, _ := ctx.Value(readMeterKey{}).(ReadMeter)
	if m == nil {
		return &FileMeter{}
	}
	fm := &FileMeter{m: m}
	if st, err := os.Stat(path); err == nil {
		fm.size = st.Size()
	}
	return fm
}

// Row counts one row of n bytes (0 where a format has no per-row size,
// e.g. Parquet). Bytes are capped at the file's size, so a decompressed
// stream never runs the bar past its total.
func (f *FileMeter) Row(n int64) {
	if f.m == nil {
		return
	}
	n = max(0, min(n, f.size-f.seen))
	f.seen += n
	f.m.Add(1, n)
}

// Done accounts the bytes the rows did not (Parquet metadata, skipped
// lines): the whole file has been read.
func (f *FileMeter) Done() {
	if f.m == nil {
		return
	}
	if rest := f.size - f.seen; rest > 0 {
		f.m.Add(0, rest)
	}
	f.seen = f.size
}

// InputBytes totals the sizes of the regular files at paths (directories
// walked), the total of a read progress bar.
func InputBytes(paths []string) int64 {
	var n int64
	for _, p := range paths {
		filepath.WalkDir(p, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					n += info.Size()
				}
			}
			return nil
		})
	}
	return n
}

// progressMeter drives a Progress counted in bytes.
type progressMeter struct{ p Progress }

func (m progressMeter) Add(_, bytes int64) { m.p.Add(bytes) }

// MeterProgress adapts a stage's Progress, whose total is its input bytes,
// to a ReadMeter.
func MeterProgress(p Progress) ReadMeter { return progressMeter{p} }

// Reader returns a meter drawing one bar of rows and bytes read against
// totalBytes, and the function that finishes it; on no terminal both do
// nothing.
func (b *Bars) Reader(name string, totalBytes int64) (ReadMeter, func()) {
	if b.out == nil {
		return nil, func() {}
	}
	b.once.Do(func() { b.p = mpb.New(mpb.WithOutput(b.out), mpb.WithWidth(40), mpb.WithAutoRefresh()) })
	rb := &readBar{}
	rb.bar = b.p.AddBar(totalBytes,
		mpb.PrependDecorators(decor.Name(name, decor.WC{C: decor.DindentRight | decor.DextraSpace}),
			decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%d rows ", rb.rows.Load()) }),
			decor.Counters(decor.SizeB1024(0), "% .1f / % .1f")),
		mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO)),
	)
	return rb, func() {
		if !rb.bar.Completed() {
			rb.bar.SetTotal(rb.bar.Current(), true)
		}
		b.p.Wait()
	}
}

type readBar struct {
	bar  *mpb.Bar
	rows atomic.Int64
}

func (r *readBar) Add(rows, bytes int64) {
	r.rows.Add(rows)
	r.bar.IncrInt64(bytes)
}
