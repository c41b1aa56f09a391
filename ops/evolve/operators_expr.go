package evolve

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

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
