package vlog

import "strings"

// CaseItem is one item of a case statement.
type CaseItem struct {
	Labels  []string // label texts ("default" for the default item)
	LabelLo int
	Colon   int
	StmtLo  int
	StmtHi  int
}

// Case is one case statement.
type Case struct {
	Kw       int
	Selector string // the selector expression's text when it is a plain name
	Items    []CaseItem
	End      int
}

// Cases returns every case statement in the module body.
func (d *Design) Cases() []Case {
	var out []Case
	for i := d.HeadEnd; i >= 0 && i < d.EndTok; i = d.Next(i) {
		t := d.Text(i)
		if t != "case" && t != "casez" && t != "casex" {
			continue
		}
		c := Case{Kw: i, End: d.Match(i)}
		open := d.Next(i)
		if d.Text(open) != "(" || c.End < 0 {
			continue
		}
		close := d.Match(open)
		if close < 0 {
			continue
		}
		if s := d.Next(open); d.Next(s) == close && d.Toks[s].Kind == Ident {
			c.Selector = d.Text(s)
		}
		ok := true
		for j := d.Next(close); j >= 0 && j < c.End && ok; {
			it := CaseItem{LabelLo: j}
			var label []string
			k := j
			for ; k >= 0 && k < c.End; k = d.Next(k) {
				switch d.Text(k) {
				case ":":
				case "(", "[", "{":
					k2 := d.Match(k)
					if k2 < 0 || k2 >= c.End {
						k = -1 // unbalanced label: give up on this case statement
						break
					}
					label = append(label, Join(d.Toks[k:k2+1]))
					k = k2
					continue
				case ",":
					it.Labels = append(it.Labels, strings.Join(label, ""))
					label = nil
					continue
				default:
					label = append(label, d.Text(k))
					if d.Text(k) == "default" && d.Text(d.Next(k)) != ":" {
						it.Labels = append(it.Labels, "default")
						label = nil
						it.Colon = k
						goto stmt
					}
					continue
				}
				break
			}
			if k < 0 || k >= c.End {
				ok = false
				break
			}
			it.Labels = append(it.Labels, strings.Join(label, ""))
			it.Colon = k
		stmt:
			it.StmtLo = d.Next(it.Colon)
			it.StmtHi = d.StmtEnd(it.StmtLo)
			if it.StmtHi < 0 {
				ok = false
				break
			}
			c.Items = append(c.Items, it)
			j = d.Next(it.StmtHi)
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// AssignTarget returns the name assigned by the statement containing token
// i (walking back to the nearest '=' or '<=' outside parentheses), or "".
func (d *Design) AssignTarget(i int) string {
	depth := 0
	for j := d.Prev(i); j > d.HeadEnd; j = d.Prev(j) {
		switch d.Text(j) {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			depth--
			if depth < 0 {
				return ""
			}
		case ";", "begin", "end", "else":
			return ""
		case "=", "<=":
			if depth == 0 {
				l := d.Prev(j)
				if d.Text(l) == "]" {
					for l >= 0 && d.Text(l) != "[" {
						l = d.Prev(l)
					}
					l = d.Prev(l)
				}
				if l >= 0 && d.Toks[l].Kind == Ident {
					return d.Text(l)
				}
				return ""
			}
		}
	}
	return ""
}

// IsOperandEnd reports whether token i can end an operand (so an operator
// after it is binary).
func (d *Design) IsOperandEnd(i int) bool {
	if i < 0 {
		return false
	}
	t := d.Toks[i]
	return t.Kind == Ident || t.Kind == Number || t.Text == ")" || t.Text == "]" || t.Text == "}"
}
