package decontam

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// The kernel index of a persisted corpus index (the reverse direction of
// kernel behavioural matching, index version 4): a corpus item's argument
// signature is in its item columns, which the n-gram index and the
// interface index (designs.jsonl, from text records) do not keep, so a
// corpus index built with behavioural matching also reads its files as
// items (ReadKernelCorpus) and keeps, in kernels.jsonl, each CPU kernel
// item stating its arguments with its place among all corpus rows: what
// checkKernels needs to run it against a benchmark published later, with
// no corpus file at hand. Reading it back gives the KernelCorpus the
// --corpus path reads from the files, so both run one matcher (CheckKernels).

// kernelsFile is the kernel index inside a corpus index directory.
const kernelsFile = "kernels.jsonl"

// kernelRow is one line of kernels.jsonl: the parts of an executable
// kernel item (ExecutableKernel) that matching reads.
type kernelRow struct {
	Row       int64              `json:"row"` // the corpus row (0-based, among all rows, files in order)
	ID        string             `json:"id"`
	Harness   string             `json:"harness"`
	Top       string             `json:"top"`
	Reference string             `json:"reference"`
	Args      []engine.KernelArg `json:"args"`
}

// item is the kernel item the row was written from, as far as matching
// reads it.
func (r kernelRow) item() engine.Item {
	return engine.Item{ItemID: r.ID, Domain: engine.DomainKernel, Reference: r.Reference,
		Verifier: engine.Verifier{Harness: r.Harness, Top: r.Top}, Interface: engine.Interface{Args: r.Args}}
}

// writeKernelIndex reads paths (the corpus files) as items and writes
// their executable kernels to dir/kernels.jsonl (dir: the build's
// temporary directory; Finish publishes it), counting them in meta. Files
// that cannot be read as items are no error: the index then holds no
// kernels and says why (KernelReadError), as rows that are not items give
// none (KernelFirstRejection).
func writeKernelIndex(ctx context.Context, dir string, paths []string, meta *IndexMeta) error {
	kc, rerr := ReadKernelCorpus(ctx, paths)
	if rerr != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		kc = &KernelCorpus{}
	}
	f, err := os.Create(filepath.Join(dir, kernelsFile))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i, it := range kc.items {
		line, err := json.Marshal(kernelRow{Row: kc.rows[i], ID: it.ItemID, Harness: it.Verifier.Harness, Top: it.Verifier.Top,
			Reference: it.Reference, Args: it.Interface.Args})
		if err == nil {
			_, err = w.Write(append(line, '\n'))
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("%w: %s: %v", ErrIO, kernelsFile, err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIO, kernelsFile, err)
	}
	meta.KernelIndex = true
	meta.Kernels, meta.KernelRows, meta.KernelItems = int64(kc.Kernels()), kc.Rows, kc.Items
	meta.KernelFirstRejection = kc.FirstRejection
	if rerr != nil {
		meta.KernelReadError = rerr.Error()
	}
	return nil
}

// KernelsUnavailable says why the index holds no kernel index ("" when it
// does, though it may hold no kernels): a benchmark index, an index written
// before corpus indexes kept kernel items (version 3 or older), or one
// built lexical-only.
func (ix *DesignIndex) KernelsUnavailable() string {
	switch {
	case ix.Meta.Side != SideCorpus:
		return "a " + ix.Meta.Side + " index holds no corpus kernel items"
	case ix.Meta.Version < 4:
		return fmt.Sprintf("index version %d was written before corpus indexes kept kernel items' arguments; rebuild it with `crucible decontam index --side corpus` for kernel coverage", ix.Meta.Version)
	case !ix.Meta.KernelIndex:
		return "the index was built lexical-only (--method lexical)"
	}
	return ""
}

// KernelCorpus reads the index's kernel index back as the KernelCorpus
// ReadKernelCorpus read from the corpus files when the index was built:
// the same kernels at the same rows, and the same counts of rows and
// items. It fails (ErrInput) when the index has none (KernelsUnavailable)
// or a line of kernels.jsonl is not a kernel this reader can run.
func (ix *DesignIndex) KernelCorpus(ctx context.Context) (*KernelCorpus, error) {
	if why := ix.KernelsUnavailable(); why != "" {
		return nil, fmt.Errorf("%w: %s: kernel behavioural matching unavailable: %s", ErrInput, ix.Dir, why)
	}
	start := time.Now()
	kc := &KernelCorpus{Rows: ix.Meta.KernelRows, Items: ix.Meta.KernelItems, FirstRejection: ix.Meta.KernelFirstRejection}
	p := filepath.Join(ix.Dir, kernelsFile)
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var r kernelRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrInput, p, line, err)
		}
		it := r.item()
		switch {
		case !ExecutableKernel(it):
			return nil, fmt.Errorf("%w: %s:%d: item %q is not a CPU kernel stating its arguments (harness %q, top %q, %d args)", ErrInput, p, line, r.ID, r.Harness, r.Top, len(r.Args))
		case r.Row < 0 || r.Row >= kc.Rows || (len(kc.rows) > 0 && r.Row <= kc.rows[len(kc.rows)-1]):
			return nil, fmt.Errorf("%w: %s:%d: row %d out of order or past the %d indexed rows", ErrInput, p, line, r.Row, kc.Rows)
		}
		kc.items, kc.rows = append(kc.items, it), append(kc.rows, r.Row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, p, err)
	}
	if int64(len(kc.items)) != ix.Meta.Kernels {
		return nil, fmt.Errorf("%w: %s holds %d kernels, %s says %d", ErrInput, p, len(kc.items), metaFile, ix.Meta.Kernels)
	}
	kc.Read = time.Since(start)
	return kc, nil
}
