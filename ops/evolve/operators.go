package evolve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

// ErrNotApplicable means an operator found nothing to change in a design.
var ErrNotApplicable = errors.New("operator not applicable")

// Mutation is what an operator produced from a parent design.
type Mutation struct {
	Source    string           // the mutated reference (module RefModule)
	Change    string           // the declared change, in words, for the instruction
	Interface engine.Interface // the interface the operator declares after the change
}

// Operator is one contract-bound mutation over the parsed design.
type Operator struct {
	Name string
	Doc  string
	// PreservesInterface: ports (names, directions, widths) stay as they were.
	PreservesInterface bool
	// Control operators change nothing observable (rename, reformat, dead
	// code); they exist to calibrate the verifier-strength gate and are not
	// in the default set.
	Control bool
	Apply   func(d *vlog.Design, iface engine.Interface) (Mutation, error)
}

// Operators returns every operator, in a fixed order.
func Operators() []Operator {
	return []Operator{
		{Name: "reset_polarity", Doc: "flip the reset's active level (every use inverted, edge swapped)", PreservesInterface: true, Apply: resetPolarity},
		{Name: "reset_sync_async", Doc: "make a synchronous reset asynchronous or an asynchronous one synchronous", PreservesInterface: true, Apply: resetSyncAsync},
		{Name: "bus_width", Doc: "double the width of the widest output's width group (ports, declarations, sized literals)", Apply: busWidth},
		{Name: "counter_modulus", Doc: "change the terminal count a register is compared with", PreservesInterface: true, Apply: counterModulus},
		{Name: "arith_swap", Doc: "swap addition and subtraction in a datapath expression", PreservesInterface: true, Apply: arithSwap},
		{Name: "compare_swap", Doc: "reverse a relational comparison (< with >, <= with >=, else == with !=)", PreservesInterface: true, Apply: compareSwap},
		{Name: "fsm_transition", Doc: "exchange the branches of a state transition, or retarget it", PreservesInterface: true, Apply: fsmTransition},
		{Name: "fsm_output", Doc: "move a Moore output to a different state, or flip an output in one state", PreservesInterface: true, Apply: fsmOutput},
		{Name: "shift_direction", Doc: "reverse a shift (<< with >>, or a concatenation shift register)", PreservesInterface: true, Apply: shiftDirection},
		{Name: "enable_gating", Doc: "invert an enable, or add a clock enable that gates every register update", Apply: enableGating},
		{Name: "rename_signal", Doc: "control: rename an internal signal (nothing observable changes)", PreservesInterface: true, Control: true, Apply: renameSignal},
		{Name: "dead_code", Doc: "control: add an unused signal (nothing observable changes)", PreservesInterface: true, Control: true, Apply: deadCode},
		{Name: "reformat", Doc: "control: re-layout the source (nothing observable changes)", PreservesInterface: true, Control: true, Apply: reformat},
	}
}

// DefaultOperatorNames are the non-control operators.
func DefaultOperatorNames() []string {
	var out []string
	for _, op := range Operators() {
		if !op.Control {
			out = append(out, op.Name)
		}
	}
	return out
}

// OperatorByName finds an operator.
func OperatorByName(name string) (Operator, bool) {
	for _, op := range Operators() {
		if op.Name == name {
			return op, true
		}
	}
	return Operator{}, false
}

func na(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotApplicable}, a...)...)
}

func mutate(d *vlog.Design, edits []vlog.Edit, change string, iface engine.Interface) (Mutation, error) {
	src, err := d.Apply(edits)
	if err != nil {
		return Mutation{}, err
	}
	return Mutation{Source: src, Change: change, Interface: iface}, nil
}

func code(s string) string { return "`" + s + "`" }

// ---- reset --------------------------------------------------------------

func resetPolarity(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	r := iface.Reset
	if r == "" {
		return Mutation{}, na("no reset")
	}
	var edits []vlog.Edit
	for _, a := range d.Always {
		for _, e := range a.Edges {
			if e.Signal == r {
				edits = append(edits, vlog.Edit{From: e.Kw, To: e.Kw + 1, Text: map[string]string{"posedge": "negedge", "negedge": "posedge"}[d.Text(e.Kw)]})
			}
		}
	}
	for _, i := range d.Uses(r) {
		if p := d.Prev(i); d.Text(p) == "!" || d.Text(p) == "~" {
			edits = append(edits, vlog.Edit{From: p, To: p + 1})
		} else {
			edits = append(edits, vlog.Edit{From: i, To: i + 1, Text: "(!" + r + ")"})
		}
	}
	if len(edits) == 0 {
		return Mutation{}, na("reset %s is never used", r)
	}
	was, now := "active-high", "active-low"
	ni := iface
	ni.ResetPolarity = "low"
	if iface.ResetPolarity == "low" {
		was, now = now, was
		ni.ResetPolarity = "high"
	}
	level := map[string]string{"active-high": "1", "active-low": "0"}[now]
	return mutate(d, edits, fmt.Sprintf("The reset %s is now %s (it was %s): the design is reset while %s is %s. Its synchronous or asynchronous timing and every other behaviour are unchanged.",
		code(r), now, was, code(r), level), ni)
}

func resetSyncAsync(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	r, clk := iface.Reset, iface.Clock
	if r == "" || clk == "" {
		return Mutation{}, na("needs a clock and a reset")
	}
	var edits []vlog.Edit
	ni := iface
	if iface.ResetKind == "async" {
		for _, a := range d.Always {
			for k, e := range a.Edges {
				if e.Signal != r {
					continue
				}
				if k > 0 { // remove " or negedge rst" / ", negedge rst"
					edits = append(edits, vlog.Edit{From: a.Edges[k-1].SigTok + 1, To: e.SigTok + 1})
				} else if len(a.Edges) > 1 {
					edits = append(edits, vlog.Edit{From: e.Kw, To: d.Next(d.Next(e.SigTok))})
				}
			}
		}
		ni.ResetKind = "sync"
		if len(edits) == 0 {
			return Mutation{}, na("no asynchronous reset edge")
		}
		return mutate(d, edits, fmt.Sprintf("The reset %s is now synchronous (it was asynchronous): it only takes effect at a rising edge of %s, and the outputs do not change when it is asserted between edges.", code(r), code(clk)), ni)
	}
	edge := "posedge"
	if iface.ResetPolarity == "low" {
		edge = "negedge"
	}
	for _, a := range d.Always {
		if len(a.Edges) != 1 || a.Edges[0].Signal != clk {
			continue
		}
		uses := 0
		for _, u := range d.Uses(r) {
			if u >= a.BodyStart && u <= a.BodyEnd {
				uses++
			}
		}
		if uses == 0 {
			continue
		}
		edits = append(edits, vlog.Edit{From: a.Edges[0].SigTok + 1, To: a.Edges[0].SigTok + 1, Text: " or " + edge + " " + r})
	}
	if len(edits) == 0 {
		return Mutation{}, na("no clocked block uses the reset")
	}
	ni.ResetKind = "async"
	return mutate(d, edits, fmt.Sprintf("The reset %s is now asynchronous (it was synchronous): asserting it resets the registers immediately, without waiting for a rising edge of %s.", code(r), code(clk)), ni)
}

// ---- widths and constants ----------------------------------------------

func busWidth(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	w := 0
	for _, p := range d.Ports {
		if p.Dir != "output" || p.RangeLo < 0 {
			continue
		}
		if pw, ok := d.Width(p); ok && pw > w && pw <= 32 && literalZeroBased(d, p) {
			w = pw
		}
	}
	if w < 2 {
		return Mutation{}, na("no multi-bit output with a literal [N-1:0] range")
	}
	nw := 2 * w
	var edits []vlog.Edit
	var changed []string
	retarget := func(p vlog.PortDecl) {
		if pw, ok := d.Width(p); ok && pw == w && literalZeroBased(d, p) {
			edits = append(edits, vlog.Edit{From: p.RangeLo, To: p.RangeHi + 1, Text: fmt.Sprintf("[%d:0]", nw-1)})
			changed = append(changed, p.Name)
		}
	}
	for _, p := range d.Ports {
		retarget(p)
	}
	for _, p := range d.Decls {
		retarget(p)
	}
	for i := d.HeadEnd; i < d.EndTok; i++ {
		if d.Toks[i].Kind != vlog.Number || d.InBrackets(i) {
			continue
		}
		l := vlog.ParseLiteral(d.Text(i))
		if l.OK && l.Size == w {
			l.Size = nw
			edits = append(edits, vlog.Edit{From: i, To: i + 1, Text: l.Format()})
		}
	}
	ni := iface
	ni.Ports = append([]engine.Port(nil), iface.Ports...)
	var ports []string
	for k, p := range ni.Ports {
		for _, c := range changed {
			if p.Name == c {
				ni.Ports[k].Width = int32(nw)
				ports = append(ports, code(c))
			}
		}
	}
	if len(ports) == 0 {
		return Mutation{}, na("no port in the width group")
	}
	return mutate(d, edits, fmt.Sprintf("The %d-bit data path is widened to %d bits: ports %s are now %d bits wide, and every %d-bit register, signal and constant of that path becomes %d bits (values wrap at 2^%d instead of 2^%d).",
		w, nw, strings.Join(ports, ", "), nw, w, nw, nw, w), ni)
}

func literalZeroBased(d *vlog.Design, p vlog.PortDecl) bool {
	lo := d.Prev(p.RangeHi)
	return d.Text(lo) == "0" && d.Text(d.Prev(lo)) == ":"
}

func counterModulus(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	clocked := clockedTargets(d)
	type hit struct{ reg, num string }
	var first *hit
	var edits []vlog.Edit
	for i := d.HeadEnd; i < d.EndTok; i++ {
		op := d.Text(i)
		if op != "==" && op != "!=" {
			continue
		}
		a, b := d.Prev(i), d.Next(i)
		reg, num := d.Text(a), b
		if !clocked[reg] {
			reg, num = d.Text(b), a
		}
		if !clocked[reg] || d.Toks[num].Kind != vlog.Number {
			continue
		}
		l := vlog.ParseLiteral(d.Text(num))
		if !l.OK || l.Value < 3 {
			continue
		}
		if first == nil {
			first = &hit{reg, d.Text(num)}
		}
		if reg == first.reg && d.Text(num) == first.num {
			l.Value -= 2
			edits = append(edits, vlog.Edit{From: num, To: num + 1, Text: l.Format()})
		}
	}
	if first == nil {
		return Mutation{}, na("no register compared with a constant >= 3")
	}
	old := vlog.ParseLiteral(first.num)
	return mutate(d, edits, fmt.Sprintf("The terminal count of %s changes from %d to %d: every place where the original design tests whether %s equals %d (to wrap, stop or flag) now tests for %d, so a counter that cycled through %d values now cycles through %d.",
		code(first.reg), old.Value, old.Value-2, code(first.reg), old.Value, old.Value-2, old.Value+1, old.Value-1), iface)
}

// clockedTargets are the names assigned with <= inside edge-triggered blocks.
func clockedTargets(d *vlog.Design) map[string]bool {
	out := map[string]bool{}
	for _, a := range d.Always {
		if len(a.Edges) == 0 {
			continue
		}
		for i := a.BodyStart; i <= a.BodyEnd; i++ {
			if d.Text(i) == "<=" || d.Text(i) == "=" {
				if t := d.AssignTarget(d.Next(i)); t != "" {
					out[t] = true
				}
			}
		}
	}
	return out
}
