// Package dedup removes exact and near-duplicate documents from a corpus:
// code-aware normalisation, exact dedup on the normalised text, shingling,
// one-permutation MinHash, LSH banding (in memory with ekzhu/minhash-lsh or
// through disk-backed sorted band-key runs), verification, union-find
// clustering and a documented survivor priority.
package dedup

import (
	"math/bits"
	"strings"
)

// Lang selects the comment syntax the normaliser strips.
type Lang string

// Languages understood by the tokeniser. LangAuto guesses per document.
const (
	LangAuto    Lang = "auto"
	LangVerilog Lang = "verilog"
	LangC       Lang = "c" // C, C++, CUDA
	LangPython  Lang = "python"
	LangText    Lang = "text" // no comment syntax
)

// ParseLang validates a language name.
func ParseLang(s string) (Lang, bool) {
	switch Lang(s) {
	case LangAuto, LangVerilog, LangC, LangPython, LangText:
		return Lang(s), true
	case "":
		return LangAuto, true
	case "cpp", "c++", "cuda":
		return LangC, true
	case "systemverilog", "sv":
		return LangVerilog, true
	}
	return "", false
}

// DetectLang guesses the language of a document from markers in its first
// KiB and last 256 bytes (bounded cost per document). It is a heuristic: it
// only decides which comment syntax to strip, so a wrong guess costs a little
// dedup accuracy, never correctness of the output.
func DetectLang(text string) Lang {
	head, tail := text, ""
	if len(head) > 1024 {
		head = text[:1024]
		tail = text[max(1024, len(text)-256):]
	}
	switch {
	case strings.Contains(head, "module") || strings.Contains(tail, "endmodule"):
		return LangVerilog
	case strings.Contains(head, "def ") || strings.Contains(head, "import ") || strings.Contains(head, "self."):
		return LangPython
	case strings.Contains(head, "//") || strings.Contains(head, "/*") || strings.Contains(head, "#include") ||
		strings.Contains(head, "__global__"):
		return LangC
	}
	return LangText
}

// TokenizeOptions configures the code-aware tokeniser.
type TokenizeOptions struct {
	Lang          Lang // comment syntax; LangAuto detects per document
	StripComments bool // drop comments of the detected language
	Lowercase     bool // fold ASCII case (useful for prose; off keeps identifiers exact)
	SrcOffsets    bool // record each token's offsets in the original text (Tokens.SrcStart/SrcEnd)
}

// Tokens is the normalised form of a document: the tokens joined by single
// spaces in Buf, with Start/End byte offsets of each token in Buf and Src
// offsets of each token in the original text (for reporting spans).
type Tokens struct {
	Buf      []byte
	Start    []int32
	SrcStart []int32
	SrcEnd   []int32
}

// Reset empties t keeping its capacity.
func (t *Tokens) Reset() {
	t.Buf = t.Buf[:0]
	t.Start = t.Start[:0]
	t.SrcStart = t.SrcStart[:0]
	t.SrcEnd = t.SrcEnd[:0]
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.Start) }

// End is the end offset of token i in Buf (tokens are separated by one space).
func (t *Tokens) End(i int) int {
	if i+1 < len(t.Start) {
		return int(t.Start[i+1]) - 1
	}
	return len(t.Buf)
}

// Token returns token i of the normalised buffer.
func (t *Tokens) Token(i int) []byte { return t.Buf[t.Start[i]:t.End(i)] }

// Normalized returns the normalised text (tokens separated by one space).
func (t *Tokens) Normalized() []byte { return t.Buf }

// byteClass tables keep the per-byte loop branch-light.
var wordByte, spaceByte, langByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		wordByte[c] = c == '_' || c == '$' || c >= 0x80 ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		langByte[c] = c == '/' || c == '#' || c == '\'' || c == '"' || c == '`'
		spaceByte[c] = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
	}
}

func isWordByte(c byte) bool { return wordByte[c] }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Tokenize splits text into code-aware tokens, appending to t (after Reset).
// Whitespace is dropped; comments are dropped when opts.StripComments;
// identifiers, numbers (including Verilog sized literals such as 8'hFF) and
// string literals are single tokens; every other byte is a one-byte token, so
// "a<=b" and "a <= b" normalise identically.
func Tokenize(text string, opts TokenizeOptions, t *Tokens) {
	t.Reset()
	// Small integer codes: comparing Lang strings per byte is measurable.
	const (
		langUndecided = iota
		langText
		langVerilog
		langC
		langPython
	)
	code := func(l Lang) int {
		switch l {
		case LangVerilog:
			return langVerilog
		case LangC:
			return langC
		case LangPython:
			return langPython
		case LangText:
			return langText
		}
		return langUndecided
	}
	// Language detection is lazy: only comment, quote and backtick bytes
	// depend on it, so plain prose never pays for DetectLang.
	lang := code(opts.Lang)
	decide := func() {
		if lang == langUndecided {
			lang = code(DetectLang(text))
		}
	}
	n := len(text)
	if cap(t.Buf) < n+n/4 {
		t.Buf = make([]byte, 0, n+n/4)
	}
	plain := !opts.Lowercase && !opts.SrcOffsets
	// On the plain path, words separated by one space are copied to Buf as
	// one run of text (text[runFrom:runTo] is owed to Buf): copying token by
	// token, with the separator appended between, was most of Tokenize's
	// time on prose and code. flush pays the debt before anything else
	// appends to Buf.
	runFrom, runTo := 0, 0
	flush := func() {
		if runTo > runFrom {
			t.Buf = append(t.Buf, text[runFrom:runTo]...)
			runFrom, runTo = 0, 0
		}
	}
	i := 0
	for i < n {
		c := text[i]
		if spaceByte[c] {
			i++
			continue
		}
		start := i
		if wordByte[c] {
			i = wordEnd(text, i+1)
			// Verilog sized literal: 8'hFF, 4'sb1010.
			if i < n && text[i] == '\'' && isDigit(c) {
				if decide(); lang == langVerilog {
					i = verilogLiteralEnd(text, i)
				}
			}
			if plain {
				// Hot path (most tokens): no flags to honour. A word one
				// space after the run's end extends the run (its separator
				// is that space); any other starts a new one.
				if runTo > runFrom && start == runTo+1 && text[runTo] == ' ' {
					t.Start = append(t.Start, int32(len(t.Buf)+start-runFrom))
					runTo = i
					continue
				}
				flush()
				if len(t.Buf) > 0 {
					t.Buf = append(t.Buf, ' ')
				}
				t.Start = append(t.Start, int32(len(t.Buf)))
				runFrom, runTo = start, i
				continue
			}
			t.add(text, start, i, opts.Lowercase, opts.SrcOffsets)
			continue
		}
		flush()
		if !langByte[c] {
			i++
			t.add(text, start, i, opts.Lowercase, opts.SrcOffsets)
			continue
		}
		decide()
		cComments := opts.StripComments && (lang == langC || lang == langVerilog)
		switch {
		case c == '/' && cComments && i+1 < n && text[i+1] == '/':
			for i < n && text[i] != '\n' {
				i++
			}
			continue
		case c == '/' && cComments && i+1 < n && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				i = n
			} else {
				i += 2 + end + 2
			}
			continue
		case c == '#' && opts.StripComments && lang == langPython:
			for i < n && text[i] != '\n' {
				i++
			}
			continue
		case c == '\'' && lang == langVerilog && i+1 < n && isBaseChar(text[i+1]):
			i = verilogLiteralEnd(text, i)
		case c == '"' || (c == '\'' && (lang == langPython || lang == langC)):
			i = stringEnd(text, i, lang == langPython)
			// A Python docstring (a triple-quoted string alone at the start
			// of a line) is documentation, stripped like a comment.
			if opts.StripComments && lang == langPython && i-start >= 6 && strings.HasPrefix(text[start:], string([]byte{c, c, c})) &&
				lineStart(text, start) {
				continue
			}
		case c == '`' && lang == langVerilog:
			i++
			for i < n && wordByte[text[i]] {
				i++
			}
		default:
			i++
		}
		t.add(text, start, i, opts.Lowercase, opts.SrcOffsets)
	}
	flush()
}

// lineStart reports whether only spaces or tabs precede position i on its line.
func lineStart(text string, i int) bool {
	for i > 0 {
		i--
		switch text[i] {
		case ' ', '\t':
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func isBaseChar(c byte) bool {
	switch c {
	case 'b', 'B', 'o', 'O', 'd', 'D', 'h', 'H', 's', 'S':
		return true
	}
	return false
}

// verilogLiteralEnd scans a based literal starting at the quote.
func verilogLiteralEnd(text string, i int) int {
	n := len(text)
	i++ // quote
	if i < n && (text[i] == 's' || text[i] == 'S') {
		i++
	}
	if i < n && isBaseChar(text[i]) {
		i++
	}
	for i < n && (isWordByte(text[i]) || text[i] == '?') {
		i++
	}
	return i
}

// stringEnd returns the index after the string literal starting at i.
// Python triple quotes are honoured; an unterminated string ends at EOL.
func stringEnd(text string, i int, python bool) int {
	n := len(text)
	q := text[i]
	if python && i+2 < n && text[i+1] == q && text[i+2] == q {
		end := strings.Index(text[i+3:], text[i:i+3])
		if end < 0 {
			return n
		}
		return i + 3 + end + 3
	}
	i++
	for i < n {
		switch text[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		case '\n':
			return i
		}
		i++
	}
	if i > n {
		i = n
	}
	return i
}

func (t *Tokens) add(text string, start, end int, lower, src bool) {
	if len(t.Buf) > 0 {
		t.Buf = append(t.Buf, ' ')
	}
	bs := len(t.Buf)
	t.Buf = append(t.Buf, text[start:end]...)
	if lower {
		b := t.Buf[bs:]
		for k, c := range b {
			if c >= 'A' && c <= 'Z' {
				b[k] = c + 32
			}
		}
	}
	t.Start = append(t.Start, int32(bs))
	if src {
		t.SrcStart = append(t.SrcStart, int32(start))
		t.SrcEnd = append(t.SrcEnd, int32(end))
	}
}

// wordEnd returns the index of the first byte at or after i that is not a
// word byte (len(text) if none). Eight bytes at a time: a byte loop's exit
// at every word's end mispredicted, and was a third of Tokenize's time.
func wordEnd(text string, i int) int {
	n := len(text)
	for i+8 <= n {
		if nw := nonWord8(load64(text, i)); nw != 0 {
			return i + bits.TrailingZeros64(nw)>>3
		}
		i += 8
	}
	for i < n && wordByte[text[i]] {
		i++
	}
	return i
}

// load64 is the little-endian 64-bit word at text[i:i+8] (the compiler
// merges the loads).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nonWord8 has the high bit of each byte of x that is not a word byte (see
// wordByte: letters, digits, '_', '$' and every byte >= 0x80) set and all
// other bits clear. Per byte y (its low seven bits), y + (0x80-c) sets the
// high bit exactly when y >= c, without a carry into the next byte.
func nonWord8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	y := x &^ highs
	ge := func(c uint64) uint64 { return (y + ones*(0x80-c)) & highs }
	word := x&highs | // UTF-8 bytes
		ge('a')&^ge('z'+1) | ge('A')&^ge('Z'+1) | ge('0')&^ge('9'+1) |
		ge('_')&^ge('_'+1) | ge('$')&^ge('$'+1)
	return ^word & highs
}
