package evolve

import (
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// KernelOperator is a contract-bound mutation of a C (cpu) or CUDA kernel
// reference. It works on the token stream (the Verilog lexer reads C's
// lexemes losslessly): it finds the stores to output buffers — through the
// output arguments and pointers derived from them — and changes what is
// stored, or the element type.
type KernelOperator struct {
	Name               string
	Doc                string
	PreservesInterface bool
	Apply              func(src string, iface engine.Interface, harness string) (Mutation, error)
}

// KernelOperators returns the kernel operators in a fixed order.
func KernelOperators() []KernelOperator {
	return []KernelOperator{
		{Name: "fused_scale", Doc: "multiply every stored output element by 0.5", PreservesInterface: true, Apply: storeRewrite("fused_scale")},
		{Name: "fused_bias", Doc: "add 1.0 to every stored output element", PreservesInterface: true, Apply: storeRewrite("fused_bias")},
		{Name: "fused_activation", Doc: "apply ReLU to every stored output element", PreservesInterface: true, Apply: storeRewrite("fused_activation")},
		{Name: "activation_swap", Doc: "swap an existing activation in an output store (ReLU <-> leaky ReLU, tanh <-> sigmoid)", PreservesInterface: true, Apply: activationSwap},
		{Name: "dtype_f64", Doc: "switch float32 buffers and arithmetic to float64 (cpu kernels)", Apply: dtypeF64},
	}
}

// DefaultKernelOperatorNames lists every kernel operator.
func DefaultKernelOperatorNames() []string {
	var out []string
	for _, op := range KernelOperators() {
		out = append(out, op.Name)
	}
	return out
}

// KernelOperatorByName finds a kernel operator.
func KernelOperatorByName(name string) (KernelOperator, bool) {
	for _, op := range KernelOperators() {
		if op.Name == name {
			return op, true
		}
	}
	return KernelOperator{}, false
}

// ClaimsSameInterface reports whether the named operator (RTL or kernel)
// declares that it keeps the interface.
func ClaimsSameInterface(op string) bool {
	if o, ok := OperatorByName(op); ok {
		return o.PreservesInterface
	}
	if o, ok := KernelOperatorByName(op); ok {
		return o.PreservesInterface
	}
	return false
}

type store struct{ lhs, eq, semi int }

// outputStores finds `NAME[...] = EXPR;` where NAME is an output argument or
// a pointer initialised from one (`float *out = y + r * cols;`).
func outputStores(toks []vlog.Token, iface engine.Interface) []store {
	outs := map[string]bool{}
	for _, a := range iface.Args {
		if a.Role == "output" {
			outs[a.Name] = true
		}
	}
	sig := make([]int, 0, len(toks))
	for i, t := range toks {
		if t.Sig() {
			sig = append(sig, i)
		}
	}
	text := func(k int) string {
		if k < 0 || k >= len(sig) {
			return ""
		}
		return toks[sig[k]].Text
	}
	for changed := true; changed; { // aliases: * ALIAS = OUT
		changed = false
		for k := 0; k+3 < len(sig); k++ {
			if text(k) == "*" && toks[sig[k+1]].Kind == vlog.Ident && text(k+2) == "=" && outs[text(k+3)] && !outs[text(k+1)] {
				outs[text(k+1)], changed = true, true
			}
		}
	}
	var out []store
	for k := 0; k < len(sig); k++ {
		if !outs[text(k)] || text(k+1) != "[" || (k > 0 && (text(k-1) == "*" || text(k-1) == ".")) {
			continue
		}
		depth, j := 0, k+1
		for ; j < len(sig); j++ {
			if text(j) == "[" {
				depth++
			} else if text(j) == "]" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if text(j+1) != "=" {
			continue
		}
		e := j + 2
		for e < len(sig) && text(e) != ";" {
			e++
		}
		if e >= len(sig) {
			continue
		}
		out = append(out, store{lhs: sig[k], eq: sig[j+1], semi: sig[e]})
		k = e
	}
	return out
}

func storeRewrite(kind string) func(string, engine.Interface, string) (Mutation, error) {
	return func(src string, iface engine.Interface, harness string) (Mutation, error) {
		if harness != "cpu" && harness != "cuda" {
			return Mutation{}, na("harness %q: only C (cpu) and CUDA references are rewritten", harness)
		}
		toks, err := vlog.Lex(src)
		if err != nil {
			return Mutation{}, err
		}
		for _, a := range iface.Args {
			if a.Role == "output" && a.DType != "float32" && a.DType != "float64" {
				return Mutation{}, na("output %s is %s, not floating point", a.Name, a.DType)
			}
		}
		stores := outputStores(toks, iface)
		if len(stores) == 0 {
			return Mutation{}, na("no store to an output buffer found")
		}
		var b strings.Builder
		at := 0
		for _, s := range stores {
			b.WriteString(vlog.Join(toks[at : s.eq+1]))
			rhs := strings.TrimSpace(vlog.Join(toks[s.eq+1 : s.semi]))
			switch kind {
			case "fused_scale":
				fmt.Fprintf(&b, " (%s) * 0.5f", rhs)
			case "fused_bias":
				fmt.Fprintf(&b, " (%s) + 1.0f", rhs)
			case "fused_activation":
				fmt.Fprintf(&b, " ((%s) > 0 ? (%s) : 0)", rhs, rhs)
			}
			at = s.semi
		}
		b.WriteString(vlog.Join(toks[at:]))
		var names []string
		for _, a := range iface.Args {
			if a.Role == "output" {
				names = append(names, code(a.Name))
			}
		}
		change := map[string]string{
			"fused_scale":      "every element written to the output %s is multiplied by 0.5 (a fused scale): the result is 0.5 × the original value",
			"fused_bias":       "every element written to the output %s has 1.0 added to it (a fused bias): the result is the original value + 1.0",
			"fused_activation": "a ReLU is fused into the output %s: every element written is max(original value, 0)",
		}[kind]
		return Mutation{Source: b.String(), Change: "The kernel's result changes: " + fmt.Sprintf(change, strings.Join(names, ", ")) + ". Inputs, shapes and the entry point are unchanged.", Interface: iface}, nil
	}
}

func dtypeF64(src string, iface engine.Interface, harness string) (Mutation, error) {
	if harness != "cpu" {
		return Mutation{}, na("dtype change is implemented for cpu kernels only")
	}
	toks, err := vlog.Lex(src)
	if err != nil {
		return Mutation{}, err
	}
	n := 0
	var b strings.Builder
	for _, t := range toks {
		if t.Kind == vlog.Ident && t.Text == "float" {
			b.WriteString("double")
			n++
			continue
		}
		b.WriteString(t.Text)
	}
	ni := iface
	ni.Args = append([]engine.KernelArg(nil), iface.Args...)
	changed := 0
	for k, a := range ni.Args {
		if a.DType == "float32" {
			ni.Args[k].DType = "float64"
			changed++
		}
	}
	if n == 0 || changed == 0 {
		return Mutation{}, na("no float32 buffers")
	}
	ni.Tolerance = 0 // the per-dtype default (1e-8 for float64)
	return Mutation{Source: b.String(), Change: "All float32 buffers become float64 (double precision) and the arithmetic is done in double precision; outputs are compared at float64 tolerance.", Interface: ni}, nil
}

// activationSwap exchanges an activation the reference already applies in
// an output store: fmaxf(X, 0) becomes a leaky ReLU and back, tanhf(X)
// becomes a logistic sigmoid and back.
func activationSwap(src string, iface engine.Interface, harness string) (Mutation, error) {
	if harness != "cpu" && harness != "cuda" {
		return Mutation{}, na("harness %q: only C (cpu) and CUDA references are rewritten", harness)
	}
	toks, err := vlog.Lex(src)
	if err != nil {
		return Mutation{}, err
	}
	for _, s := range outputStores(toks, iface) {
		rhs := strings.TrimSpace(vlog.Join(toks[s.eq+1 : s.semi]))
		var repl, change string
		switch {
		case strings.HasPrefix(rhs, "fmaxf(") && strings.HasSuffix(rhs, ", 0.0f)"):
			x := strings.TrimSuffix(strings.TrimPrefix(rhs, "fmaxf("), ", 0.0f)")
			repl, change = fmt.Sprintf("((%s) > 0 ? (%s) : 0.01f * (%s))", x, x, x), "the ReLU becomes a leaky ReLU with slope 0.01 for negative values"
		case strings.HasPrefix(rhs, "tanhf(") && strings.HasSuffix(rhs, ")"):
			x := strings.TrimSuffix(strings.TrimPrefix(rhs, "tanhf("), ")")
			repl, change = fmt.Sprintf("1.0f / (1.0f + expf(-(%s)))", x), "the tanh activation becomes a logistic sigmoid, 1 / (1 + exp(-x))"
		default:
			continue
		}
		out := vlog.Join(toks[:s.eq+1]) + " " + repl + vlog.Join(toks[s.semi:])
		return Mutation{Source: out, Change: "The kernel's activation changes: " + change + ". Inputs, shapes and the entry point are unchanged.", Interface: iface}, nil
	}
	return Mutation{}, na("no fmaxf(x, 0.0f) or tanhf(x) output store")
}
