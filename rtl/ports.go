package rtl

import (
	"fmt"
)

// modulePort is one port of a module as its declaration reads: name and
// direction. Widths are not needed from the text: the trace recorder prints
// every port with %b, so the trace itself carries each port's width.
type modulePort struct {
	Name      string
	Direction string // input | output | inout
}

// designUnitKeywords open a design unit; the name follows.
var designUnitKeywords = setOf("module", "macromodule", "program", "interface", "package", "primitive", "class", "checker")

var endOfUnit = map[string]string{"module": "endmodule", "macromodule": "endmodule", "program": "endprogram",
	"interface": "endinterface", "package": "endpackage", "primitive": "endprimitive", "class": "endclass", "checker": "endchecker"}

// designUnit is one design unit's span in a token slice.
type designUnit struct {
	Keyword, Name string
	Start, End    int // token indices of the keyword and of its end keyword
}

// designUnits lists the design units of a token stream in order. A unit
// with no end keyword is an error.
func designUnits(toks []token) ([]designUnit, error) {
	var out []designUnit
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.Kind != tokIdent || t.Escaped || !designUnitKeywords[t.Text] {
			continue
		}
		// "interface class" and "virtual interface" / ".. class" uses inside
		// code are not units at the top level; units are never nested here
		// except classes/interfaces, which we do not need to split.
		j := i + 1
		for j < len(toks) && (toks[j].isKeyword("automatic") || toks[j].isKeyword("static")) {
			j++
		}
		if j >= len(toks) || toks[j].Kind != tokIdent {
			return nil, fmt.Errorf("%w: line %d: %s without a name", ErrParse, t.Line, t.Text)
		}
		end := endOfUnit[t.Text]
		k := j + 1
		for k < len(toks) && !toks[k].isKeyword(end) {
			if end == "endmodule" && (toks[k].isKeyword("module") || toks[k].isKeyword("macromodule")) {
				return nil, fmt.Errorf("%w: line %d: module %s begins before %s ends", ErrParse, toks[k].Line, toks[k+min(1, len(toks)-k-1)].Text, toks[j].Text)
			}
			k++
		}
		if k >= len(toks) {
			return nil, fmt.Errorf("%w: line %d: %s %s has no %s", ErrParse, t.Line, t.Text, toks[j].Text, end)
		}
		out = append(out, designUnit{Keyword: t.Text, Name: toks[j].Text, Start: i, End: k})
		i = k
	}
	return out, nil
}

// typeWords may sit between a direction and a port name; they are never the name.
var typeWords = setOf("wire", "reg", "logic", "bit", "byte", "shortint", "int", "longint", "integer", "time",
	"real", "realtime", "shortreal", "signed", "unsigned", "var", "tri", "tri0", "tri1", "triand", "trior",
	"trireg", "wand", "wor", "supply0", "supply1", "uwire", "string", "const", "static", "automatic")

var directions = setOf("input", "output", "inout")

// modulePorts reads the ports of module name from toks: an ANSI header
// (`module m (input [3:0] a, b, output reg q);`) or a non-ANSI one (names in
// the header, direction declarations among the module items, skipping task
// and function bodies). Every port must get a direction.
func modulePorts(toks []token, name string) ([]modulePort, error) {
	units, err := designUnits(toks)
	if err != nil {
		return nil, err
	}
	var u *designUnit
	for i := range units {
		if units[i].Name == name && (units[i].Keyword == "module" || units[i].Keyword == "macromodule") {
			if u != nil {
				return nil, fmt.Errorf("%w: module %s is declared twice", ErrParse, name)
			}
			u = &units[i]
		}
	}
	if u == nil {
		return nil, fmt.Errorf("%w: no module %s", ErrParse, name)
	}
	body := toks[u.Start:u.End]
	i := 2
	for i < len(body) && (body[i].isKeyword("automatic") || body[i].isKeyword("static")) {
		i++
	}
	for i < len(body) && body[i].Kind == tokIdent && !body[i].Escaped && body[i].Text == "import" {
		for i < len(body) && !body[i].isOp(";") {
			i++
		}
		i++
	}
	if i < len(body) && body[i].isOp("#") {
		i++
		if i >= len(body) || !body[i].isOp("(") {
			return nil, fmt.Errorf("%w: module %s: # without a parameter list", ErrParse, name)
		}
		if i = matchClose(body, i); i < 0 {
			return nil, fmt.Errorf("%w: module %s: unbalanced parameter list", ErrParse, name)
		}
		i++
	}
	var ports []modulePort
	headerEnd := i
	if i < len(body) && body[i].isOp("(") {
		close := matchClose(body, i)
		if close < 0 {
			return nil, fmt.Errorf("%w: module %s: unbalanced port list", ErrParse, name)
		}
		list := body[i+1 : close]
		ansi := false
		for _, t := range list {
			if t.Kind == tokIdent && !t.Escaped && directions[t.Text] {
				ansi = true
			}
		}
		dir := ""
		for _, seg := range splitTop(list, ",") {
			if len(seg) == 0 {
				continue
			}
			if ansi {
				if seg[0].Kind == tokIdent && !seg[0].Escaped && directions[seg[0].Text] {
					dir = seg[0].Text
				}
				if dir == "" {
					return nil, fmt.Errorf("%w: module %s: port on line %d has no direction", ErrParse, name, seg[0].Line)
				}
				n, ok := declName(seg)
				if !ok {
					return nil, fmt.Errorf("%w: module %s: cannot read the port on line %d", ErrParse, name, seg[0].Line)
				}
				ports = append(ports, modulePort{Name: n, Direction: dir})
				continue
			}
			if len(seg) != 1 || seg[0].Kind != tokIdent {
				return nil, fmt.Errorf("%w: module %s: non-ANSI port on line %d is not a plain name", ErrParse, name, seg[0].Line)
			}
			ports = append(ports, modulePort{Name: seg[0].Text})
		}
		headerEnd = close + 1
		if !ansi {
			if err := nonANSIDirections(body[headerEnd:], ports, name); err != nil {
				return nil, err
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range ports {
		if seen[p.Name] {
			return nil, fmt.Errorf("%w: module %s: port %s declared twice", ErrParse, name, p.Name)
		}
		seen[p.Name] = true
	}
	return ports, nil
}

// nonANSIDirections fills the directions of ports from `input a, b;` style
// declarations among the module items.
func nonANSIDirections(items []token, ports []modulePort, module string) error {
	idx := map[string]int{}
	for i, p := range ports {
		idx[p.Name] = i
	}
	skipUntil := ""
	for i := 0; i < len(items); i++ {
		t := items[i]
		if t.Kind != tokIdent || t.Escaped {
			continue
		}
		if skipUntil != "" {
			if t.Text == skipUntil {
				skipUntil = ""
			}
			continue
		}
		switch {
		case t.Text == "function" || t.Text == "task":
			skipUntil = "end" + t.Text
		case directions[t.Text]:
			j := i + 1
			for j < len(items) && !items[j].isOp(";") {
				j++
			}
			for _, seg := range splitTop(items[i+1:j], ",") {
				n, ok := declName(append([]token{t}, seg...))
				if !ok {
					return fmt.Errorf("%w: module %s: cannot read the %s declaration on line %d", ErrParse, module, t.Text, t.Line)
				}
				k, isPort := idx[n]
				if !isPort {
					return fmt.Errorf("%w: module %s: %s %s is not in the port list", ErrParse, module, t.Text, n)
				}
				ports[k].Direction = t.Text
			}
			i = j
		}
	}
	for _, p := range ports {
		if p.Direction == "" {
			return fmt.Errorf("%w: module %s: port %s has no direction declaration", ErrParse, module, p.Name)
		}
	}
	return nil
}

// declName is the declared name in one declaration segment ("input wire
// [3:0] a", "b", "output reg q = 0", "input my_t x [0:1]"): the last
// identifier outside brackets before any "=" that is not a type word.
func declName(seg []token) (string, bool) {
	name := ""
	for i := 0; i < len(seg); i++ {
		t := seg[i]
		if t.isOp("=") {
			break
		}
		if t.isOp("[") || t.isOp("(") || t.isOp("{") {
			if i = matchClose(seg, i); i < 0 {
				return "", false
			}
			continue
		}
		if t.Kind == tokIdent && (t.Escaped || (!typeWords[t.Text] && !directions[t.Text])) {
			name = t.Text
		}
	}
	return name, name != ""
}

// splitTop splits toks at sep outside brackets.
func splitTop(toks []token, sep string) [][]token {
	var out [][]token
	depth, start := 0, 0
	for i, t := range toks {
		if t.Kind != tokOp {
			continue
		}
		switch t.Text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case sep:
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}
