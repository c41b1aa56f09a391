package evolve

import (
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
	"github.com/crucible-data/crucible/rtl"
)

// ParentModuleName is the parent's module name inside an adapter.
const ParentModuleName = "CrucibleParent"

// AdaptParent turns the parent reference into a candidate for the evolved
// verifier. With identical ports it is the parent renamed TopModule. When
// the evolved interface differs (a widened bus, an added enable) the parent
// is wrapped: a TopModule with the evolved ports instantiates the parent,
// connecting every port the two share by name — Verilog's port rules pad or
// truncate where widths differ, inputs the parent lacks are ignored, outputs
// it lacks are driven 0. "The parent fails the evolved verifier" then means
// the parent, adapted this way, is not a valid implementation of the new
// contract; the measured mismatch fraction is the behavioural distance.
func AdaptParent(parentRef string, parentIface, evolved engine.Interface) (string, error) {
	if samePorts(parentIface.Ports, evolved.Ports) {
		return rtl.RenameModule(parentRef, rtl.RefModuleName, rtl.DefaultDUTName)
	}
	inner, err := rtl.RenameModule(parentRef, rtl.RefModuleName, ParentModuleName)
	if err != nil {
		return "", err
	}
	return inner + "\n" + wrapper(rtl.DefaultDUTName, ParentModuleName, parentIface.Ports, evolved.Ports, ""), nil
}

// wrapper emits module top(<outer ports>) that instantiates inner.
// invert, when set, names an output whose LSB the wrapper inverts.
func wrapper(top, inner string, innerPorts, outer []engine.Port, invert string) string {
	var b strings.Builder
	var decls, conns []string
	has := map[string]engine.Port{}
	for _, p := range innerPorts {
		has[p.Name] = p
	}
	rng := func(w int32) string {
		if w <= 1 {
			return ""
		}
		return fmt.Sprintf("[%d:0] ", w-1)
	}
	for _, p := range outer {
		sign := ""
		if p.Signed {
			sign = "signed "
		}
		decls = append(decls, fmt.Sprintf("    %s %s%s%s", p.Direction, sign, rng(p.Width), p.Name))
	}
	fmt.Fprintf(&b, "module %s (\n%s\n);\n", top, strings.Join(decls, ",\n"))
	for _, p := range innerPorts {
		if o, ok := findPort(outer, p.Name); ok && o.Direction == p.Direction {
			if p.Direction == "output" {
				fmt.Fprintf(&b, "    wire %s%s_w;\n", rng(p.Width), p.Name)
				conns = append(conns, fmt.Sprintf(".%s(%s_w)", p.Name, p.Name))
			} else {
				conns = append(conns, fmt.Sprintf(".%s(%s)", p.Name, p.Name))
			}
		}
	}
	fmt.Fprintf(&b, "    %s crucible_inner (%s);\n", inner, strings.Join(conns, ", "))
	for _, p := range outer {
		if p.Direction != "output" {
			continue
		}
		ip, ok := has[p.Name]
		switch {
		case !ok || ip.Direction != "output":
			fmt.Fprintf(&b, "    assign %s = 0;\n", p.Name)
		case p.Name == invert:
			fmt.Fprintf(&b, "    assign %s = %s_w ^ 1'b1;\n", p.Name, p.Name)
		case p.Width > ip.Width:
			// Padded bits follow the parent's X: an unknown parent output
			// stays wholly unknown instead of gaining known-zero high bits.
			fmt.Fprintf(&b, "    assign %s = (^%s_w === 1'bx) ? {%d{1'bx}} : %s_w;\n", p.Name, p.Name, p.Width, p.Name)
		default:
			fmt.Fprintf(&b, "    assign %s = %s_w;\n", p.Name, p.Name)
		}
	}
	b.WriteString("endmodule\n")
	return b.String()
}

func findPort(ps []engine.Port, name string) (engine.Port, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return engine.Port{}, false
}

func samePorts(a, b []engine.Port) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Direction != b[i].Direction || a[i].Width != b[i].Width {
			return false
		}
	}
	return true
}

// SameContract reports whether two interfaces have the same ports and the
// same kernel arguments (names, roles, shapes, dtypes) and tolerance.
func SameContract(a, b engine.Interface) bool {
	if !samePorts(a.Ports, b.Ports) || len(a.Args) != len(b.Args) || a.Tolerance != b.Tolerance {
		return false
	}
	for i := range a.Args {
		x, y := a.Args[i], b.Args[i]
		if x.Name != y.Name || x.Role != y.Role || x.DType != y.DType || fmt.Sprint(x.Shape) != fmt.Sprint(y.Shape) {
			return false
		}
	}
	return true
}

// SamePorts reports whether two interfaces have the same ports (names,
// directions, widths, in order).
func SamePorts(a, b engine.Interface) bool { return samePorts(a.Ports, b.Ports) }

// Mutant is a simple mutant of a reference, in candidate form (TopModule).
type Mutant struct {
	Name string
	Code string
}

// Mutants derives up to max simple mutants of ref (module RefModule) for the
// verifier-strength gate: the interface-preserving operators that apply,
// in a fixed order, then an output-LSB inversion wrapper (always applicable,
// so every verifier is tested at least once).
func Mutants(ref string, iface engine.Interface, max int) ([]Mutant, error) {
	var out []Mutant
	if max <= 0 {
		return nil, nil
	}
	d, err := vlog.Parse(ref, rtl.RefModuleName)
	if err == nil {
		for _, name := range []string{"arith_swap", "compare_swap", "counter_modulus", "fsm_transition", "fsm_output", "shift_direction", "reset_polarity"} {
			if len(out) >= max-1 {
				break
			}
			op, _ := OperatorByName(name)
			m, err := op.Apply(d, iface)
			if err != nil {
				continue
			}
			c, err := rtl.RenameModule(m.Source, rtl.RefModuleName, rtl.DefaultDUTName)
			if err != nil {
				continue
			}
			out = append(out, Mutant{Name: name, Code: c})
		}
	}
	for _, p := range iface.Ports {
		if p.Direction == "output" {
			inner, err := rtl.RenameModule(ref, rtl.RefModuleName, ParentModuleName)
			if err != nil {
				return out, err
			}
			out = append(out, Mutant{Name: "output_invert", Code: inner + "\n" + wrapper(rtl.DefaultDUTName, ParentModuleName, iface.Ports, iface.Ports, p.Name)})
			break
		}
	}
	return out, nil
}
