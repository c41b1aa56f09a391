package pack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// chunkTokens is the size of one token slab. Samples never straddle slabs,
// so at most B words per slab are wasted (0.2% at B = 32768).
const chunkTokens = 8 << 20

// tokenStore holds every kept sample's packed tokens in large pointer-free
// slabs: the garbage collector never scans them and a 540M-token corpus costs
// ~2 GiB instead of the ~6 GiB of per-sample []int32 + []int8 + headers.
type tokenStore struct {
	mu     sync.Mutex
	chunks [][]uint32
}

func (s *tokenStore) newChunk() (int, []uint32) {
	c := make([]uint32, 0, chunkTokens)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, c)
	return len(s.chunks) - 1, c
}

func (s *tokenStore) get(loc tokenLoc) []uint32 {
	return s.chunks[loc.chunk][loc.off : loc.off+loc.n]
}

// tokenLoc addresses one sample's tokens in the store.
type tokenLoc struct {
	chunk, off, n uint32
}

// sample is what the pipeline keeps of one input row after rendering.
type sample struct {
	id, domain, family string
	source             string // file:line or file#row, for rejections
	tokens, trained    int
	loc                tokenLoc
	stored             bool
	reject             *RejectError
}

// rawBatch is a run of consecutive input rows: JSONL lines still to decode,
// or Parquet rows already decoded.
type rawBatch struct {
	index int
	path  string
	first int64 // line (JSONL) or row (Parquet) number of the first entry
	lines [][]byte
	nos   []int64 // line number of each JSONL entry (blank lines are skipped)
	rows  []Trajectory
	bad   []*engine.JSONLError // lines ScanJSONL could not pass on, in order
}

// corpus is the rendered input: samples in input order plus their tokens.
type corpus struct {
	samples []sample
	store   *tokenStore
}

// loadCorpus reads every input file (JSONL or Parquet), renders and
// tokenises rows on workers goroutines, and keeps tokens of samples of at
// most seqLen tokens. Output order is input order whatever the scheduling.
func loadCorpus(ctx context.Context, paths []string, r *Renderer, seqLen, workers int) (*corpus, error) {
	g, ctx := errgroup.WithContext(ctx)
	batches := make(chan *rawBatch, 2*workers)
	results := make(chan struct {
		index   int
		samples []sample
	}, 2*workers)
	store := &tokenStore{}
	g.Go(func() error {
		defer close(batches)
		return readBatches(ctx, paths, batches)
	})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			tw := &tokenWorker{r: r, enc: r.tok.NewEncoder(), store: store, seqLen: seqLen}
			for b := range batches {
				out, err := tw.process(b)
				if err != nil {
					return err
				}
				select {
				case results <- struct {
					index   int
					samples []sample
				}{b.index, out}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}
	go func() { wg.Wait(); close(results) }()
	var ordered [][]sample
	for res := range results {
		for len(ordered) <= res.index {
			ordered = append(ordered, nil)
		}
		ordered[res.index] = res.samples
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c := &corpus{store: store}
	for _, s := range ordered {
		c.samples = append(c.samples, s...)
	}
	return c, nil
}

const batchLines = 64

func readBatches(ctx context.Context, paths []string, out chan<- *rawBatch) error {
	index := 0
	send := func(b *rawBatch) error {
		b.index = index
		index++
		select {
		case out <- b:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, path := range paths {
		fm := engine.MeterFile(ctx, path)
		if engine.IsParquet(path) {
			pr, err := engine.OpenParquet[Trajectory](ctx, path, nil)
			if err != nil {
				return err
			}
			var row int64
			for {
				rows, err := pr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					pr.Close()
					return err
				}
				for range rows {
					fm.Row(0)
				}
				for i := 0; i < len(rows); i += batchLines {
					chunk := append([]Trajectory(nil), rows[i:min(i+batchLines, len(rows))]...)
					if err := send(&rawBatch{path: path, first: row + int64(i), rows: chunk}); err != nil {
						pr.Close()
						return err
					}
				}
				row += int64(len(rows))
			}
			pr.Close()
			fm.Done()
			continue
		}
		cur := &rawBatch{path: path}
		err := engine.ScanJSONL(path, func(line int64, raw []byte) error {
			fm.Row(int64(len(raw)) + 1)
			cur.lines = append(cur.lines, append([]byte(nil), raw...))
			cur.nos = append(cur.nos, line)
			if len(cur.lines) >= batchLines {
				b := cur
				cur = &rawBatch{path: path}
				return send(b)
			}
			return nil
		}, func(e *engine.JSONLError) {
			// Keep the bad line in sequence as a nil entry so its rejection
			// lands in input order.
			cur.lines = append(cur.lines, nil)
			cur.nos = append(cur.nos, e.Line)
			cur.bad = append(cur.bad, e)
		})
		if err != nil {
			return err
		}
		fm.Done()
		if len(cur.lines) > 0 {
			if err := send(cur); err != nil {
				return err
			}
		}
	}
	return nil
}

// tokenWorker renders batches into its own slab.
type tokenWorker struct {
	r      *Renderer
	enc    *tokenizer.Encoder
	store  *tokenStore
	seqLen int
	chunk  int
	slab   []uint32
	buf    []uint32
	labels map[string]string
}

// intern returns a private copy of a domain or family label, one per value.
func (w *tokenWorker) intern(s string) string {
	if v, ok := w.labels[s]; ok {
		return v
	}
	if w.labels == nil {
		w.labels = map[string]string{}
	}
	v := strings.Clone(s)
	w.labels[v] = v
	return v
}

func (w *tokenWorker) process(b *rawBatch) ([]sample, error) {
	n := len(b.lines) + len(b.rows)
	out := make([]sample, 0, n)
	bad := b.bad
	for i := 0; i < n; i++ {
		var t Trajectory
		var src string
		if b.rows != nil {
			t = b.rows[i]
			src = fmt.Sprintf("%s#%d", b.path, b.first+int64(i))
		} else {
			line := b.lines[i]
			if line == nil {
				e := bad[0]
				bad = bad[1:]
				out = append(out, sample{source: fmt.Sprintf("%s:%d", e.Path, e.Line), reject: &RejectError{"bad_line", e.Err.Error()}})
				continue
			}
			src = fmt.Sprintf("%s:%d", b.path, b.nos[i])
			if err := json.Unmarshal(line, &t); err != nil {
				out = append(out, sample{source: src, reject: &RejectError{"bad_json", err.Error()}})
				continue
			}
		}
		out = append(out, w.render(&t, src))
	}
	return out, nil
}

func (w *tokenWorker) render(t *Trajectory, src string) sample {
	// Copy the strings kept past this call: the JSON decoder's strings point
	// into the whole input line, and keeping one would pin ~30 KB per sample
	// (1.7 GB at 540M tokens).
	s := sample{id: strings.Clone(t.ID), domain: w.intern(t.Domain), family: w.intern(t.Family), source: src}
	var err error
	w.buf, err = w.r.RenderPacked(w.enc, w.buf[:0], t)
	if err != nil {
		var re *RejectError
		if errors.As(err, &re) {
			s.reject = re
			return s
		}
		s.reject = &RejectError{"render", err.Error()}
		return s
	}
	s.tokens = len(w.buf)
	for _, v := range w.buf {
		if v&trainedBit != 0 {
			s.trained++
		}
	}
	if s.tokens > w.seqLen {
		return s // dropped: counted, never truncated, tokens not kept
	}
	if w.slab == nil || len(w.slab)+len(w.buf) > cap(w.slab) {
		w.chunk, w.slab = w.store.newChunk()
	}
	off := len(w.slab)
	w.slab = append(w.slab, w.buf...)
	// the store's slice header was taken at allocation; the backing array is
	// shared and never reallocated (appends stay within cap), so reads see it.
	s.loc = tokenLoc{chunk: uint32(w.chunk), off: uint32(off), n: uint32(len(w.buf))}
	s.stored = true
	if cap(w.buf) > 4*w.seqLen {
		w.buf = nil // do not pin a huge buffer after a very long sample
	}
	return s
}
