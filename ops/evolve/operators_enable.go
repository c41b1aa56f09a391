package evolve

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
)

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
