package vlog

import (
	"fmt"
	"strconv"
	"strings"
)

// Design is one parsed module: its token stream plus the structure the
// mutation operators navigate (ports, declarations, always blocks,
// continuous assignments, parameters). Token indices refer to Toks.
type Design struct {
	Toks     []Token
	Name     string
	NameTok  int
	HeadEnd  int // index of the ';' that ends the module header
	EndTok   int // index of endmodule
	Ports    []PortDecl
	Decls    []PortDecl // internal reg/wire/logic declarations (Dir "")
	Always   []Always
	Assigns  []Assign
	Params   map[string]int // parameter / localparam name -> index of its value's first token
	ParamOrd []string       // in declaration order
}

// PortDecl is one declared name with its packed range.
type PortDecl struct {
	Name     string
	Dir      string // input | output | inout | "" for internal signals
	Tok      int    // index of the name token
	RangeLo  int    // index of '[' (-1 without a range)
	RangeHi  int    // index of ']'
	IsReg    bool
	DeclKind string // reg | wire | logic | integer | ""
}

// Always is one always block.
type Always struct {
	Kw        int // index of the always keyword
	SensOpen  int // '(' of @( ... ), -1 for always_comb / @*
	SensClose int
	BodyStart int // first significant token of the body statement
	BodyEnd   int // last token of the body statement (inclusive)
	Edges     []Edge
}

// Edge is one `posedge x` / `negedge x` of a sensitivity list.
type Edge struct {
	Kw     int // index of posedge/negedge
	Signal string
	SigTok int
}

// Assign is one continuous assignment: assign LHS = RHS;
type Assign struct {
	Kw    int
	LHS   string
	RHSLo int // first token after '='
	Semi  int
}

// Parse reads the module named top (or the first module when top is "").
func Parse(src, top string) (*Design, error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	d := &Design{Toks: toks, NameTok: -1, Params: map[string]int{}}
	for i := 0; i < len(toks); i++ {
		if toks[i].Kind == Keyword && toks[i].Text == "module" {
			j := d.Next(i)
			if j < 0 {
				break
			}
			if top == "" || toks[j].Text == top {
				d.Name, d.NameTok = toks[j].Text, j
				break
			}
		}
	}
	if d.NameTok < 0 {
		return nil, fmt.Errorf("%w: no module %q", ErrSyntax, top)
	}
	if err := d.parseHeader(); err != nil {
		return nil, err
	}
	if err := d.parseBody(); err != nil {
		return nil, err
	}
	return d, nil
}

// Next returns the index of the next significant token after i (-1 at the end).
func (d *Design) Next(i int) int {
	if i < 0 {
		return -1 // past the end stays past the end
	}
	for j := i + 1; j < len(d.Toks); j++ {
		if d.Toks[j].Sig() {
			return j
		}
	}
	return -1
}

// Prev returns the index of the previous significant token before i (-1 at the start).
func (d *Design) Prev(i int) int {
	for j := i - 1; j >= 0; j-- {
		if d.Toks[j].Sig() {
			return j
		}
	}
	return -1
}

// Text is the text of token i ("" out of range).
func (d *Design) Text(i int) string {
	if i < 0 || i >= len(d.Toks) {
		return ""
	}
	return d.Toks[i].Text
}

// Match returns the index of the bracket closing the one at i.
func (d *Design) Match(i int) int {
	if i < 0 || i >= len(d.Toks) {
		return -1
	}
	open := d.Toks[i].Text
	closer := map[string]string{"(": ")", "[": "]", "{": "}", "begin": "end", "case": "endcase", "casez": "endcase", "casex": "endcase"}[open]
	if closer == "" {
		return -1
	}
	depth := 0
	for j := i; j < len(d.Toks); j++ {
		t := d.Toks[j]
		if !t.Sig() {
			continue
		}
		if t.Text == open || (closer == "endcase" && (t.Text == "case" || t.Text == "casez" || t.Text == "casex")) {
			depth++
		} else if t.Text == closer {
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func (d *Design) parseHeader() error {
	i := d.Next(d.NameTok)
	if d.Text(i) == "#" { // parameter port list
		p := d.Next(i)
		if d.Text(p) != "(" {
			return fmt.Errorf("%w: module %s: '#' without '('", ErrSyntax, d.Name)
		}
		end := d.Match(p)
		if end < 0 {
			return fmt.Errorf("%w: module %s: unbalanced parameter list", ErrSyntax, d.Name)
		}
		d.scanParams(p, end)
		i = d.Next(end)
	}
	if d.Text(i) == "(" {
		end := d.Match(i)
		if end < 0 {
			return fmt.Errorf("%w: module %s: unbalanced port list", ErrSyntax, d.Name)
		}
		d.scanDecls(i+1, end, true)
		i = d.Next(end)
	}
	if d.Text(i) != ";" {
		return fmt.Errorf("%w: module %s: header does not end with ';'", ErrSyntax, d.Name)
	}
	d.HeadEnd = i
	return nil
}

// scanDecls reads "input [3:0] a, b, output reg c" style lists between lo and hi.
func (d *Design) scanDecls(lo, hi int, header bool) {
	dir, kind := "", ""
	rlo, rhi := -1, -1
	for i := lo; i < hi && i >= 0; i = d.Next(i) {
		t := d.Toks[i]
		if !t.Sig() {
			continue
		}
		switch {
		case t.Text == "input" || t.Text == "output" || t.Text == "inout":
			dir, kind, rlo, rhi = t.Text, "", -1, -1
		case t.Text == "reg" || t.Text == "wire" || t.Text == "logic" || t.Text == "integer":
			kind = t.Text
		case t.Text == "signed" || t.Text == "unsigned":
		case t.Text == "[":
			rlo, rhi = i, d.Match(i)
			if rhi < 0 {
				return
			}
			i = rhi
		case t.Kind == Ident:
			pd := PortDecl{Name: t.Text, Dir: dir, Tok: i, RangeLo: rlo, RangeHi: rhi, IsReg: kind == "reg" || kind == "logic", DeclKind: kind}
			if header || dir != "" {
				d.upsertPort(pd)
			} else {
				d.Decls = append(d.Decls, pd)
			}
			// skip an unpacked dimension or initialiser up to ',' or the end
			for j := d.Next(i); j >= 0 && j < hi; j = d.Next(j) {
				if d.Text(j) == "," || d.Text(j) == ";" {
					i = j
					break
				}
				if d.Text(j) == "[" || d.Text(j) == "(" || d.Text(j) == "{" {
					j = d.Match(j)
					if j < 0 {
						return
					}
				}
				i = j
			}
		}
	}
}

func (d *Design) upsertPort(p PortDecl) {
	for k := range d.Ports {
		if d.Ports[k].Name == p.Name { // non-ANSI: the body declaration completes the header name
			if p.Dir != "" {
				d.Ports[k].Dir = p.Dir
			}
			if p.RangeLo >= 0 {
				d.Ports[k].RangeLo, d.Ports[k].RangeHi = p.RangeLo, p.RangeHi
			}
			d.Ports[k].IsReg = d.Ports[k].IsReg || p.IsReg
			return
		}
	}
	d.Ports = append(d.Ports, p)
}

func (d *Design) scanParams(lo, hi int) {
	for i := lo; i < hi && i >= 0; i = d.Next(i) {
		if d.Toks[i].Kind == Ident && d.Text(d.Next(i)) == "=" {
			if _, seen := d.Params[d.Toks[i].Text]; !seen {
				d.ParamOrd = append(d.ParamOrd, d.Toks[i].Text)
			}
			d.Params[d.Toks[i].Text] = d.Next(d.Next(i))
		}
	}
}

func (d *Design) parseBody() error {
	for i := d.Next(d.HeadEnd); i >= 0; i = d.Next(i) {
		t := d.Toks[i]
		switch t.Text {
		case "endmodule":
			d.EndTok = i
			return nil
		case "module":
			return fmt.Errorf("%w: module %s has no endmodule", ErrSyntax, d.Name)
		case "input", "output", "inout", "reg", "wire", "logic", "integer":
			end := d.stmtEnd(i)
			if end < 0 {
				return fmt.Errorf("%w: module %s: declaration without ';'", ErrSyntax, d.Name)
			}
			d.scanDecls(i, end, false)
			i = end
		case "parameter", "localparam":
			end := d.stmtEnd(i)
			if end < 0 {
				return fmt.Errorf("%w: module %s: parameter without ';'", ErrSyntax, d.Name)
			}
			d.scanParams(i, end)
			i = end
		case "assign":
			end := d.stmtEnd(i)
			lhs := d.Next(i)
			eq := lhs
			for eq >= 0 && eq < end && d.Text(eq) != "=" {
				eq = d.Next(eq)
			}
			if end < 0 || eq < 0 || eq >= end {
				return fmt.Errorf("%w: module %s: malformed assign", ErrSyntax, d.Name)
			}
			d.Assigns = append(d.Assigns, Assign{Kw: i, LHS: d.Text(lhs), RHSLo: d.Next(eq), Semi: end})
			i = end
		case "always", "always_ff", "always_comb", "always_latch":
			a, err := d.parseAlways(i)
			if err != nil {
				return err
			}
			d.Always = append(d.Always, a)
			i = a.BodyEnd
		}
	}
	return fmt.Errorf("%w: module %s has no endmodule", ErrSyntax, d.Name)
}

// stmtEnd finds the ';' ending a simple statement starting at i.
func (d *Design) stmtEnd(i int) int {
	for j := i; j >= 0; j = d.Next(j) {
		switch d.Text(j) {
		case ";":
			return j
		case "(", "[", "{":
			if j = d.Match(j); j < 0 {
				return -1
			}
		case "endmodule":
			return -1
		}
	}
	return -1
}

func (d *Design) parseAlways(i int) (Always, error) {
	a := Always{Kw: i, SensOpen: -1, SensClose: -1}
	j := d.Next(i)
	if d.Text(j) == "@" {
		j = d.Next(j)
		if d.Text(j) == "(" {
			a.SensOpen, a.SensClose = j, d.Match(j)
			if a.SensClose < 0 {
				return a, fmt.Errorf("%w: unbalanced sensitivity list", ErrSyntax)
			}
			for k := a.SensOpen; k < a.SensClose; k = d.Next(k) {
				if w := d.Text(k); w == "posedge" || w == "negedge" {
					s := d.Next(k)
					a.Edges = append(a.Edges, Edge{Kw: k, Signal: d.Text(s), SigTok: s})
				}
			}
			j = d.Next(a.SensClose)
		} else { // @*
			j = d.Next(j)
		}
	}
	a.BodyStart = j
	end := d.StmtEnd(j)
	if end < 0 {
		return a, fmt.Errorf("%w: always block at byte %d has no complete statement", ErrSyntax, d.Toks[i].Pos)
	}
	a.BodyEnd = end
	return a, nil
}

// StmtEnd returns the last token index of the statement starting at i:
// begin...end, case...endcase, if/else chains, or a simple statement.
func (d *Design) StmtEnd(i int) int {
	switch d.Text(i) {
	case "begin", "case", "casez", "casex":
		return d.Match(i)
	case "if":
		c := d.Next(i)
		if d.Text(c) != "(" {
			return -1
		}
		cc := d.Match(c)
		if cc < 0 {
			return -1
		}
		e := d.StmtEnd(d.Next(cc))
		if e < 0 {
			return -1
		}
		if d.Text(d.Next(e)) == "else" {
			return d.StmtEnd(d.Next(d.Next(e)))
		}
		return e
	case "for", "while", "repeat":
		c := d.Next(i)
		cc := d.Match(c)
		if cc < 0 {
			return -1
		}
		return d.StmtEnd(d.Next(cc))
	case "forever":
		return d.StmtEnd(d.Next(i))
	}
	return d.stmtEnd(i)
}

// Port returns the named port.
func (d *Design) Port(name string) (PortDecl, bool) {
	for _, p := range d.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return PortDecl{}, false
}

// Signal returns a port or internal declaration by name.
func (d *Design) Signal(name string) (PortDecl, bool) {
	if p, ok := d.Port(name); ok {
		return p, true
	}
	for _, p := range d.Decls {
		if p.Name == name {
			return p, true
		}
	}
	return PortDecl{}, false
}

// InSensitivity reports whether token i lies inside a sensitivity list.
func (d *Design) InSensitivity(i int) bool {
	for _, a := range d.Always {
		if a.SensOpen >= 0 && i > a.SensOpen && i < a.SensClose {
			return true
		}
	}
	return false
}

// InDecl reports whether token i is a declared name (port or internal).
func (d *Design) InDecl(i int) bool {
	if i <= d.HeadEnd {
		return true
	}
	for _, p := range d.Ports {
		if p.Tok == i {
			return true
		}
	}
	for _, p := range d.Decls {
		if p.Tok == i {
			return true
		}
	}
	return false
}

// InBrackets reports whether token i lies inside [ ... ] (a range or index).
func (d *Design) InBrackets(i int) bool {
	depth := 0
	for j := d.HeadEnd; j < i; j++ {
		switch d.Toks[j].Text {
		case "[":
			depth++
		case "]":
			depth--
		}
	}
	return depth > 0
}

// ClockedAlways reports whether token i lies in the body of an always block
// with an edge-triggered sensitivity list.
func (d *Design) ClockedAlways(i int) bool {
	for _, a := range d.Always {
		if len(a.Edges) > 0 && i >= a.BodyStart && i <= a.BodyEnd {
			return true
		}
	}
	return false
}

// Uses returns the indices of expression uses of an identifier in the
// module body (not declarations, not sensitivity lists, not `.port(` names).
func (d *Design) Uses(name string) []int {
	var out []int
	for i := d.HeadEnd + 1; i < d.EndTok; i++ {
		t := d.Toks[i]
		if t.Kind != Ident || t.Text != name || d.InDecl(i) || d.InSensitivity(i) {
			continue
		}
		if d.Text(d.Prev(i)) == "." {
			continue
		}
		out = append(out, i)
	}
	return out
}

// Width reads a [H:L] range with literal (or parameter) bounds; 1 without a range.
func (d *Design) Width(p PortDecl) (int, bool) {
	if p.RangeLo < 0 {
		return 1, true
	}
	var parts []string
	for k := d.Next(p.RangeLo); k >= 0 && k < p.RangeHi; k = d.Next(k) {
		parts = append(parts, d.Text(k))
	}
	s := strings.Join(parts, " ")
	hs, ls, ok := strings.Cut(s, ":")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.Atoi(strings.TrimSpace(hs))
	l, err2 := strconv.Atoi(strings.TrimSpace(ls))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	if h < l {
		h, l = l, h
	}
	return h - l + 1, true
}
