// Package decontam finds training-corpus items that overlap benchmark items:
// long token n-gram overlap (13-grams by default, as in GPT-3 and NeMo
// Curator's former TaskDecontamination) on two channels — lexical tokens and
// a structural channel where identifiers become one placeholder, so renamed
// signals and variables still match — plus MinHash similarity over
// structural shingles. It reports matched spans, overlap ratio and score, in
// both directions (benchmark index checked by a corpus, corpus index checked
// by a new benchmark). N-grams common to many indexed items (boilerplate:
// module headers, reset branches, #include blocks) do not count
// (Config.MaxDocFreq), and a match names the other benchmark items that hold
// its matched text (Match.SharedWith).
//
// Behavioural matching (behavioural.go) covers what no n-gram sees: an RTL
// benchmark problem re-encoded (a combinational problem as an exhaustive
// case table, ports renamed and reordered). Problems with an executable
// harness are indexed by interface shape (Yosys-read ports: direction,
// width, signedness, clock); every corpus design of an equal shape is run,
// through a wrapper mapping its ports onto the problem's (by clock/reset,
// then normalised name, then at most DefaultMaxMappings permutations of
// equal-shape ports), against the problem's own harness with the RTL
// verifier. A pass is a match with Method "behavioural" and its port
// mapping and evidence row; simulations grow with the interface-compatible
// pairs, not corpus × benchmark; an unjudged simulation is counted and
// reported, never contamination.
package decontam

import (
	"github.com/zeebo/xxh3"

	"github.com/crucible-data/crucible/dedup"
)

// Channels of n-gram matching.
const (
	ChanLexical    = 0 // comment-free, whitespace-free, lowercased tokens
	ChanStructural = 1 // identifiers replaced by one placeholder
)

// ChannelName names a channel in reports.
func ChannelName(c int) string {
	if c == ChanStructural {
		return "structural"
	}
	return "lexical"
}

var placeholder = xxh3.HashString("\x00ident")

// keywords survive the structural channel: language keywords and the API
// words that carry a task's meaning (renaming them changes the task, not
// just its spelling). Verilog, C/CUDA and Python/PyTorch.
var keywords = map[string]bool{}

func init() {
	for _, w := range []string{
		// Verilog / SystemVerilog
		"module", "endmodule", "input", "output", "inout", "wire", "reg", "logic", "assign", "always",
		"always_ff", "always_comb", "always_latch", "begin", "end", "if", "else", "case", "casez", "casex",
		"endcase", "default", "posedge", "negedge", "or", "and", "not", "parameter", "localparam", "integer",
		"for", "generate", "endgenerate", "genvar", "function", "endfunction", "task", "endtask", "initial",
		"signed", "unsigned", "bit", "int", "typedef", "enum", "struct", "packed",
		// C / C++ / CUDA
		"float", "double", "void", "return", "while", "do", "const", "static", "char", "long", "short",
		"auto", "template", "typename", "include", "define", "__global__", "__device__", "__shared__",
		"__syncthreads", "threadidx", "blockidx", "blockdim", "griddim", "size_t", "switch", "break", "continue",
		// Python / PyTorch
		"def", "class", "import", "from", "as", "self", "in", "elif", "with", "none", "true", "false",
		"lambda", "super", "__init__", "forward", "torch", "nn", "is", "pass", "yield", "range",
	} {
		keywords[w] = true
	}
}

// tokenInfo holds, for every token of a text, its lexical hash, its
// structural hash and whether the structural token is a placeholder.
type tokenInfo struct {
	tok   dedup.Tokens
	lex   []uint64
	str   []uint64
	fixed []bool // structural token is not a placeholder
}

func isIdentifier(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	c := b[0]
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

// analyse tokenises text (comments stripped, lowercased, with source offsets)
// and fills the per-token hashes.
func (ti *tokenInfo) analyse(text string, lang dedup.Lang) {
	dedup.Tokenize(text, dedup.TokenizeOptions{Lang: lang, StripComments: true, Lowercase: true, SrcOffsets: true}, &ti.tok)
	n := ti.tok.Len()
	ti.lex = ti.lex[:0]
	ti.str = ti.str[:0]
	ti.fixed = ti.fixed[:0]
	for i := range n {
		b := ti.tok.Token(i)
		h := xxh3.Hash(b)
		ti.lex = append(ti.lex, h)
		// An identifier after '.' is an attribute or API name (torch.matmul),
		// which renaming a variable does not change.
		afterDot := i > 0 && len(ti.tok.Token(i-1)) == 1 && ti.tok.Token(i - 1)[0] == '.'
		if isIdentifier(b) && !keywords[string(b)] && !afterDot {
			ti.str = append(ti.str, placeholder)
			ti.fixed = append(ti.fixed, false)
		} else {
			ti.str = append(ti.str, h)
			ti.fixed = append(ti.fixed, true)
		}
	}
}

// gram is one n-gram occurrence: its hash and the token window it covers.
type gram struct {
	hash  uint64
	pos   int32 // first token
	len   int32 // tokens
	chann uint8
}

// gramHash combines a window of token hashes. The channel and the window
// length are mixed in so channels and lengths never collide.
func gramHash(toks []uint64, chann int) uint64 {
	h := uint64(chann+1)*0x9e3779b97f4a7c15 ^ uint64(len(toks))<<56
	for _, t := range toks {
		h = mix(h ^ t)
	}
	return h
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// appendGrams appends the n-grams of window length L of both channels.
// Structural grams need at least minFixed non-placeholder tokens so prose
// (all words become placeholders) does not produce meaningless matches.
// A text shorter than L yields nothing here; callers use the whole text as
// one gram of its own length instead (see Config.MinTokens).
func (ti *tokenInfo) appendGrams(dst []gram, L int, minFixedFrac float64) []gram {
	n := len(ti.lex)
	if n < L || L <= 0 {
		return dst
	}
	minFixed := int(minFixedFrac*float64(L) + 0.999)
	fixed := 0
	for i := range L - 1 {
		if ti.fixed[i] {
			fixed++
		}
	}
	for i := 0; i+L <= n; i++ {
		if ti.fixed[i+L-1] {
			fixed++
		}
		dst = append(dst, gram{hash: gramHash(ti.lex[i:i+L], ChanLexical), pos: int32(i), len: int32(L), chann: ChanLexical})
		if fixed >= minFixed {
			dst = append(dst, gram{hash: gramHash(ti.str[i:i+L], ChanStructural), pos: int32(i), len: int32(L), chann: ChanStructural})
		}
		if ti.fixed[i] {
			fixed--
		}
	}
	return dst
}

// structuralShingles returns the hashes of structural k-grams for MinHash.
// Windows made only of identifier placeholders are skipped: they carry no
// structure (prose turns entirely into placeholders) and would make every
// prose text look alike.
func (ti *tokenInfo) structuralShingles(dst []uint64, k int) []uint64 {
	n := len(ti.str)
	if n == 0 {
		return dst
	}
	if n < k {
		return append(dst, gramHash(ti.str, 2))
	}
	fixed := 0
	for i := range k - 1 {
		if ti.fixed[i] {
			fixed++
		}
	}
	for i := 0; i+k <= n; i++ {
		if ti.fixed[i+k-1] {
			fixed++
		}
		if fixed > 0 {
			dst = append(dst, gramHash(ti.str[i:i+k], 2))
		}
		if ti.fixed[i] {
			fixed--
		}
	}
	return dst
}
