package decontam

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// The interface index of a persisted corpus index (the reverse direction
// of behavioural matching): a benchmark published after the corpus was
// indexed is checked against the index, not the corpus, so the index keeps
// what execution needs. designs.jsonl holds every corpus design (code,
// top module, Yosys-read interface or why it could not be read) with its
// row; a check then reads interfaces from it instead of running Yosys over
// the corpus again, and simulates only the interface-compatible pairs.

// designsFile is the interface index inside a corpus index directory.
const designsFile = "designs.jsonl"

// designRow is one line of designs.jsonl.
type designRow struct {
	Row   int64             `json:"row"` // the corpus row (0-based, in indexed order)
	ID    string            `json:"id"`
	Field string            `json:"field"`
	Top   string            `json:"top"`
	Code  string            `json:"code"`
	Iface *engine.Interface `json:"interface,omitempty"`
	Err   string            `json:"error,omitempty"` // why the interface could not be read
	Infra bool              `json:"infra,omitempty"` // Err was the tool's fault: the design is unjudged, not unreadable
}

// IndexOptions are the optional parts of an index build.
type IndexOptions struct {
	// Designs, on a corpus index, also writes the interface index with
	// the extractor (and workers) it gives; nil builds a lexical-only index.
	Designs *BehaviouralConfig
	// KernelPaths, on a corpus index, are the corpus files read again as
	// items for the kernel index (kernels.jsonl; no tool needed); nil
	// builds none.
	KernelPaths []string
}

// designWriter streams designs.jsonl while the builder indexes the rows;
// rows are buffered designChunk at a time so their interfaces are read in
// parallel (recordDesigns).
type designWriter struct {
	cfg     BehaviouralConfig
	f       *os.File
	w       *bufio.Writer
	pending RecordSlice
	meta    *IndexMeta
}

func newDesignWriter(dir string, cfg BehaviouralConfig, meta *IndexMeta) (*designWriter, error) {
	cfg.defaults()
	f, err := os.Create(filepath.Join(dir, designsFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	return &designWriter{cfg: cfg, f: f, w: bufio.NewWriterSize(f, 1<<20), meta: meta}, nil
}

// add queues the record's designs (none for a row without Verilog).
func (dw *designWriter) add(ctx context.Context, r dedup.Record) error {
	// Held past the callback: a Parquet reader's strings alias its
	// record batch, so the queued row is a copy.
	c := dedup.Record{ID: strings.Clone(r.ID), Fields: make([]dedup.Field, len(r.Fields))}
	for i, f := range r.Fields {
		c.Fields[i] = dedup.Field{Name: strings.Clone(f.Name), Text: strings.Clone(f.Text)}
	}
	dw.pending = append(dw.pending, c)
	if len(dw.pending) < designChunk {
		return nil
	}
	return dw.flush(ctx)
}

// flush reads the queued rows' interfaces and writes their designs.
func (dw *designWriter) flush(ctx context.Context) error {
	base := dw.meta.DesignRows
	err := recordDesigns(dw.pending, dw.cfg)(ctx, func(b designBatch) error {
		for _, d := range b.designs {
			row := designRow{Row: base + b.row, ID: b.id, Field: d.field, Top: d.top, Code: d.code}
			if d.err != nil {
				row.Err, row.Infra = d.err.Error(), d.infra
				dw.meta.DesignErrors++
			} else {
				iface := d.iface
				row.Iface = &iface
			}
			line, _ := json.Marshal(row)
			if _, err := dw.w.Write(append(line, '\n')); err != nil {
				return fmt.Errorf("%w: %v", ErrIO, err)
			}
			dw.meta.Designs++
		}
		return nil
	})
	dw.meta.DesignRows += int64(len(dw.pending))
	dw.pending = dw.pending[:0]
	return err
}

// close writes the queued rows, flushes designs.jsonl and marks the index
// as holding it.
func (dw *designWriter) close(ctx context.Context) error {
	if err := dw.flush(ctx); err != nil {
		dw.f.Close()
		return err
	}
	if err := errors.Join(dw.w.Flush(), dw.f.Close()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIO, designsFile, err)
	}
	dw.meta.Behavioural = true
	return nil
}

// DesignIndex is a corpus index's interface index, opened without its
// n-gram postings (a behavioural check needs only designs.jsonl).
type DesignIndex struct {
	Dir  string
	Meta IndexMeta
}

// OpenDesignIndex reads the index directory's header.
func OpenDesignIndex(dir string) (*DesignIndex, error) {
	meta, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	return &DesignIndex{Dir: dir, Meta: meta}, nil
}

// Unavailable says why the index cannot be matched behaviourally ("" when
// it can): a benchmark index, an index of an older version, or one built
// lexical-only hold no interface index.
func (ix *DesignIndex) Unavailable() string {
	switch {
	case ix.Meta.Side != SideCorpus:
		return "a " + ix.Meta.Side + " index holds no corpus designs"
	case ix.Meta.Version < 3:
		return fmt.Sprintf("index version %d was written before corpus indexes kept their designs' interfaces (lexical only); rebuild it with `crucible decontam index --side corpus` for behavioural coverage", ix.Meta.Version)
	case !ix.Meta.Behavioural:
		return "the index was built lexical-only (--method lexical, or without Yosys); rebuild it with Yosys on PATH for behavioural coverage"
	}
	return ""
}

// CheckBehaviouralIndex is CheckBehavioural against a persisted corpus
// index's interface index: no corpus row is re-read and no Yosys runs on
// the corpus side. It fails (ErrInput) when the index has none
// (Unavailable).
func CheckBehaviouralIndex(ctx context.Context, bx *BehaviouralIndex, judge engine.Judge, ix *DesignIndex, cfg BehaviouralConfig, fn func(record int64, m Match) error) (BehaviouralSummary, error) {
	if why := ix.Unavailable(); why != "" {
		return BehaviouralSummary{}, fmt.Errorf("%w: %s: behavioural matching unavailable: %s", ErrInput, ix.Dir, why)
	}
	cfg.defaults()
	s, err := checkDesigns(ctx, bx, judge, ix.designSource(), cfg, fn)
	s.Records = ix.Meta.DesignRows // rows without designs are not in the file
	return s, err
}

// designSource reads designs.jsonl, one batch per row holding designs.
func (ix *DesignIndex) designSource() designSource {
	return func(ctx context.Context, fn func(designBatch) error) error {
		p := filepath.Join(ix.Dir, designsFile)
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInput, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var cur designBatch
		flush := func() error {
			if len(cur.designs) == 0 {
				return nil
			}
			b := cur
			cur = designBatch{}
			return fn(b)
		}
		for line := 1; sc.Scan(); line++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r designRow
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return fmt.Errorf("%w: %s:%d: %v", ErrInput, p, line, err)
			}
			if r.Row != cur.row || r.ID != cur.id {
				if err := flush(); err != nil {
					return err
				}
				cur.row, cur.id = r.Row, r.ID
			}
			d := &bhvDesign{field: r.Field, code: r.Code, top: r.Top}
			switch {
			case r.Err != "":
				d.err, d.infra = errors.New(r.Err), r.Infra
			case r.Iface == nil:
				return fmt.Errorf("%w: %s:%d: a design with neither interface nor error", ErrInput, p, line)
			default:
				d.iface = *r.Iface
			}
			cur.designs = append(cur.designs, d)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInput, p, err)
		}
		return flush()
	}
}
