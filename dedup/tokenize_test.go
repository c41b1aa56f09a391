package dedup

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTokenizeMatchesReference: Tokenize (plain-path runs copied whole)
// gives the reference's Buf, Start and source offsets for every option
// set, on synthetic prose and on generated code with comments, strings,
// Verilog literals, tabs, newlines and runs of spaces.
func TestTokenizeMatchesReference(t *testing.T) {
	syn := NewSynth(SynthConfig{N: 100, DocWords: 150, Vocab: 300, DupFrac: 0.3, EditsMin: 1, EditsMax: 3, Seed: 11})
	texts := []string{"", " ", "a", " a ", "a  b", "a\tb\nc", "x<=y;", "8'hFF + 4'sb1010", "module m; // c\nendmodule",
		"def f():\n    '''doc'''\n    return \"s\" # c", "/* c */ int x = 1; `define W 8", "a b c d e f g h i j k l m n"}
	for i := range 100 {
		texts = append(texts, syn.Text(i))
	}
	r := rand.New(rand.NewPCG(8, 9))
	pieces := []string{"word", "x1", "_id", "$v", " ", "  ", "\t", "\n", "(", ")", ";", "<=", "//c\n", "/*c*/", "#c\n", "\"s\"", "'q'",
		"8'hFF", "'b01", "`define", "é", "=", "0x1F", "'''d'''", "\r\n"}
	for range 400 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	var got, want Tokens
	for _, lang := range []Lang{LangAuto, LangVerilog, LangC, LangPython, LangText} {
		for _, o := range []TokenizeOptions{{}, {StripComments: true}, {Lowercase: true}, {SrcOffsets: true}, {StripComments: true, Lowercase: true, SrcOffsets: true}} {
			o.Lang = lang
			for _, text := range texts {
				Tokenize(text, o, &got)
				refTokenize(text, o, &want)
				if string(got.Buf) != string(want.Buf) || !slices.Equal(got.Start, want.Start) ||
					!slices.Equal(got.SrcStart, want.SrcStart) || !slices.Equal(got.SrcEnd, want.SrcEnd) {
					t.Fatalf("%+v on %.60q:\n got %q %v\nwant %q %v", o, text, got.Buf, got.Start, want.Buf, want.Start)
				}
			}
		}
	}
}

// refTokenize is Tokenize before its plain path copied runs whole.
func refTokenize(text string, opts TokenizeOptions, t *Tokens) {
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
	i := 0
	for i < n {
		c := text[i]
		if spaceByte[c] {
			i++
			continue
		}
		start := i
		if wordByte[c] {
			i++
			for i < n && wordByte[text[i]] {
				i++
			}
			// Verilog sized literal: 8'hFF, 4'sb1010.
			if i < n && text[i] == '\'' && isDigit(c) {
				if decide(); lang == langVerilog {
					i = verilogLiteralEnd(text, i)
				}
			}
			if plain {
				// Hot path (most tokens): append inline, no flags to honour.
				if len(t.Buf) > 0 {
					t.Buf = append(t.Buf, ' ')
				}
				t.Start = append(t.Start, int32(len(t.Buf)))
				t.Buf = append(t.Buf, text[start:i]...)
				continue
			}
			t.add(text, start, i, opts.Lowercase, opts.SrcOffsets)
			continue
		}
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
}

// TestNonWord8: the eight-byte word test agrees with wordByte for every
// byte value in every position.
func TestNonWord8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := range 8 {
			x := uint64(0x6161616161616161) // "aaaaaaaa"
			x = x&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
			got := nonWord8(x)>>(8*pos+7)&1 == 1
			if got != !wordByte[c] {
				t.Fatalf("byte %#x at %d: non-word %v, wordByte %v", c, pos, got, wordByte[c])
			}
			if rest := nonWord8(x) &^ (0x80 << (8 * pos)); rest != 0 {
				t.Fatalf("byte %#x at %d: other bytes flagged (%#x)", c, pos, rest)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		x := r.Uint64()
		nw := nonWord8(x)
		for pos := range 8 {
			if got := nw>>(8*pos+7)&1 == 1; got != !wordByte[byte(x>>(8*pos))] {
				t.Fatalf("%#x byte %d: non-word %v", x, pos, got)
			}
		}
		if nw&^0x8080808080808080 != 0 {
			t.Fatalf("%#x: low bits set in %#x", x, nw)
		}
	}
}
