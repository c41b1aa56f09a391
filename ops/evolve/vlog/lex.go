// Package vlog is a small Verilog lexer and structural reader for the
// mutation operators: it keeps every byte of the source in its token stream
// (whitespace and comments included), so an edit replaces exact token spans
// and the rest of the design is reproduced byte for byte.
package vlog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax wraps every lexing and structure error.
var ErrSyntax = errors.New("verilog syntax")

// Kind is a token class.
type Kind uint8

// Token kinds.
const (
	Space Kind = iota
	Comment
	Ident
	Keyword
	Number
	String
	Op
	Directive // `define, `timescale, ... (to the end of the line)
	SysName   // $display, $signed, ...
)

// Token is one lexeme with its byte offset.
type Token struct {
	Kind Kind
	Text string
	Pos  int
}

// Sig reports whether the token is significant (not whitespace or a comment).
func (t Token) Sig() bool { return t.Kind != Space && t.Kind != Comment }

var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`module endmodule input output inout wire reg logic integer signed unsigned
	parameter localparam assign always always_ff always_comb always_latch initial begin end if else case casez casex
	endcase default posedge negedge or and not for while repeat forever function endfunction task endtask generate
	endgenerate genvar typedef enum struct packed int bit byte`) {
		keywords[k] = true
	}
}

// ops are the multi-character operators, longest first.
var ops = []string{"<<<=", ">>>=", "===", "!==", "<<<", ">>>", "<<=", ">>=", "==", "!=", "<=", ">=", "&&", "||",
	"<<", ">>", "**", "~&", "~|", "~^", "^~", "+:", "-:", "->", "::", "++", "--", "+=", "-=", "*=", "|=", "&=", "^="}

// Lex splits src into tokens whose texts concatenate back to src.
func Lex(src string) ([]Token, error) {
	var toks []Token
	i := 0
	n := len(src)
	for i < n {
		start := i
		c := src[i]
		var k Kind
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			for i < n && strings.IndexByte(" \t\n\r\f\v", src[i]) >= 0 {
				i++
			}
			k = Space
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = n
			} else {
				i += j
			}
			k = Comment
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("%w: unterminated block comment at byte %d", ErrSyntax, i)
			}
			i += j + 4
			k = Comment
		case c == '"':
			i++
			for i < n && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				if i < n && src[i] == '\n' {
					return nil, fmt.Errorf("%w: unterminated string at byte %d", ErrSyntax, start)
				}
				i++
			}
			if i >= n {
				return nil, fmt.Errorf("%w: unterminated string at byte %d", ErrSyntax, start)
			}
			i++
			k = String
		case c == '`':
			i++
			for i < n && isIdent(src[i]) {
				i++
			}
			k = Directive
			d := src[start+1 : i]
			if d == "define" || d == "timescale" || d == "include" || d == "default_nettype" || d == "undef" {
				for i < n && src[i] != '\n' {
					i++
				}
			}
		case c == '$':
			i++
			for i < n && isIdent(src[i]) {
				i++
			}
			k = SysName
		case isIdentStart(c):
			for i < n && (isIdent(src[i]) || src[i] == '$') {
				i++
			}
			k = Ident
			if keywords[src[start:i]] {
				k = Keyword
			}
		case c == '\\': // escaped identifier: up to whitespace
			for i < n && !strings.ContainsRune(" \t\n\r", rune(src[i])) {
				i++
			}
			k = Ident
		case isDigit(c) || c == '\'':
			i = lexNumber(src, i)
			if i == start { // a lone quote (SystemVerilog cast or assignment pattern)
				i++
				k = Op
			} else {
				k = Number
			}
		default:
			k = Op
			i++
			for _, o := range ops {
				if strings.HasPrefix(src[start:], o) {
					i = start + len(o)
					break
				}
			}
		}
		toks = append(toks, Token{Kind: k, Text: src[start:i], Pos: start})
	}
	return toks, nil
}

// lexNumber reads 12, 4'd9, 8'hFF, 'b0, '0, 32'sd5, 1_000, 1.5.
func lexNumber(src string, i int) int {
	n := len(src)
	j := i
	for j < n && (isDigit(src[j]) || src[j] == '_') {
		j++
	}
	k := j
	for k < n && (src[k] == ' ' || src[k] == '\t') && j > i {
		k++
	}
	if k < n && src[k] == '\'' {
		m := k + 1
		if m < n && (src[m] == 's' || src[m] == 'S') {
			m++
		}
		if m < n && strings.IndexByte("dDhHbBoO", src[m]) >= 0 {
			m++
			for m < n && (src[m] == ' ' || src[m] == '\t') {
				m++
			}
			e := m
			for e < n && (isHex(src[e]) || strings.IndexByte("xXzZ?_", src[e]) >= 0) {
				e++
			}
			if e > m {
				return e
			}
		} else if j == i && m < n && strings.IndexByte("01xXzZ", src[m]) >= 0 && (m+1 >= n || !isIdent(src[m+1])) {
			return m + 1 // unbased unsized literal '0 '1 'x 'z
		}
	}
	if j < n && src[j] == '.' && j+1 < n && isDigit(src[j+1]) {
		j++
		for j < n && isDigit(src[j]) {
			j++
		}
	}
	return j
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isHex(c byte) bool        { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
func isIdentStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }

// Join concatenates token texts.
func Join(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// Normalized returns the significant tokens joined by single spaces: the
// design without comments and layout (for dedup and leakage checks).
func Normalized(toks []Token) string {
	var parts []string
	for _, t := range toks {
		if t.Sig() {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
