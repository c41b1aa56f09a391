package rtl

import (
	"fmt"
	"strings"
)

// A small Verilog/SystemVerilog lexer. It exists so that the static check
// and the reading of a trusted module's ports see the tokens a real parser
// sees: comments and strings are not code, an escaped identifier (`\foo"bar `
// up to the next white space) is one identifier whatever characters it
// holds, and `\force ` is an identifier, not the keyword. It does not
// expand macros; the static check runs it on the preprocessor's output.

type tokKind uint8

const (
	tokIdent     tokKind = iota // identifier or keyword (escaped: Escaped set, never a keyword)
	tokSysName                  // $name: system task/function
	tokDirective                // `name: compiler directive or macro use
	tokNumber                   // number, based literal, real, time literal
	tokString                   // "..." (Text is the raw literal with quotes)
	tokOp                       // operator or punctuation (one char, or "::")
)

type token struct {
	Kind    tokKind
	Text    string // for an escaped identifier, the name without the backslash
	Pos     int    // byte offset in the source
	End     int    // byte offset just past the token
	Line    int    // 1-based
	Escaped bool
}

// isKeyword reports whether t is the (unescaped) identifier kw.
func (t token) isKeyword(kw string) bool { return t.Kind == tokIdent && !t.Escaped && t.Text == kw }

func (t token) isOp(op string) bool { return t.Kind == tokOp && t.Text == op }

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// lexOptions: skipDefines drops `define lines (with their continuations)
// from the token stream, for reading trusted text that was not preprocessed.
type lexOptions struct{ skipDefines bool }

// lexVerilog tokenises src. An unterminated comment or string, or a byte
// that starts no token (NUL, a lone backslash), is an error naming the line.
func lexVerilog(src string, opt lexOptions) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	n := len(src)
	errAt := func(l int, format string, a ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrParse, l, fmt.Sprintf(format, a...))
	}
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case isSpace(c):
			i++
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			start := line
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, errAt(start, "unterminated /* comment")
			}
			line += strings.Count(src[i:i+2+j+2], "\n")
			i += 2 + j + 2
		case c == '"':
			start, l0 := i, line
			i++
			for {
				if i >= n || src[i] == '\n' {
					return nil, errAt(l0, "unterminated string literal")
				}
				if src[i] == '\\' && i+1 < n {
					if src[i+1] == '\n' {
						line++
					}
					i += 2
					continue
				}
				if src[i] == '"' {
					i++
					break
				}
				i++
			}
			toks = append(toks, token{Kind: tokString, Text: src[start:i], Pos: start, End: i, Line: l0})
		case c == '\\':
			start := i
			i++
			for i < n && !isSpace(src[i]) {
				i++
			}
			if i == start+1 {
				return nil, errAt(line, "empty escaped identifier")
			}
			toks = append(toks, token{Kind: tokIdent, Text: src[start+1 : i], Pos: start, End: i, Line: line, Escaped: true})
		case c == '$':
			start := i
			i++
			for i < n && isIdentChar(src[i]) {
				i++
			}
			if i == start+1 {
				toks = append(toks, token{Kind: tokOp, Text: "$", Pos: start, End: i, Line: line})
			} else {
				toks = append(toks, token{Kind: tokSysName, Text: src[start:i], Pos: start, End: i, Line: line})
			}
		case c == '`':
			start := i
			i++
			for i < n && isIdentChar(src[i]) {
				i++
			}
			name := src[start+1 : i]
			if opt.skipDefines && name == "define" {
				// The macro body runs to the end of the line; a backslash
				// before the newline continues it.
				for i < n && src[i] != '\n' {
					if src[i] == '\\' && i+1 < n && src[i+1] == '\n' {
						line++
						i++
					}
					i++
				}
				continue
			}
			toks = append(toks, token{Kind: tokDirective, Text: src[start:i], Pos: start, End: i, Line: line})
		case isIdentStart(c):
			start := i
			for i < n && isIdentChar(src[i]) {
				i++
			}
			toks = append(toks, token{Kind: tokIdent, Text: src[start:i], Pos: start, End: i, Line: line})
		case c >= '0' && c <= '9':
			start := i
			for i < n && (isIdentChar(src[i]) || src[i] == '.') && src[i] != '$' {
				i++
			}
			toks = append(toks, token{Kind: tokNumber, Text: src[start:i], Pos: start, End: i, Line: line})
		case c == '\'':
			start := i
			i++
			// A based literal ('h1f, 'sb10, 4 'd 9) or an unbased one ('0 '1 'x 'z);
			// otherwise the quote of a cast or an assignment pattern.
			j := i
			if j < n && (src[j] == 's' || src[j] == 'S') {
				j++
			}
			if j < n && strings.IndexByte("bBoOdDhH", src[j]) >= 0 {
				j++
				for j < n && (src[j] == ' ' || src[j] == '\t') {
					j++
				}
				for j < n && (isIdentChar(src[j]) || src[j] == '?') && src[j] != '$' {
					j++
				}
				i = j
				toks = append(toks, token{Kind: tokNumber, Text: src[start:i], Pos: start, End: i, Line: line})
			} else if i < n && strings.IndexByte("01xXzZ", src[i]) >= 0 && (i+1 >= n || !isIdentChar(src[i+1])) {
				i++
				toks = append(toks, token{Kind: tokNumber, Text: src[start:i], Pos: start, End: i, Line: line})
			} else {
				toks = append(toks, token{Kind: tokOp, Text: "'", Pos: start, End: i, Line: line})
			}
		case c == ':' && i+1 < n && src[i+1] == ':':
			toks = append(toks, token{Kind: tokOp, Text: "::", Pos: i, End: i + 2, Line: line})
			i += 2
		case c < 0x20 || c >= 0x7f:
			return nil, errAt(line, "byte 0x%02x outside a string, comment or escaped identifier", c)
		default:
			toks = append(toks, token{Kind: tokOp, Text: src[i : i+1], Pos: i, End: i + 1, Line: line})
			i++
		}
	}
	return toks, nil
}

// matchClose returns the index of the token closing the bracket at toks[i]
// ("(", "[" or "{"), or -1.
func matchClose(toks []token, i int) int {
	open := toks[i].Text
	close := map[string]string{"(": ")", "[": "]", "{": "}"}[open]
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].Kind != tokOp {
			continue
		}
		switch toks[j].Text {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}
