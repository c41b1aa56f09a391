package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/kernels"
)

// kernelCheckBackend is the kernel verifier backend `decontam check` judges
// with: behavioural matching wraps a corpus kernel in a C function with the
// problem's entry point, which only the CPU backend runs (decontam.ExecutableKernel).
const kernelCheckBackend = kernels.BackendCPU

// runKernelBehavioural matches the benchmarks' CPU kernel problems against
// the corpus rows that are kernel items stating their arguments: the
// --corpus rows, or those the corpus index cix kept (its kernel index,
// read back as the rows the files gave when it was built), with the
// stage's matcher (decontam.CheckKernels) and the kernel verifier the
// decontam stage builds by default, on the CPU backend. why (no error)
// says why nothing could be matched: a corpus index written before
// indexes kept kernel items, corpus rows that are not items, items none
// of which is such a kernel, or (auto) no C compiler; the caller notes it,
// or fails under --method behavioural when no RTL pass ran either. A
// missing compiler under --method behavioural is exit 2, as missing RTL
// tools are.
func runKernelBehavioural(ctx context.Context, o DecontamCheckOptions, m checkMethods, benches []*decontam.BehaviouralIndex, cix *decontam.DesignIndex,
	cfg decontam.BehaviouralConfig, fn func(row int64, m decontam.Match) error) (sums []decontam.BehaviouralSummary, why string, err error) {
	names := make([]string, len(benches))
	for i, bx := range benches {
		names[i] = bx.Name
	}
	what := fmt.Sprintf("the kernel problems of benchmark %s are not matched behaviourally", strings.Join(names, ", "))
	var kc *decontam.KernelCorpus
	src, of := "--corpus", ""
	if cix != nil {
		if why := cix.KernelsUnavailable(); why != "" {
			return nil, what + ": a --corpus-index keeps RTL designs' interfaces, not kernel items' arguments; check the corpus files with --corpus (" + why + ")", nil
		}
		if kc, err = cix.KernelCorpus(ctx); err != nil {
			return nil, "", err // a damaged index is an error, not a note
		}
		src, of = "--corpus-index", " indexed in the --corpus-index"
		if e := cix.Meta.KernelReadError; e != "" {
			return nil, fmt.Sprintf("%s: the --corpus-index's files could not be read as items when it was built: %s", what, e), nil
		}
	} else if kc, err = decontam.ReadKernelCorpus(ctx, o.Corpus); err != nil {
		if m.auto {
			return nil, fmt.Sprintf("%s: %v", what, err), nil
		}
		return nil, "", err
	}
	switch {
	case kc.Rows == 0:
		return nil, what + ": the " + src + " has no rows", nil
	case kc.Items == 0:
		return nil, fmt.Sprintf("%s: the %s rows are not Crucible items (none has the item columns item_id, domain, verifier, interface, reference; first row: %s)", what, src, kc.FirstRejection), nil
	case kc.Kernels() == 0:
		return nil, fmt.Sprintf("%s: none of the %d corpus items%s is a CPU kernel stating its arguments (domain kernel, verifier harness cpu and top, interface.args, reference)", what, kc.Items, of), nil
	}
	vcfg, err := kernels.DefaultStageConfig().VerifierConfig()
	if err != nil {
		return nil, "", err
	}
	vcfg.Backend, vcfg.Workers = kernelCheckBackend, max(o.Workers, 1)
	v, err := kernels.NewVerifier(vcfg, nil)
	if err != nil {
		return nil, "", err
	}
	defer v.Close()
	if miss := decontam.ToolsMissing(ctx, v); miss != "" {
		if !m.auto {
			return nil, "", fmt.Errorf("%w: --method behavioural cannot run kernel problems here: %s", errUsage, miss)
		}
		return nil, fmt.Sprintf("behavioural matching of kernel problems NOT run (%s): install a C compiler (%s) for kernel coverage", miss, vcfg.CC), nil
	}
	for i, bx := range benches {
		s, err := decontam.CheckKernels(ctx, bx, v, kc, cfg, fn)
		if err != nil {
			return nil, "", err
		}
		if i == 0 {
			s.Wall += kc.Read // reading the corpus as items, once for all
		}
		sums = append(sums, s)
	}
	return sums, "", nil
}
