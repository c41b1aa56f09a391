package dedup

import (
	"encoding/binary"
	"unsafe"

	"github.com/crucible-data/crucible/internal/jsonscan"
)

// jsonString decodes the JSON value v (validated by the scanner) as a
// string, exactly as jsonscan.String does, with one allocation and a
// faster loop (see appendUnquoted). ok is false when v is not a JSON
// string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	buf := appendUnquoted(make([]byte, 0, len(v)-2), v[1:len(v)-1])
	if len(buf) == 0 {
		return "", true
	}
	// buf is this call's own and never written again: it can be the string.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), true
}

// jsonContents is jsonscan.Contents (the decoded contents of the
// validated JSON string v, quotes included) through appendUnquoted: into
// scratch, grown as needed, returned for reuse.
func jsonContents(v, scratch []byte) (s, grown []byte) {
	if cap(scratch) < len(v) {
		scratch = make([]byte, 0, len(v)+len(v)/4)
	}
	out := appendUnquoted(scratch[:0], v[1:len(v)-1])
	return out, out
}

// plainCopy8 reports whether none of the 8 bytes of x is a backslash or
// outside ASCII: bytes that decode to themselves.
func plainCopy8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	b := x ^ (ones * '\\')
	return (x&highs)|((b-ones)&^b&highs) == 0
}

// appendUnquoted appends the decoded contents of a JSON string (between
// its quotes) to dst, with jsonscan.AppendUnquoted's result. Why not just
// call that: it copies each run between escapes with its own IndexByte,
// utf8.Valid and append calls, and in text with a \n escape every line
// (source code, prose) the calls' overhead made unquoting the text field
// cost more than validating the whole row. Here plain bytes go 8 at a
// time and the one-character escapes inline; at the first \u escape,
// non-ASCII byte or anything unusual the rest goes to
// jsonscan.AppendUnquoted, which decodes from any character boundary.
func appendUnquoted(dst, in []byte) []byte {
	n0 := len(dst)
	if cap(dst)-n0 < len(in) {
		dst = append(dst, make([]byte, len(in))...)[:n0]
	}
	// Decoding never lengthens what it handles here, so the output stays
	// within len(in) bytes of n0.
	buf := dst[n0 : n0+len(in)]
	n, i := 0, 0
	for i < len(in) {
		for i+8 <= len(in) {
			x := binary.LittleEndian.Uint64(in[i:])
			if !plainCopy8(x) {
				break
			}
			binary.LittleEndian.PutUint64(buf[n:], x)
			i, n = i+8, n+8
		}
		if i >= len(in) {
			break
		}
		c := in[i]
		if c >= 0x80 {
			return jsonscan.AppendUnquoted(dst[:n0+n], in[i:])
		}
		if c != '\\' {
			buf[n] = c
			i, n = i+1, n+1
			continue
		}
		if i+1 >= len(in) {
			return jsonscan.AppendUnquoted(dst[:n0+n], in[i:])
		}
		switch in[i+1] {
		case '"', '\\', '/':
			c = in[i+1]
		case 'n':
			c = '\n'
		case 't':
			c = '\t'
		case 'r':
			c = '\r'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		default: // \u and the rest
			return jsonscan.AppendUnquoted(dst[:n0+n], in[i:])
		}
		buf[n] = c
		i, n = i+2, n+1
	}
	return dst[:n0+n]
}
