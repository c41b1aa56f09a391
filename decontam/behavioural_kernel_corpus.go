package decontam

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
)

// The corpus side of kernel behavioural matching when the corpus is files
// (`decontam check --corpus`) rather than a stage's items: a kernel's
// argument signature is in the item columns (domain, verifier harness and
// top, interface args), which a text record (dedup.Record) does not carry,
// so the files are read a second time with the item reader the pipeline's
// sources use (ingest preset items), and only the rows that are CPU kernel
// items stating their arguments (ExecutableKernel) are kept, with their
// places among all corpus rows: a match names its row as the lexical and
// RTL passes do, which --purify needs.

// KernelCorpus is what ReadKernelCorpus found in the corpus files.
type KernelCorpus struct {
	Rows  int64 // corpus rows read
	Items int64 // of them, rows of the item contract (ingest admitted them)
	// FirstRejection is ingest's word on the first row that is not an item
	// ("file:line: why"), for a note on a corpus of no items.
	FirstRejection string
	Read           time.Duration // reading the files
	items          []engine.Item // the executable kernels
	rows           []int64       // their places among all rows
}

// Kernels is the number of corpus rows that are CPU kernel items stating
// their arguments: those behavioural matching runs.
func (k *KernelCorpus) Kernels() int { return len(k.items) }

// ReadKernelCorpus reads paths (files, in order) as item rows. Ingest
// passes every row to its sink exactly once, admitted or rejected (a row
// that is not an item, a bad line, a repeated item_id), so counting both
// gives each kernel its place among all rows, as the text reader
// (dedup.ScanRecords) counts them. A row whose item_id repeats an earlier
// row's is rejected by ingest and so not run: the earlier row is.
func ReadKernelCorpus(ctx context.Context, paths []string) (*KernelCorpus, error) {
	start := time.Now()
	kc := &KernelCorpus{}
	g, err := ingest.New(ingest.PresetItems, ingest.Sink{
		Item: func(it engine.Item) error {
			if ExecutableKernel(it) {
				kc.items, kc.rows = append(kc.items, it), append(kc.rows, kc.Rows)
			}
			kc.Rows++
			kc.Items++
			return nil
		},
		Reject: func(r engine.Rejection) error {
			if kc.FirstRejection == "" {
				kc.FirstRejection = r.Detail
			}
			kc.Rows++
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := g.IngestFile(ctx, p); err != nil {
			return nil, fmt.Errorf("%w: corpus %s read as items: %v", ErrInput, p, err)
		}
	}
	kc.Read = time.Since(start)
	return kc, nil
}

// CheckKernels runs the corpus kernels against the benchmark kernel
// problems of their argument signature (a BehaviouralBenchmark's Kernels)
// with judge, a kernel verifier (CPU backend), as the stage does; fn gets
// each pass with its corpus row. The summary counts all corpus rows.
func CheckKernels(ctx context.Context, kx *BehaviouralIndex, judge engine.Judge, kc *KernelCorpus, cfg BehaviouralConfig, fn func(record int64, m Match) error) (BehaviouralSummary, error) {
	s, err := checkKernels(ctx, kx, judge, kc.items, kc.rows, cfg, fn)
	s.Records = kc.Rows
	return s, err
}
