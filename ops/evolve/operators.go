package evolve

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
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

// ---- operators in expressions ------------------------------------------

// exprOps lists binary operator tokens of the body outside ranges, parameter
// declarations and sensitivity lists, in source order.
func exprOps(d *vlog.Design, want map[string]string) []int {
	var out []int
	paramStmt := false
	for i := d.HeadEnd + 1; i < d.EndTok; i++ {
		t := d.Text(i)
		if t == "parameter" || t == "localparam" {
			paramStmt = true
		}
		if t == ";" {
			paramStmt = false
		}
		if _, ok := want[t]; !ok || paramStmt || d.InSensitivity(i) || d.InBrackets(i) || !d.IsOperandEnd(d.Prev(i)) {
			continue
		}
		if t == "<=" && !inParens(d, i) {
			continue // a non-blocking assignment, not a comparison
		}
		if inForHeader(d, i) {
			continue
		}
		out = append(out, i)
	}
	return out
}

func inParens(d *vlog.Design, i int) bool {
	depth := 0
	for j := d.Prev(i); j > d.HeadEnd; j = d.Prev(j) {
		switch d.Text(j) {
		case ")":
			depth++
		case "(":
			if depth == 0 {
				return true
			}
			depth--
		case ";", "begin", "end":
			return false
		}
	}
	return false
}

func inForHeader(d *vlog.Design, i int) bool {
	for j := d.Prev(i); j > d.HeadEnd; j = d.Prev(j) {
		switch d.Text(j) {
		case "for":
			return true
		case "begin", "end", "endcase":
			return false
		}
	}
	return false
}

func describeSite(d *vlog.Design, i int) string {
	if t := d.AssignTarget(i); t != "" {
		return "the logic that computes " + code(t)
	}
	return "a condition of the design"
}

var arithNames = map[string]string{"+": "an addition", "-": "a subtraction"}

func arithSwap(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	sites := exprOps(d, map[string]string{"+": "-", "-": "+"})
	if len(sites) == 0 {
		return Mutation{}, na("no binary + or -")
	}
	i := sites[0]
	old := d.Text(i)
	nw := map[string]string{"+": "-", "-": "+"}[old]
	return mutate(d, []vlog.Edit{{From: i, To: i + 1, Text: nw}},
		fmt.Sprintf("In %s, the first arithmetic step is %s instead of %s; everything else is unchanged.", describeSite(d, i), arithNames[nw], arithNames[old]), iface)
}

var cmpNames = map[string]string{"<": "less than", ">": "greater than", "<=": "less than or equal to", ">=": "greater than or equal to", "==": "equal to", "!=": "not equal to"}

func compareSwap(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	swap := map[string]string{"<": ">", ">": "<", "<=": ">=", ">=": "<="}
	sites := exprOps(d, swap)
	if len(sites) == 0 {
		swap = map[string]string{"==": "!=", "!=": "=="}
		sites = exprOps(d, swap)
	}
	if len(sites) == 0 {
		return Mutation{}, na("no comparison")
	}
	i := sites[0]
	old := d.Text(i)
	nw := swap[old]
	return mutate(d, []vlog.Edit{{From: i, To: i + 1, Text: nw}},
		fmt.Sprintf("In %s, the first comparison now tests %s where the original tested %s.", describeSite(d, i), cmpNames[nw], cmpNames[old]), iface)
}

var shiftSwap = map[string]string{"<<": ">>", ">>": "<<", "<<<": ">>>", ">>>": "<<<"}

func shiftDirection(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	if sites := exprOps(d, shiftSwap); len(sites) > 0 {
		i := sites[0]
		dir := map[string]string{"<<": "right", ">>": "left", "<<<": "right", ">>>": "left"}[d.Text(i)]
		return mutate(d, []vlog.Edit{{From: i, To: i + 1, Text: shiftSwap[d.Text(i)]}},
			fmt.Sprintf("In %s, the first shift now moves bits to the %s (toward the %s) instead of the opposite direction.", describeSite(d, i), dir, map[string]string{"right": "LSB", "left": "MSB"}[dir]), iface)
	}
	// {r[W-2:0], x}  <->  {x, r[W-1:1]}
	for i := d.HeadEnd; i < d.EndTok; i++ {
		if d.Text(i) != "{" {
			continue
		}
		end := d.Match(i)
		if end < 0 {
			continue
		}
		parts := splitTop(d, i, end)
		if len(parts) != 2 {
			continue
		}
		for k, p := range parts {
			name, hi, lo, ok := partSelect(d, p)
			if !ok {
				continue
			}
			sig, found := d.Signal(name)
			w, wok := d.Width(sig)
			if !found || !wok || w < 2 {
				continue
			}
			other := strings.TrimSpace(vlog.Join(d.Toks[parts[1-k][0]:parts[1-k][1]]))
			var repl, dir string
			switch {
			case k == 0 && hi == w-2 && lo == 0:
				repl, dir = fmt.Sprintf("{%s, %s[%d:1]}", other, name, w-1), "right (toward the LSB): new bits enter at the MSB"
			case k == 1 && hi == w-1 && lo == 1:
				repl, dir = fmt.Sprintf("{%s[%d:0], %s}", name, w-2, other), "left (toward the MSB): new bits enter at the LSB"
			default:
				continue
			}
			return mutate(d, []vlog.Edit{{From: i, To: end + 1, Text: repl}},
				fmt.Sprintf("The shift register %s now shifts %s, the opposite of the original direction.", code(name), dir), iface)
		}
	}
	return Mutation{}, na("no shift")
}

// splitTop splits the tokens strictly between open and close at top-level commas.
func splitTop(d *vlog.Design, open, close int) [][2]int {
	var out [][2]int
	start := open + 1
	for j := d.Next(open); j >= 0 && j < close; j = d.Next(j) {
		switch d.Text(j) {
		case "(", "[", "{":
			j = d.Match(j)
			if j < 0 {
				return nil
			}
		case ",":
			out = append(out, [2]int{start, j})
			start = j + 1
		}
	}
	return append(out, [2]int{start, close})
}

var rePartSelect = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\[(\d+):(\d+)\]$`)

func partSelect(d *vlog.Design, span [2]int) (string, int, int, bool) {
	s := strings.Join(strings.Fields(vlog.Join(d.Toks[span[0]:span[1]])), "")
	m := rePartSelect.FindStringSubmatch(s)
	if m == nil {
		return "", 0, 0, false
	}
	var hi, lo int
	fmt.Sscan(m[2], &hi)
	fmt.Sscan(m[3], &lo)
	return m[1], hi, lo, true
}

// ---- FSM ---------------------------------------------------------------

// stateCases are case statements over a register whose labels are parameters.
func stateCases(d *vlog.Design) []vlog.Case {
	var out []vlog.Case
	for _, c := range d.Cases() {
		if c.Selector == "" {
			continue
		}
		n := 0
		for _, it := range c.Items {
			for _, l := range it.Labels {
				if _, ok := d.Params[l]; ok {
					n++
				}
			}
		}
		if n >= 2 {
			out = append(out, c)
		}
	}
	return out
}

func caseLabels(d *vlog.Design, c vlog.Case) []string {
	var out []string
	for _, it := range c.Items {
		for _, l := range it.Labels {
			if _, ok := d.Params[l]; ok {
				out = append(out, l)
			}
		}
	}
	return out
}

func fsmTransition(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	for _, c := range stateCases(d) {
		labels := caseLabels(d, c)
		isLabel := map[string]bool{}
		for _, l := range labels {
			isLabel[l] = true
		}
		for _, it := range c.Items {
			for i := it.StmtLo; i <= it.StmtHi; i = d.Next(i) {
				if d.Text(i) != "?" {
					continue
				}
				a := d.Next(i)
				colon := d.Next(a)
				b := d.Next(colon)
				if isLabel[d.Text(a)] && d.Text(colon) == ":" && isLabel[d.Text(b)] && d.Text(a) != d.Text(b) {
					return mutate(d, []vlog.Edit{{From: a, To: a + 1, Text: d.Text(b)}, {From: b, To: b + 1, Text: d.Text(a)}},
						fmt.Sprintf("In state %s, the two possible next states are exchanged: the design now goes to %s when the transition condition holds and to %s when it does not.",
							code(it.Labels[0]), code(d.Text(b)), code(d.Text(a))), iface)
				}
			}
		}
		// No ternary: retarget the first plain "next = LABEL" to the following label.
		for _, it := range c.Items {
			for i := it.StmtLo; i <= it.StmtHi; i = d.Next(i) {
				if (d.Text(i) == "=" || d.Text(i) == "<=") && isLabel[d.Text(d.Next(i))] && d.Text(d.Next(d.Next(i))) == ";" {
					l := d.Next(i)
					to := labels[(indexOf(labels, d.Text(l))+1)%len(labels)]
					if to == d.Text(l) {
						continue
					}
					return mutate(d, []vlog.Edit{{From: l, To: l + 1, Text: to}},
						fmt.Sprintf("In state %s, the transition that went to %s now goes to %s.", code(it.Labels[0]), code(d.Text(l)), code(to)), iface)
				}
			}
		}
	}
	return Mutation{}, na("no state machine transition on parameter labels")
}

func fsmOutput(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	cases := stateCases(d)
	if len(cases) == 0 {
		return Mutation{}, na("no state machine")
	}
	stateRegs := map[string][]string{}
	for _, c := range cases {
		stateRegs[c.Selector] = caseLabels(d, c)
	}
	// Moore output decoded in an assign: out = (state == LABEL).
	for _, a := range d.Assigns {
		if p, ok := d.Port(a.LHS); !ok || p.Dir != "output" {
			continue
		}
		for i := a.RHSLo; i < a.Semi; i = d.Next(i) {
			if d.Text(i) != "==" {
				continue
			}
			l, r := d.Prev(i), d.Next(i)
			labels, isState := stateRegs[d.Text(l)]
			if !isState || indexOf(labels, d.Text(r)) < 0 {
				continue
			}
			to := labels[(indexOf(labels, d.Text(r))+1)%len(labels)]
			return mutate(d, []vlog.Edit{{From: r, To: r + 1, Text: to}},
				fmt.Sprintf("Output %s now decodes state %s where it decoded state %s.", code(a.LHS), code(to), code(d.Text(r))), iface)
		}
	}
	// Output assigned a constant inside a state's case item: flip its LSB.
	for _, c := range cases {
		for _, it := range c.Items {
			for i := it.StmtLo; i <= it.StmtHi; i = d.Next(i) {
				if d.Text(i) != "=" && d.Text(i) != "<=" {
					continue
				}
				lhs := d.Prev(i)
				if p, ok := d.Port(d.Text(lhs)); !ok || p.Dir != "output" {
					continue
				}
				v := d.Next(i)
				lit := vlog.ParseLiteral(d.Text(v))
				if d.Toks[v].Kind != vlog.Number || !lit.OK || d.Text(d.Next(v)) != ";" {
					continue
				}
				lit.Value ^= 1
				return mutate(d, []vlog.Edit{{From: v, To: v + 1, Text: lit.Format()}},
					fmt.Sprintf("In state %s, output %s takes the value %d (its least significant bit flipped) instead of its original value.", code(it.Labels[0]), code(d.Text(lhs)), lit.Value), iface)
			}
		}
	}
	return Mutation{}, na("no state-decoded output")
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// ---- enable ------------------------------------------------------------

var reEnableName = regexp.MustCompile(`(?i)^(en|ena|enable|ce|clk_en|cen|load|ld|we|valid|in_valid|inc|tick|shift_en|start)$`)

func enableGating(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	// 1. An enable input used as a bare if-condition in a clocked block: invert it.
	var cands []string
	for _, p := range d.Ports {
		if w, ok := d.Width(p); ok && w == 1 && p.Dir == "input" && p.Name != iface.Clock && p.Name != iface.Reset {
			cands = append(cands, p.Name)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return reEnableName.MatchString(cands[a]) && !reEnableName.MatchString(cands[b]) })
	for _, en := range cands {
		if !reEnableName.MatchString(en) {
			break
		}
		for _, u := range d.Uses(en) {
			p, n := d.Prev(u), d.Next(u)
			if d.Text(p) == "(" && d.Text(d.Prev(p)) == "if" && d.Text(n) == ")" && d.ClockedAlways(u) {
				return mutate(d, []vlog.Edit{{From: u, To: u + 1, Text: "!" + en}},
					fmt.Sprintf("The enable %s is now active-low for the register updates it gates: those registers update when %s is 0 and hold their value when it is 1.", code(en), code(en)), iface)
			}
		}
	}
	// 2. Otherwise add a clock enable "ce" gating every clocked block (reset keeps priority).
	if iface.Clock == "" {
		return Mutation{}, na("combinational design")
	}
	if _, taken := d.Signal("ce"); taken {
		return Mutation{}, na("a signal named ce exists")
	}
	clk, ok := d.Port(iface.Clock)
	if !ok || clk.Tok > d.HeadEnd {
		return Mutation{}, na("clock is not declared in an ANSI header")
	}
	var edits []vlog.Edit
	for _, a := range d.Always {
		if len(a.Edges) == 0 {
			continue
		}
		body := a.BodyStart
		if d.Text(body) == "begin" && d.StmtEnd(d.Next(body)) == d.Prev(a.BodyEnd) {
			body = d.Next(body) // a begin...end around one statement
		}
		resetFirst := false
		if d.Text(body) == "if" && iface.Reset != "" {
			cond := d.Next(body)
			for k := cond; k <= d.Match(cond); k++ {
				if d.Text(k) == iface.Reset {
					resetFirst = true
				}
			}
		}
		if resetFirst {
			thenEnd := d.StmtEnd(d.Next(d.Match(d.Next(body))))
			els := d.Next(thenEnd)
			if d.Text(els) != "else" {
				continue
			}
			edits = append(edits, vlog.Edit{From: els + 1, To: els + 1, Text: " if (ce)"})
		} else {
			edits = append(edits, vlog.Edit{From: a.BodyStart, To: a.BodyStart, Text: "if (ce) "})
		}
	}
	if len(edits) == 0 {
		return Mutation{}, na("no clocked block to gate")
	}
	edits = append(edits, vlog.Edit{From: clk.Tok + 1, To: clk.Tok + 1, Text: ",\n    input ce"})
	ni := iface
	ni.Ports = nil
	for _, p := range iface.Ports {
		ni.Ports = append(ni.Ports, p)
		if p.Name == iface.Clock {
			ni.Ports = append(ni.Ports, engine.Port{Name: "ce", Direction: "input", Width: 1})
		}
	}
	return mutate(d, edits, fmt.Sprintf("A new 1-bit input %s (clock enable) is added after %s. Every register holds its value at a rising edge of %s while %s is 0 and behaves as before while it is 1; the reset keeps priority over the enable.",
		code("ce"), code(iface.Clock), code(iface.Clock), code("ce")), ni)
}

// ---- controls ----------------------------------------------------------

func renameSignal(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	if len(d.Decls) == 0 {
		return Mutation{}, na("no internal signal")
	}
	old := d.Decls[0].Name
	nw := old + "_r"
	var edits []vlog.Edit
	for i := d.HeadEnd; i < d.EndTok; i++ {
		if d.Toks[i].Kind == vlog.Ident && d.Text(i) == old && d.Text(d.Prev(i)) != "." {
			edits = append(edits, vlog.Edit{From: i, To: i + 1, Text: nw})
		}
	}
	return mutate(d, edits, fmt.Sprintf("The internal signal %s is renamed %s.", code(old), code(nw)), iface)
}

func deadCode(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	return mutate(d, []vlog.Edit{{From: d.EndTok, To: d.EndTok, Text: "    wire crucible_unused_w;\n    assign crucible_unused_w = 1'b0;\n"}},
		"An unused internal wire is added.", iface)
}

func reformat(d *vlog.Design, iface engine.Interface) (Mutation, error) {
	var edits []vlog.Edit
	for i, t := range d.Toks {
		switch t.Kind {
		case vlog.Comment:
			edits = append(edits, vlog.Edit{From: i, To: i + 1, Text: map[bool]string{true: "\n", false: " "}[strings.HasPrefix(t.Text, "//")]})
		case vlog.Space:
			text := " "
			if strings.Contains(t.Text, "\n") {
				text = "\n  "
			}
			edits = append(edits, vlog.Edit{From: i, To: i + 1, Text: text})
		}
	}
	return mutate(d, edits, "The source is re-laid out and its comments removed.", iface)
}
