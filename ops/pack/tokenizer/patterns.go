package tokenizer

import (
	"fmt"

	"github.com/dlclark/regexp2"
)

// Split patterns, exactly as tiktoken and the tokenizer.json files spell them.
const (
	PatternCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	PatternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	PatternO200K  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternGPT2 is the split of ByteLevel pre-tokenizers with use_regex=true.
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitter cuts text into pre-tokenised pieces, calling fn with each one in
// order; the pieces tile the text.
type splitter interface {
	split(s string, fn func(piece string))
	name() string
}

type cl100kSplitter struct{ maxDigits int }

func (c cl100kSplitter) split(s string, fn func(string)) {
	for i := 0; i < len(s); {
		e := nextCL100K(s, i, c.maxDigits)
		fn(s[i:e])
		i = e
	}
}

func (c cl100kSplitter) name() string {
	if c.maxDigits == 1 {
		return "qwen2-scanner"
	}
	return "cl100k-scanner"
}

type o200kSplitter struct{}

func (o200kSplitter) split(s string, fn func(string)) {
	for i := 0; i < len(s); {
		e := nextO200K(s, i)
		fn(s[i:e])
		i = e
	}
}

func (o200kSplitter) name() string { return "o200k-scanner" }

// regexSplitter runs an arbitrary split pattern with regexp2 (the backtracking
// engine tiktoken-go uses). It is the exact but slow fallback for
// tokenizer.json files whose pattern has no hand-written scanner. Text between
// matches becomes a piece of its own, as in a Hugging Face Split with the
// Isolated behaviour.
type regexSplitter struct {
	re *regexp2.Regexp
}

func (r regexSplitter) name() string { return "regexp2:" + r.re.String() }

func (r regexSplitter) split(s string, fn func(string)) {
	// regexp2 reports rune offsets; map them back to byte offsets.
	runeByte := make([]int, 0, len(s)+1)
	for i := range s {
		runeByte = append(runeByte, i)
	}
	runeByte = append(runeByte, len(s))
	prev := 0
	m, err := r.re.FindStringMatch(s)
	for err == nil && m != nil {
		b, e := runeByte[m.Index], runeByte[m.Index+m.Length]
		if b > prev {
			fn(s[prev:b])
		}
		if e > b {
			fn(s[b:e])
		}
		prev = e
		m, err = r.re.FindNextMatch(m)
	}
	if prev < len(s) {
		fn(s[prev:])
	}
}

// splitterFor picks the hand-written scanner when the pattern is one of the
// known ones and the regexp2 fallback otherwise.
func splitterFor(pattern string) (splitter, error) {
	switch pattern {
	case PatternCL100K:
		return cl100kSplitter{maxDigits: 3}, nil
	case PatternQwen2:
		return cl100kSplitter{maxDigits: 1}, nil
	case PatternO200K:
		return o200kSplitter{}, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%w: split pattern %q: %v", ErrTokenizer, pattern, err)
	}
	return regexSplitter{re: re}, nil
}
