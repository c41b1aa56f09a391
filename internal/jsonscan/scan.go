// Package jsonscan is a validating JSON scanner for the JSONL read paths
// (dedup's pass-through rows, ingest's item lines): it finds the members
// of an object and the elements of an array as raw byte ranges of the
// line, without building maps or decoding what is only passed through.
// It accepts exactly the JSON that encoding/json accepts (RFC 8259: no
// comments, no trailing commas, control characters escaped in strings),
// and unquotes strings as encoding/json does (an unpaired surrogate
// escape or an invalid UTF-8 byte becomes U+FFFD). It holds nothing
// between calls; every result is a sub-slice of the caller's input.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting, as encoding/json does (it refuses 10,000
// levels), so a hostile line cannot exhaust the stack.
const maxJSONDepth = 10000

// jsonSyntaxError is a syntax error at byte Off (0-based) of the scanned
// value.
type jsonSyntaxError struct {
	Off int
	Msg string
}

func (e *jsonSyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Off+1) }

func synErr(b []byte, i int, what string) error {
	if i >= len(b) {
		return &jsonSyntaxError{Off: len(b), Msg: "unexpected end of JSON input"}
	}
	return &jsonSyntaxError{Off: i, Msg: fmt.Sprintf("invalid character %s %s", quoteChar(b[i]), what)}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// scanValue validates the JSON value starting at b[i] (no leading
// whitespace) and returns the offset just after it.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, synErr(b, i, "")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		if depth >= maxJSONDepth {
			return i, &jsonSyntaxError{Off: i, Msg: "exceeded max depth"}
		}
		return scanObject(b, i, depth+1, nil)
	case c == '[':
		if depth >= maxJSONDepth {
			return i, &jsonSyntaxError{Off: i, Msg: "exceeded max depth"}
		}
		return scanArray(b, i, depth+1, nil)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	}
	return i, synErr(b, i, "looking for beginning of value")
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, synErr(b, i+k, "in literal "+lit+" (expecting "+quoteChar(lit[k])+")")
		}
	}
	return i + len(lit), nil
}

func jsDigit(c byte) bool { return c >= '0' && c <= '9' }

func scanNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
		if i >= len(b) || !jsDigit(b[i]) {
			return i, synErr(b, i, "in numeric literal")
		}
	}
	if b[i] == '0' {
		i++
	} else {
		for i < len(b) && jsDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !jsDigit(b[i]) {
			return i, synErr(b, i, "after decimal point in numeric literal")
		}
		for i < len(b) && jsDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !jsDigit(b[i]) {
			return i, synErr(b, i, "in exponent of numeric literal")
		}
		for i < len(b) && jsDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether none of the 8 bytes of x is a control character,
// a quote, a backslash or outside ASCII.
func plain8(x uint64) bool { return notPlain(x) == 0 }

// notPlain is non-zero when one of the 8 bytes of x is not plain (see
// plain8).
func notPlain(x uint64) uint64 {
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	less20 := (x - ones*0x20) &^ x & highs
	return (x & highs) | less20 | zero(x^(ones*'"')) | zero(x^(ones*'\\'))
}

func isHex(c byte) bool { return jsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// scanString validates the string starting at b[i] == '"' and returns the
// offset after its closing quote and whether its contents need unquoting
// (an escape, or a byte outside ASCII that may be invalid UTF-8).
func scanString(b []byte, i int) (end int, slow bool, err error) {
	i++
	for i < len(b) {
		// Plain bytes (printable ASCII, no quote or backslash) sixteen,
		// then eight at a time.
		for i+16 <= len(b) && notPlain(binary.LittleEndian.Uint64(b[i:]))|notPlain(binary.LittleEndian.Uint64(b[i+8:])) == 0 {
			i += 16
		}
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, slow, nil
		case c == '\\':
			slow = true
			i++
			if i >= len(b) {
				return i, slow, synErr(b, i, "")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(b) || !isHex(b[i]) {
						return i, slow, synErr(b, i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, slow, synErr(b, i, "in string escape code")
			}
		case c < 0x20:
			return i, slow, synErr(b, i, "in string literal")
		case c >= utf8.RuneSelf:
			slow = true
			i++
		default:
			i++
		}
	}
	return i, slow, synErr(b, i, "")
}

// scanObject validates the object starting at b[i] == '{'; fn, when not
// nil, gets each member in order: the key's raw contents (between its
// quotes), whether the key needs unquoting, and the value's raw bytes.
func scanObject(b []byte, i, depth int, fn func(key []byte, slow bool, v []byte, vslow bool) error) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, synErr(b, i, "looking for beginning of object key string")
		}
		kend, kslow, err := scanString(b, i)
		if err != nil {
			return kend, err
		}
		key := b[i+1 : kend-1]
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, synErr(b, i, "after object key")
		}
		i = skipWS(b, i+1)
		vstart := i
		vslow := false
		if i < len(b) && b[i] == '"' {
			i, vslow, err = scanString(b, i)
		} else {
			i, err = scanValue(b, i, depth)
		}
		if err != nil {
			return i, err
		}
		if fn != nil {
			if err := fn(key, kslow, b[vstart:i], vslow); err != nil {
				return i, err
			}
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return i, synErr(b, i, "after object key:value pair")
	}
}

// scanArray validates the array starting at b[i] == '['; fn, when not
// nil, gets each element's raw bytes in order.
func scanArray(b []byte, i, depth int, fn func(v []byte) error) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		vstart := i
		var err error
		if i, err = scanValue(b, i, depth); err != nil {
			return i, err
		}
		if fn != nil {
			if err := fn(b[vstart:i]); err != nil {
				return i, err
			}
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, synErr(b, i, "after array element")
	}
}

// ErrNotObject and ErrNotArray are what a value of the wrong kind gives.
var (
	ErrNotObject = errors.New("not a JSON object")
	ErrNotArray  = errors.New("not a JSON array")
)

// Members calls fn for each member of the JSON object raw (surrounding
// whitespace allowed), in order, validating as it goes; raw must be
// exactly one JSON object. A repeated key is passed each time. On a
// syntax error fn may have seen the members before it.
func Members(raw []byte, fn func(key []byte, slow bool, v []byte) error) error {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ErrNotObject
	}
	end, err := scanObject(raw, i, 1, func(key []byte, slow bool, v []byte, _ bool) error { return fn(key, slow, v) })
	if err != nil {
		return err
	}
	if j := skipWS(raw, end); j < len(raw) {
		return synErr(raw, j, "after top-level value")
	}
	return nil
}

// MembersQuoted is Members that also says, for a member whose value is a
// string, whether the string needs unquoting (valueSlow: an escape or a
// byte outside ASCII), as the scan found out anyway: a string that does
// not is its raw bytes between the quotes, with no second pass over it.
// valueSlow is false for a value of any other kind.
func MembersQuoted(raw []byte, fn func(key []byte, keySlow bool, v []byte, valueSlow bool) error) error {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ErrNotObject
	}
	end, err := scanObject(raw, i, 1, fn)
	if err != nil {
		return err
	}
	if j := skipWS(raw, end); j < len(raw) {
		return synErr(raw, j, "after top-level value")
	}
	return nil
}

// Elems calls fn for each element of the JSON array raw, validating as it
// goes; raw must be exactly one JSON array.
func Elems(raw []byte, fn func(v []byte) error) error {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return ErrNotArray
	}
	end, err := scanArray(raw, i, 1, fn)
	if err != nil {
		return err
	}
	if j := skipWS(raw, end); j < len(raw) {
		return synErr(raw, j, "after array")
	}
	return nil
}

// Valid reports whether raw is exactly one valid JSON value.
func Valid(raw []byte) error {
	i := skipWS(raw, 0)
	end, err := scanValue(raw, i, 0)
	if err != nil {
		return err
	}
	if j := skipWS(raw, end); j < len(raw) {
		return synErr(raw, j, "after top-level value")
	}
	return nil
}

// AppendUnquoted appends the decoded contents of a JSON string (s: the
// bytes between the quotes, already validated by scanString) to dst, as
// encoding/json decodes them.
func AppendUnquoted(dst, s []byte) []byte {
	for r := 0; r < len(s); {
		// A run up to the next escape, copied whole when it is valid UTF-8.
		if e := bytes.IndexByte(s[r:], '\\'); e != 0 {
			if e < 0 {
				e = len(s) - r
			}
			if run := s[r : r+e]; utf8.Valid(run) {
				dst = append(dst, run...)
				r += e
				continue
			}
		}
		c := s[r]
		switch {
		case c == '\\':
			r++
			switch s[r] {
			case '"', '\\', '/', '\'':
				dst = append(dst, s[r])
				r++
			case 'b':
				dst = append(dst, '\b')
				r++
			case 'f':
				dst = append(dst, '\f')
				r++
			case 'n':
				dst = append(dst, '\n')
				r++
			case 'r':
				dst = append(dst, '\r')
				r++
			case 't':
				dst = append(dst, '\t')
				r++
			case 'u':
				rr := getu4(s[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						dst = utf8.AppendRune(dst, dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			dst = utf8.AppendRune(dst, rr) // RuneError for an invalid byte
		}
	}
	return dst
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// Contents returns the decoded contents of the JSON string value v
// (already validated, quotes included): v's own bytes when it holds no
// escape or non-ASCII byte, else the decoding appended to scratch.
func Contents(v, scratch []byte) (s, grown []byte) {
	in := v[1 : len(v)-1]
	if plainRun(in) < len(in) {
		out := AppendUnquoted(scratch[:0], in)
		return out, out
	}
	return in, scratch
}

// plainRun is the length of the prefix of s with no backslash and no byte
// outside ASCII, tested eight bytes at a time (the long texts of a JSONL
// row are mostly such bytes).
func plainRun(s []byte) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		bs := x ^ (ones * '\\')
		if (x&highs)|((bs-ones)&^bs&highs) != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// String decodes the JSON value v as a string; ok is false when v is
// not a JSON string.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	s, _ := Contents(v, nil)
	return string(s), true
}

// Key is the decoded key.
func Key(key []byte, slow bool) string {
	if !slow {
		return string(key)
	}
	return string(AppendUnquoted(nil, key))
}
