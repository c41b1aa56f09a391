package kernels

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Category sentinels. Bad tasks wrap ErrTask; a backend that cannot run here
// wraps ErrBackendUnavailable.
var (
	ErrTask               = errors.New("kernels: invalid kernel task")
	ErrBackendUnavailable = errors.New("kernels: backend unavailable")
	ErrConfig             = errors.New("kernels: invalid config")
)

// Backend names.
const (
	BackendCPU    = "cpu"
	BackendCUDA   = "cuda"
	BackendTriton = "triton"
	BackendAuto   = "auto"
)

// Argument roles.
const (
	RoleInput  = "input"
	RoleOutput = "output"
	RoleScalar = "scalar"
)

// dtypeInfo describes an element type: its size, default relative
// tolerance and smallest normal value (the floor of the absolute tolerance);
// ints compare exactly.
type dtypeInfo struct {
	size  int
	tol   float64
	floor float64
	isFP  bool
}

var dtypes = map[string]dtypeInfo{
	"float32":  {4, 1e-4, 0x1p-126, true},
	"float64":  {8, 1e-8, 0x1p-1022, true},
	"float16":  {2, 1e-2, 0x1p-14, true},
	"bfloat16": {2, 1e-2, 0x1p-126, true},
	"int32":    {4, 0, 0, false},
	"int64":    {8, 0, 0, false},
}

// DefaultTolerance returns the default relative tolerance of a dtype
// (0 for ints: exact).
func DefaultTolerance(dtype string) float64 { return dtypes[dtype].tol }

// Arg is one validated argument.
type Arg struct {
	engine.KernelArg
	Elems int64 // number of elements (1 for scalars)
	Bytes int64 // Elems * element size
	Value int64 // scalar value (a scalar's shape holds its single value)
}

// Task is the executable kernel contract derived from an engine.Item.
type Task struct {
	ItemID          string
	Backend         string // cpu | cuda | triton (from verifier.harness)
	Entry           string // entry symbol / kernel name (verifier.top, then interface.top, then "kernel")
	Reference       string
	Args            []Arg
	Tolerance       float64 // 0 means per-dtype defaults
	AllowDelegation bool
	Seed            uint64 // derived from the item id: same task → same inputs
}

// TaskFromItem validates an item's kernel contract. Every problem is
// reported, naming the item and field.
func TaskFromItem(it engine.Item) (*Task, error) {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: item %q: %s: %s", ErrTask, it.ItemID, field, fmt.Sprintf(format, a...)))
	}
	if it.Domain != "" && it.Domain != engine.DomainKernel {
		bad("domain", "is %q, want %q", it.Domain, engine.DomainKernel)
	}
	t := &Task{ItemID: it.ItemID, Reference: it.Reference, Tolerance: it.Interface.Tolerance,
		AllowDelegation: it.Interface.AllowDelegation, Seed: seedOf(it.ItemID)}
	t.Backend = strings.TrimSpace(it.Verifier.Harness)
	switch t.Backend {
	case BackendCPU, BackendCUDA, BackendTriton:
	case "":
		bad("verifier.harness", "empty; want cpu, cuda or triton")
	default:
		bad("verifier.harness", "%q is not a kernel backend (cpu, cuda, triton)", t.Backend)
	}
	t.Entry = firstNonEmpty(it.Verifier.Top, it.Interface.Top)
	if t.Entry == "" {
		if t.Backend == BackendTriton {
			t.Entry = "ModelNew"
		} else {
			bad("verifier.top", "empty; name the entry function")
		}
	}
	if strings.TrimSpace(it.Reference) == "" {
		bad("reference", "empty")
	}
	if it.Interface.Tolerance < 0 {
		bad("interface.tolerance", "negative (%g)", it.Interface.Tolerance)
	}
	if t.Backend != BackendTriton { // triton tasks take shapes from get_inputs()
		if len(it.Interface.Args) == 0 {
			bad("interface.args", "no arguments")
		}
		outputs := 0
		for i, a := range it.Interface.Args {
			field := fmt.Sprintf("interface.args[%d]", i)
			arg := Arg{KernelArg: a, Elems: 1}
			switch a.Role {
			case RoleInput, RoleOutput:
				info, ok := dtypes[a.DType]
				if !ok {
					bad(field+".dtype", "%q unsupported (float32, float64, float16, bfloat16, int32, int64)", a.DType)
					continue
				}
				if len(a.Shape) == 0 {
					bad(field+".shape", "empty")
					continue
				}
				for _, d := range a.Shape {
					if d <= 0 {
						bad(field+".shape", "dimension %d is not positive", d)
					}
					arg.Elems *= d
				}
				if arg.Elems > 1<<28 {
					bad(field+".shape", "%d elements is over the 2^28 limit", arg.Elems)
				}
				arg.Bytes = arg.Elems * int64(info.size)
				if a.Role == RoleOutput {
					outputs++
					if !info.isFP && a.DType != "int32" && a.DType != "int64" {
						bad(field+".dtype", "unsupported output dtype %q", a.DType)
					}
				}
			case RoleScalar:
				if len(a.Shape) != 1 {
					bad(field+".shape", "a scalar's shape must hold exactly its value, e.g. [1024]")
					continue
				}
				arg.Value = a.Shape[0]
				if a.DType != "int64" && a.DType != "int32" && a.DType != "" {
					bad(field+".dtype", "scalars are int64 (got %q)", a.DType)
				}
			default:
				bad(field+".role", "%q; want input, output or scalar", a.Role)
				continue
			}
			if a.Name == "" {
				bad(field+".name", "empty")
			}
			t.Args = append(t.Args, arg)
		}
		if outputs == 0 && len(it.Interface.Args) > 0 {
			bad("interface.args", "no output argument")
		}
		if len(it.Interface.Args) > 16 {
			bad("interface.args", "%d arguments; at most 16", len(it.Interface.Args))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// ToleranceFor returns the bound for an output of dtype whose reference
// value is ref: Rel is interface.tolerance (else the dtype's default) and
// Abs is Rel times the RMS of the reference output (plus the dtype's
// smallest normal), so the absolute slack follows the output's own
// magnitude: an output of values near 1e-3 gets an absolute slack near
// 1e-7, not the relative tolerance itself. Integer outputs are exact.
func (t *Task) ToleranceFor(dtype string, ref []byte) Tolerance {
	info := dtypes[dtype]
	if !info.isFP {
		return Tolerance{}
	}
	rel := info.tol
	if t.Tolerance > 0 {
		rel = t.Tolerance
	}
	return Tolerance{Abs: rel*rms(dtype, ref) + info.floor, Rel: rel}
}

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			return strings.TrimSpace(x)
		}
	}
	return ""
}
