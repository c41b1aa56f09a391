package tokenizer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// regexPieces splits s with the reference regex engine (regexp2, as used by
// tiktoken-go), failing on gaps: all three patterns must tile the text.
func regexPieces(t *testing.T, re *regexp2.Regexp, s string) []string {
	t.Helper()
	var out []string
	runes := []rune(s)
	prev := 0
	m, err := re.FindStringMatch(s)
	for err == nil && m != nil {
		if m.Index != prev {
			t.Fatalf("regex gap at rune %d in %q", prev, s)
		}
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		prev = m.Index + m.Length
		m, err = re.FindNextMatch(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scannerPieces(sp splitter, s string) []string {
	var out []string
	sp.split(s, func(p string) { out = append(out, p) })
	return out
}

// tricky characters: every class boundary the patterns care about, with
// several scripts, marks, title case, modifier letters and odd whitespace.
var trickyRunes = []rune("aZzA'sStTrReEvVmMlLdD  \t\r\n\v\f\u0085\u00a0\u2028\u3000/.,;:!?-_\"()[]{}<>#$%&*+=@\\^`|~" +
	"0123456789١٢٣①Ⅻ½" + "éÉßſǅǈǲᾈʰʲˢ々〆ー中文字カナあ한" + "\u0301\u0308\u0903\u20dd" + "👍🏽\u200d🇩" + "Ωωπ" + "ДдЁё")

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		switch r.IntN(10) {
		case 0:
			b.WriteString([]string{"'s", "'LL", "'Re", "'ve", "'d", "'M", "'t", " '", "''"}[r.IntN(9)])
		case 1:
			b.WriteString(strings.Repeat(string(trickyRunes[r.IntN(len(trickyRunes))]), 1+r.IntN(5)))
		default:
			b.WriteRune(trickyRunes[r.IntN(len(trickyRunes))])
		}
	}
	return b.String()
}

func corpusTexts(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in testdata: %v", err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		// every line on its own too: pieces at the very start and end of a
		// text exercise the end-of-input branches.
		out = append(out, strings.SplitAfter(string(b), "\n")...)
	}
	return out
}

func TestScannersMatchRegex(t *testing.T) {
	cases := []struct {
		pattern string
		sp      splitter
	}{
		{PatternCL100K, cl100kSplitter{maxDigits: 3}},
		{PatternQwen2, cl100kSplitter{maxDigits: 1}},
		{PatternO200K, o200kSplitter{}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	var texts []string
	texts = append(texts, corpusTexts(t)...)
	for i := 0; i < 3000; i++ {
		texts = append(texts, randomText(r, 1+r.IntN(40)))
	}
	for _, c := range cases {
		sp, err := splitterFor(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if sp != c.sp {
			t.Fatalf("pattern %q did not select the hand-written scanner (got %s)", c.pattern, sp.name())
		}
		re := regexp2.MustCompile(c.pattern, regexp2.None)
		bad := 0
		for _, s := range texts {
			want := regexPieces(t, re, s)
			got := scannerPieces(c.sp, s)
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				bad++
				if bad <= 5 {
					t.Errorf("%s: text %q\n got %q\nwant %q", c.sp.name(), s, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts split differently from the regex", c.sp.name(), bad, len(texts))
		}
	}
}

func TestRegexFallbackSplitsGPT2(t *testing.T) {
	sp, err := splitterFor(PatternGPT2)
	if err != nil {
		t.Fatal(err)
	}
	got := scannerPieces(sp, "Hello world's  123 !!\n")
	want := []string{"Hello", " world", "'s", " ", " 123", " !!", "\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q want %q", got, want)
	}
}

// FuzzScanners extends TestScannersMatchRegex with the fuzzer:
//
//	go test -run '^$' -fuzz FuzzScanners -fuzztime 2m ./ops/pack/tokenizer/
func FuzzScanners(f *testing.F) {
	for _, s := range []string{"it's  ok\n\n", "ABCdef ǅx \u0301a", "  \t\r\n x", "1234 ١٢٣", "a/b//\n", "'LL'''s"} {
		f.Add(s)
	}
	res := map[string]*regexp2.Regexp{}
	for _, p := range []string{PatternCL100K, PatternQwen2, PatternO200K} {
		res[p] = regexp2.MustCompile(p, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip() // inputs reach the tokeniser as valid UTF-8 (JSON decoding guarantees it)
		}
		for p, re := range res {
			sp, _ := splitterFor(p)
			want := regexPieces(t, re, s)
			got := scannerPieces(sp, s)
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%s: %q\n got %q\nwant %q", sp.name(), s, got, want)
			}
		}
	})
}
