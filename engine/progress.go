package engine

import (
	"io"
	"os"
	"sync"

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
		b.once.Do(func() { b.p = mpb.New(mpb.WithOutput(b.out), mpb.WithWidth(40)) })
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
