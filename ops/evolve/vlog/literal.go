package vlog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Literal is a parsed sized or unsized numeric literal.
type Literal struct {
	Size   int // 0 when unsized
	Signed bool
	Base   byte // d h b o, 0 for a plain decimal
	Value  uint64
	OK     bool // false for x/z digits or overflow
}

// ParseLiteral reads a number token.
func ParseLiteral(s string) Literal {
	s = strings.ReplaceAll(s, "_", "")
	q := strings.IndexByte(s, '\'')
	if q < 0 {
		v, err := strconv.ParseUint(s, 10, 64)
		return Literal{Value: v, OK: err == nil}
	}
	var l Literal
	if q > 0 {
		n, err := strconv.Atoi(strings.TrimSpace(s[:q]))
		if err != nil {
			return Literal{}
		}
		l.Size = n
	}
	r := s[q+1:]
	if r != "" && (r[0] == 's' || r[0] == 'S') {
		l.Signed, r = true, r[1:]
	}
	if r == "" {
		return Literal{}
	}
	l.Base = byte(strings.ToLower(r[:1])[0])
	base := map[byte]int{'d': 10, 'h': 16, 'b': 2, 'o': 8}[l.Base]
	if base == 0 {
		return Literal{} // '0 / '1
	}
	v, err := strconv.ParseUint(strings.TrimSpace(r[1:]), base, 64)
	l.Value, l.OK = v, err == nil
	return l
}

// Format writes a literal back in its own base and size.
func (l Literal) Format() string {
	if l.Base == 0 {
		return strconv.FormatUint(l.Value, 10)
	}
	base := map[byte]int{'d': 10, 'h': 16, 'b': 2, 'o': 8}[l.Base]
	s := ""
	if l.Size > 0 {
		s = strconv.Itoa(l.Size)
	}
	sg := ""
	if l.Signed {
		sg = "s"
	}
	return s + "'" + sg + string(l.Base) + strconv.FormatUint(l.Value, base)
}

// Edit replaces tokens [From, To) with Text (From == To inserts).
type Edit struct {
	From, To int
	Text     string
}

// Apply returns the source with edits applied; overlapping edits are an error.
func (d *Design) Apply(edits []Edit) (string, error) {
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].From < edits[b].From })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		if e.From < at || e.To < e.From || e.To > len(d.Toks) {
			return "", fmt.Errorf("%w: overlapping or invalid edit [%d,%d)", ErrSyntax, e.From, e.To)
		}
		b.WriteString(Join(d.Toks[at:e.From]))
		b.WriteString(e.Text)
		at = e.To
	}
	b.WriteString(Join(d.Toks[at:]))
	return b.String(), nil
}
