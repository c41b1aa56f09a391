package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenisers below are hand-written scanners equivalent to the split
// regexes of cl100k_base, o200k_base and Qwen2/Qwen3 (the pattern strings are
// in patterns.go). A backtracking regex engine tries the alternatives left to
// right at each position and takes the first that matches; every scanner
// function below replays exactly that order, including the backtracking of
// optional prefixes and greedy runs, so the pieces are identical (checked
// against regexp2 on random and adversarial text in pretok_test.go). They
// return the end of the piece starting at i; every position starts a match
// (each character is a letter, a number, whitespace or "other"), so pieces
// tile the text.

// ASCII class bits.
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cS                 // \s
	cUpper             // \p{Lu}
	cLower             // \p{Ll}
)

var asciiClass = func() (t [128]uint8) {
	for c := 0; c < 128; c++ {
		r := rune(c)
		if unicode.IsLetter(r) {
			t[c] |= cL
		}
		if unicode.IsUpper(r) {
			t[c] |= cUpper
		}
		if unicode.IsLower(r) {
			t[c] |= cLower
		}
		if unicode.IsNumber(r) {
			t[c] |= cN
		}
		if unicode.IsSpace(r) {
			t[c] |= cS
		}
	}
	return t
}()

// at decodes the rune at i; at the end of s it returns (-1, 0).
func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isL(r rune) bool {
	if r < 0 {
		return false
	}
	if r < utf8.RuneSelf {
		return asciiClass[r]&cL != 0
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < 0 {
		return false
	}
	if r < utf8.RuneSelf {
		return asciiClass[r]&cN != 0
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < 0 {
		return false
	}
	if r < utf8.RuneSelf {
		return asciiClass[r]&cS != 0
	}
	return unicode.IsSpace(r)
}

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return r >= 0 && !isS(r) && !isL(r) && !isN(r) }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(r rune) bool { return r >= 0 && r != '\r' && r != '\n' && !isL(r) && !isN(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k).
func isUpperish(r rune) bool {
	if r < 0 {
		return false
	}
	if r < utf8.RuneSelf {
		return asciiClass[r]&cUpper != 0
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k).
func isLowerish(r rune) bool {
	if r < 0 {
		return false
	}
	if r < utf8.RuneSelf {
		return asciiClass[r]&cLower != 0
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its byte
// length, 0 if none. Case folding is ASCII-only, as in regexp2 and tiktoken-go.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	c := s[i+1] | 0x20
	switch c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// whitespaceTail handles the three whitespace alternatives shared by all
// patterns, at a position holding whitespace:
//
//	\s*[\r\n]+  -> up to and including the last CR/LF of the whitespace run
//	\s+(?!\S)   -> the run, minus its last character unless the run ends the text
//	\s+         -> the whole run
func whitespaceTail(s string, i int) int {
	j, lastNL, lastStart, count := i, -1, i, 0
	for j < len(s) {
		r, w := at(s, j)
		if !isS(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j
		}
		lastStart = j
		j += w
		count++
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	if j == len(s) || count == 1 {
		return j
	}
	return lastStart
}

// scanLetters returns the end of the \p{L}+ run starting at i.
func scanLetters(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClass[c]&cL == 0 {
				return i
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) {
			return i
		}
		i += w
	}
	return i
}

// nextCL100K is the scanner for cl100k_base (maxDigits 3) and for the
// Qwen2/Qwen3 pattern (maxDigits 1), which differs only in \p{N} vs \p{N}{1,3}:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextCL100K(s string, i, maxDigits int) int {
	c := s[i]
	// ASCII fast paths for the common cases; they agree with the general code.
	if c < utf8.RuneSelf {
		cls := asciiClass[c]
		if cls&cL != 0 {
			return scanLetters(s, i+1)
		}
		if c == ' ' && i+1 < len(s) && s[i+1] < utf8.RuneSelf && asciiClass[s[i+1]]&cL != 0 {
			return scanLetters(s, i+2)
		}
	}
	r, w := at(s, i)
	if r == '\'' {
		if n := contraction(s, i); n > 0 {
			return i + n
		}
	}
	if isL(r) {
		return scanLetters(s, i+w)
	}
	if isPrefix(r) {
		if r2, w2 := at(s, i+w); isL(r2) {
			return scanLetters(s, i+w+w2)
		}
	}
	if isN(r) {
		j := i + w
		for k := 1; k < maxDigits; k++ {
			r2, w2 := at(s, j)
			if !isN(r2) {
				break
			}
			j += w2
		}
		return j
	}
	if e := punctRun(s, i, r, w, false); e > 0 {
		return e
	}
	return whitespaceTail(s, i)
}

// punctRun matches ` ?[^\s\p{L}\p{N}]+[\r\n]*` (slash also allowed in the
// tail for o200k) at i, returning 0 when it does not match.
func punctRun(s string, i int, r rune, w int, slashTail bool) int {
	j := i
	if r == ' ' {
		if r2, _ := at(s, i+1); isOther(r2) {
			j = i + 1
		} else {
			return 0
		}
	} else if !isOther(r) {
		return 0
	}
	for j < len(s) {
		r2, w2 := at(s, j)
		if !isOther(r2) {
			break
		}
		j += w2
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slashTail && s[j] == '/')) {
		j++
	}
	return j
}

// nextO200K is the scanner for o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextO200K(s string, i int) int {
	if e := o200kASCIIWord(s, i); e > 0 {
		return e
	}
	r, w := at(s, i)
	pre := isPrefix(r)
	if pre {
		if e := o200kCamel(s, i+w); e >= 0 {
			return e
		}
	}
	if e := o200kCamel(s, i); e >= 0 {
		return e
	}
	if pre {
		if e := o200kUpper(s, i+w); e >= 0 {
			return e
		}
	}
	if e := o200kUpper(s, i); e >= 0 {
		return e
	}
	if isN(r) {
		j := i + w
		for k := 1; k < 3; k++ {
			r2, w2 := at(s, j)
			if !isN(r2) {
				break
			}
			j += w2
		}
		return j
	}
	if e := punctRun(s, i, r, w, true); e > 0 {
		return e
	}
	return whitespaceTail(s, i)
}

// o200kCamel matches U*W+ contraction? at a (U = upper-ish, W = lower-ish),
// returning -1 when it does not match. The greedy U* backs off one character
// at a time until W+ can start; characters in both classes (Lm, Lo, M) let it
// start inside the U run.
func o200kCamel(s string, a int) int {
	j, lastBoth := a, -1
	for {
		r, w := at(s, j)
		if !isUpperish(r) {
			break
		}
		if isLowerish(r) {
			lastBoth = j
		}
		j += w
	}
	var e int
	if r, _ := at(s, j); isLowerish(r) {
		e = lowerRun(s, j)
	} else if lastBoth >= 0 {
		_, w := at(s, lastBoth)
		e = lastBoth + w
	} else {
		return -1
	}
	return e + contraction(s, e)
}

// o200kUpper matches U+W* contraction? at a, -1 when it does not match.
func o200kUpper(s string, a int) int {
	j := a
	for {
		r, w := at(s, j)
		if !isUpperish(r) {
			break
		}
		j += w
	}
	if j == a {
		return -1
	}
	e := lowerRun(s, j)
	return e + contraction(s, e)
}

func lowerRun(s string, j int) int {
	for {
		r, w := at(s, j)
		if !isLowerish(r) {
			return j
		}
		j += w
	}
}

// o200kASCIIWord is the fast path of nextO200K for an ASCII word, optionally
// after one ASCII space or punctuation prefix: then both letter
// alternatives reduce to prefix? [A-Z]* [a-z]* contraction?. It returns 0
// whenever a non-ASCII character could change the answer, and the general
// code decides.
func o200kASCIIWord(s string, i int) int {
	j := i
	c := s[i]
	if c >= utf8.RuneSelf {
		return 0
	}
	if asciiClass[c]&cL == 0 {
		// a one-character prefix: anything but CR, LF, letters and digits
		if c == '\r' || c == '\n' || asciiClass[c]&cN != 0 || i+1 >= len(s) {
			return 0
		}
		if n := s[i+1]; n >= utf8.RuneSelf || asciiClass[n]&cL == 0 {
			return 0
		}
		j = i + 1
	}
	for j < len(s) && s[j] < utf8.RuneSelf && asciiClass[s[j]]&cUpper != 0 {
		j++
	}
	for j < len(s) && s[j] < utf8.RuneSelf && asciiClass[s[j]]&cLower != 0 {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		return 0
	}
	return j + contraction(s, j)
}
