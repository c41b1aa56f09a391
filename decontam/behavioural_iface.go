package decontam

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Interfaces, shape keys and port mappings of behavioural matching.
//
// Two designs can only be behaviourally compared when one can stand in for
// the other in the benchmark's harness: every port of the benchmark
// problem gets exactly one port of the corpus design with the same
// direction, width and signedness. The shape key is that multiset (plus
// whether a clock was found), so a corpus design is only ever simulated
// against benchmark problems of its own key; the mapping then says which
// corpus port plays which benchmark port.

// ShapeKey is the interface's shape: its ports' (direction, width,
// signedness) as a sorted multiset, and "+clk" when Yosys found a clock.
// Names play no part, so renamed and reordered ports share the key. A reset
// is not part of the key: one is found by name when no flip-flop proves it,
// so a renamed reset would change the key of an otherwise equal design; it
// is a mapping constraint instead (see PortMappings).
func ShapeKey(iface engine.Interface) string {
	parts := make([]string, len(iface.Ports))
	for i, p := range iface.Ports {
		parts[i] = portShape(p)
	}
	slices.Sort(parts)
	k := strings.Join(parts, ",")
	if iface.Clock != "" {
		k += "+clk"
	}
	return k
}

func portShape(p engine.Port) string {
	s := fmt.Sprintf("%s%d", p.Direction[:min(len(p.Direction), 3)], p.Width)
	if p.Signed {
		s += "s"
	}
	return s
}

// normPortName folds the spellings a rewrite gives one port: case,
// underscores and the common direction affixes (i_a, a_i, in_a, a_o ...).
func normPortName(n string) string {
	n = strings.ToLower(n)
	for _, p := range []string{"i_", "o_", "in_", "out_"} {
		if strings.HasPrefix(n, p) && len(n) > len(p) {
			n = n[len(p):]
			break
		}
	}
	for _, s := range []string{"_i", "_o", "_in", "_out"} {
		if strings.HasSuffix(n, s) && len(n) > len(s) {
			n = n[:len(n)-len(s)]
			break
		}
	}
	return strings.ReplaceAll(n, "_", "")
}

// PortMapping maps every benchmark port name to the corpus port that plays it.
type PortMapping map[string]string

// String renders the mapping as "bench=corpus" pairs in the benchmark's
// port order (the Match.PortMapping column).
func (m PortMapping) String(bench engine.Interface) string {
	parts := make([]string, 0, len(bench.Ports))
	for _, p := range bench.Ports {
		parts = append(parts, p.Name+"="+m[p.Name])
	}
	return strings.Join(parts, ",")
}

// PortMappings lists the mappings of corpus ports onto benchmark ports that
// behavioural matching tries, at most limit of them, and the number there
// are in all (saturating at 1<<30). Both interfaces must have one shape key.
//
// The search is bounded by construction: a benchmark clock maps to the
// corpus clock, a reset to the reset (when both have one), and a port to
// the equal-shape corpus port of the same normalised name; only the ports
// left over are permuted, within their shape group. The first mapping is
// the one pairing leftovers in declaration order, then the others in
// lexicographic order. A truth-table rewrite that renamed and reordered
// three 1-bit inputs and two 1-bit outputs has 3!·2! = 12 mappings; a
// pair with more than limit is tried on its first limit only, and the
// caller counts it as capped.
func PortMappings(bench, corpus engine.Interface, limit int) ([]PortMapping, int) {
	fixed := PortMapping{}
	used := map[string]bool{}
	shapeOf := map[string]string{}
	for _, p := range corpus.Ports {
		shapeOf[p.Name] = portShape(p)
	}
	pin := func(b, c string) {
		if b == "" || c == "" || used[c] || fixed[b] != "" {
			return
		}
		if bp, ok := findPort(bench.Ports, b); ok && portShape(bp) == shapeOf[c] {
			fixed[b], used[c] = c, true
		}
	}
	pin(bench.Clock, corpus.Clock)
	pin(bench.Reset, corpus.Reset)
	for _, bp := range bench.Ports {
		if fixed[bp.Name] != "" {
			continue
		}
		for _, cp := range corpus.Ports {
			if !used[cp.Name] && portShape(cp) == portShape(bp) && normPortName(cp.Name) == normPortName(bp.Name) {
				pin(bp.Name, cp.Name)
				break
			}
		}
	}
	// Leftovers by shape group, in declaration order.
	var groups []string
	left := map[string][2][]string{}
	for _, bp := range bench.Ports {
		if fixed[bp.Name] == "" {
			s := portShape(bp)
			g := left[s]
			if g[0] == nil {
				groups = append(groups, s)
			}
			g[0] = append(g[0], bp.Name)
			left[s] = g
		}
	}
	for _, cp := range corpus.Ports {
		if !used[cp.Name] {
			s := portShape(cp)
			g := left[s]
			g[1] = append(g[1], cp.Name)
			left[s] = g
		}
	}
	total := 1
	for _, s := range groups {
		g := left[s]
		if len(g[0]) != len(g[1]) {
			return nil, 0 // shapes differ: not one key
		}
		for i := 2; i <= len(g[1]); i++ {
			total = min(total*i, 1<<30)
		}
	}
	if limit <= 0 {
		return nil, total
	}
	// Odometer over the groups' permutations, first group slowest.
	perms := make([][][]string, len(groups))
	for i, s := range groups {
		perms[i] = permutations(left[s][1], limit)
	}
	var out []PortMapping
	idx := make([]int, len(groups))
	for len(out) < limit {
		m := PortMapping{}
		for b, c := range fixed {
			m[b] = c
		}
		for gi, s := range groups {
			for j, b := range left[s][0] {
				m[b] = perms[gi][idx[gi]][j]
			}
		}
		out = append(out, m)
		k := len(groups) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(perms[k]) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	return out, total
}

// permutations returns up to limit orderings of s, s itself first, then
// lexicographic by position.
func permutations(s []string, limit int) [][]string {
	n := len(s)
	pos := make([]int, n)
	for i := range pos {
		pos[i] = i
	}
	var out [][]string
	for len(out) < limit {
		p := make([]string, n)
		for i, j := range pos {
			p[i] = s[j]
		}
		out = append(out, p)
		// next lexicographic permutation of pos
		i := n - 2
		for i >= 0 && pos[i] >= pos[i+1] {
			i--
		}
		if i < 0 {
			break
		}
		j := n - 1
		for pos[j] <= pos[i] {
			j--
		}
		pos[i], pos[j] = pos[j], pos[i]
		slices.Reverse(pos[i+1:])
	}
	return out
}

func findPort(ps []engine.Port, name string) (engine.Port, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return engine.Port{}, false
}

// behaviouralDUT is the name the corpus design's top module is given inside
// the wrapper, so it collides with neither the harness's modules nor the
// candidate name the harness instantiates.
const behaviouralDUT = "crucible_bhv_dut"

// wrapperModule emits module top with the benchmark's ports, instantiating
// behaviouralDUT with each corpus port connected to the benchmark port the
// mapping gives it (shapes are equal, so connections are direct).
func wrapperModule(top string, bench engine.Interface, m PortMapping) string {
	var b strings.Builder
	decls := make([]string, len(bench.Ports))
	conns := make([]string, len(bench.Ports))
	for i, p := range bench.Ports {
		rng := ""
		if p.Width > 1 {
			rng = fmt.Sprintf("[%d:0] ", p.Width-1)
		}
		sign := ""
		if p.Signed {
			sign = "signed "
		}
		decls[i] = fmt.Sprintf("  %s %s%s%s", p.Direction, sign, rng, p.Name)
		conns[i] = fmt.Sprintf(".%s(%s)", m[p.Name], p.Name)
	}
	fmt.Fprintf(&b, "\nmodule %s (\n%s\n);\n  %s crucible_inner (%s);\nendmodule\n", top, strings.Join(decls, ",\n"), behaviouralDUT, strings.Join(conns, ", "))
	return b.String()
}

var (
	reLineComment  = regexp.MustCompile(`//[^\n]*`)
	reBlockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	reModuleDecl   = regexp.MustCompile(`\b(?:module|macromodule)\s+([A-Za-z_][A-Za-z0-9_$]*)`)
	reFence        = regexp.MustCompile("(?s)```[A-Za-z]*\\s*\\n(.*?)```")
	reModuleSpan   = regexp.MustCompile(`(?s)\bmodule\s+[A-Za-z_][A-Za-z0-9_$]*\s*(?:#|\(|;).*\bendmodule\b`)
)

// stripComments blanks comments (keeping offsets meaningless but names intact).
func stripComments(src string) string {
	return reLineComment.ReplaceAllString(reBlockComment.ReplaceAllString(src, " "), " ")
}

// topModule picks the design's top: the last declared module that no other
// module of the text instantiates ("" when the text declares none).
func topModule(src string) string {
	code := stripComments(src)
	var names []string
	for _, m := range reModuleDecl.FindAllStringSubmatch(code, -1) {
		names = append(names, m[1])
	}
	for i := len(names) - 1; i >= 0; i-- {
		inst := regexp.MustCompile(`\b` + regexp.QuoteMeta(names[i]) + `\s*(#|[A-Za-z_][A-Za-z0-9_$]*\s*\()`)
		used := false
		for _, l := range inst.FindAllStringIndex(code, -1) {
			if !strings.HasSuffix(strings.TrimSpace(code[max(0, l[0]-12):l[0]]), "module") {
				used = true
				break
			}
		}
		if !used {
			return names[i]
		}
	}
	return ""
}

// codeBlocks are the Verilog texts of one corpus field that behavioural
// matching runs: the fenced code blocks that declare a module, or, when the
// field has no fences, the span from its first `module` to its last
// `endmodule` (a reference field is usually that whole text).
func codeBlocks(text string) []string {
	var out []string
	if strings.Contains(text, "```") {
		for _, m := range reFence.FindAllStringSubmatch(text, -1) {
			if reModuleSpan.MatchString(stripComments(m[1])) {
				out = append(out, m[1])
			}
		}
		return out
	}
	if s := reModuleSpan.FindString(text); s != "" {
		out = append(out, s)
	}
	return out
}
