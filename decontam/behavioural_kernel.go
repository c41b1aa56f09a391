package decontam

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Behavioural matching of kernels (issue #19 item 1, CPU backend): a
// corpus kernel item whose argument signature fits a benchmark kernel
// problem's is run, through a C wrapper with the problem's entry point,
// as a candidate against that problem with the kernel verifier, which
// draws fresh inputs for every call and compares with the problem's own
// reference; a pass is contamination. The signature is each argument's
// role, dtype and shape (a scalar's shape is its value), so renamed and
// reordered arguments of one signature still meet; the mapping says which
// corpus argument plays which problem argument.
//
// Only the cpu harness is matched: a CUDA kernel's launch geometry is in
// its source and names its own kernel, so it cannot be wrapped; a
// KernelBench module (triton) states no argument list to compare.

// ExecutableKernel reports whether an item is a kernel task the CPU
// backend can run with an argument signature behavioural matching can use.
func ExecutableKernel(it engine.Item) bool {
	return it.Domain == engine.DomainKernel && it.Verifier.Harness == "cpu" && it.Verifier.Top != "" &&
		len(it.Interface.Args) > 0 && strings.TrimSpace(it.Reference) != ""
}

// kernelSignatures numbers argument signatures, so that kernel arguments
// become pseudo-ports (direction: role; width: the signature's number) and
// ShapeKey and PortMappings apply unchanged.
type kernelSignatures map[string]int32

// iface is the pseudo-port interface of args. Benchmark problems add
// their signatures (add); a corpus kernel's signature no problem has gets
// width 0, which no problem's port has, and the map is not written, so
// parts sharing one index never race on it.
func (ks kernelSignatures) iface(top string, args []engine.KernelArg, add bool) engine.Interface {
	ifc := engine.Interface{Top: top, Ports: make([]engine.Port, len(args))}
	for i, a := range args {
		sig := fmt.Sprintf("%s/%s/%v", a.Role, a.DType, a.Shape)
		n, ok := ks[sig]
		if !ok && add {
			n = int32(len(ks) + 1)
			ks[sig] = n
		}
		ifc.Ports[i] = engine.Port{Name: a.Name, Direction: a.Role, Width: n}
	}
	return ifc
}

// newKernelIndex indexes the benchmark's kernel problems by signature.
func newKernelIndex(name string, items []BenchItem) *BehaviouralIndex {
	bx := &BehaviouralIndex{Name: name, byKey: map[string][]int{}, wrap: kernelCandidate, sigs: kernelSignatures{}}
	for _, it := range items {
		ifc := bx.sigs.iface(it.Item.Verifier.Top, it.Item.Interface.Args, true)
		k := ShapeKey(ifc)
		bx.byKey[k] = append(bx.byKey[k], len(bx.Items))
		bx.Items = append(bx.Items, it)
		bx.Ifaces = append(bx.Ifaces, ifc)
	}
	return bx
}

// kernelDesigns is the design source of corpus kernel items: each item's
// reference with its declared signature (no tool reads it). rows are the
// items' places in the corpus (nil: their places in items).
func kernelDesigns(items []engine.Item, rows []int64, bx *BehaviouralIndex) designSource {
	return func(ctx context.Context, fn func(designBatch) error) error {
		for i, it := range items {
			if err := ctx.Err(); err != nil {
				return err
			}
			row := int64(i)
			if rows != nil {
				row = rows[i]
			}
			b := designBatch{row: row, id: it.ItemID}
			if ExecutableKernel(it) {
				b.designs = []*bhvDesign{{field: "reference", code: it.Reference, top: it.Verifier.Top,
					iface: bx.sigs.iface(it.Verifier.Top, it.Interface.Args, false)}}
			}
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	}
}

var reCIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// kernelCandidate renames the corpus function (a macro over its source,
// so its definition and any calls follow) and adds a function with the
// problem's entry point and argument order calling it in its own order.
// Buffers pass as void * (every object pointer has one representation in
// the C ABI), scalars as int64_t, as the backend's calling convention has it.
func kernelCandidate(bi BenchItem, biface engine.Interface, d *bhvDesign) (func(PortMapping) string, error) {
	btop := bi.Item.Verifier.Top
	if !reCIdent.MatchString(d.top) || !reCIdent.MatchString(btop) {
		return nil, fmt.Errorf("entry points %q/%q are not C identifiers", d.top, btop)
	}
	var inner strings.Builder
	fmt.Fprintf(&inner, "#include <stdint.h>\n#define %s %s\n%s\n#undef %s\n", d.top, behaviouralDUT, d.code, d.top)
	params := make([]string, len(bi.Item.Interface.Args))
	for i, a := range bi.Item.Interface.Args {
		params[i] = "void *" + a.Name
		if a.Role == "scalar" {
			params[i] = "int64_t " + a.Name
		}
	}
	head := fmt.Sprintf("%svoid %s(%s) {\n\t%s(", inner.String(), btop, strings.Join(params, ", "), behaviouralDUT)
	return func(pm PortMapping) string {
		byCorpus := make(map[string]string, len(pm))
		for b, c := range pm {
			byCorpus[c] = b
		}
		args := make([]string, len(d.iface.Ports))
		for i, p := range d.iface.Ports {
			args[i] = byCorpus[p.Name]
		}
		return head + strings.Join(args, ", ") + ");\n}\n"
	}, nil
}

// splitKernelItems parts a benchmark's problems into RTL and kernel ones.
func splitKernelItems(items []BenchItem) (rtlItems, kernelItems []BenchItem) {
	for _, it := range items {
		if ExecutableKernel(it.Item) {
			kernelItems = append(kernelItems, it)
		} else {
			rtlItems = append(rtlItems, it)
		}
	}
	return rtlItems, kernelItems
}

// KernelSuffix marks a benchmark's kernel pass in its summary (and so in
// the check command's manifest counts), apart from its RTL pass.
const KernelSuffix = " (kernel)"

// checkKernels is the one kernel matcher of both callers (the stage, over
// its part's items; the check command, over a KernelCorpus): items run
// against the benchmark's kernel problems of their signature.
func checkKernels(ctx context.Context, kx *BehaviouralIndex, judge engine.Judge, items []engine.Item, rows []int64, cfg BehaviouralConfig, fn func(record int64, m Match) error) (BehaviouralSummary, error) {
	cfg.defaults()
	s, err := checkDesigns(ctx, kx, judge, kernelDesigns(items, rows, kx), cfg, fn)
	s.Benchmark += KernelSuffix
	return s, err
}
