package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func referenceTiktoken(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	ref, err := tiktoken.GetEncoding(name)
	if err != nil {
		t.Fatalf("tiktoken-go %s: %v", name, err)
	}
	return ref
}

func toU32(ids []int) []uint32 {
	out := make([]uint32, len(ids))
	for i, v := range ids {
		out[i] = uint32(v)
	}
	return out
}

// TestTiktokenMatchesReference compares ids with tiktoken-go on the corpus
// (prose, Verilog, C++, Python, CUDA, non-ASCII, adversarial whitespace) and
// on random text, and checks that decoding gives the text back.
func TestTiktokenMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	texts := corpusTexts(t)
	for i := 0; i < 400; i++ {
		texts = append(texts, randomText(r, 1+r.IntN(60)))
	}
	// long pieces take the heap merge path
	texts = append(texts, strings.Repeat(" ", 300)+"x", strings.Repeat("=", 200), strings.Repeat("ab", 150),
		"0x"+strings.Repeat("deadbeefcafebabe", 20), strings.Repeat("\n", 100)+strings.Repeat("\t", 70))
	for _, name := range []string{CL100KBase, O200KBase} {
		tok, err := LoadTiktoken(name)
		if err != nil {
			t.Fatal(err)
		}
		ref := referenceTiktoken(t, name)
		enc := tok.NewEncoder()
		bad := 0
		for _, s := range texts {
			want := toU32(ref.EncodeOrdinary(s))
			got := enc.Encode(nil, s)
			if !slices.Equal(got, want) {
				bad++
				if bad <= 3 {
					t.Errorf("%s: %q\n got %v\nwant %v", name, s, got, want)
				}
				continue
			}
			// a second pass goes through the piece cache
			if again := enc.Encode(nil, s); !slices.Equal(again, want) {
				t.Errorf("%s: cached encode differs for %q", name, s)
			}
			if dec, err := tok.Decode(got); err != nil || dec != s {
				t.Errorf("%s: decode(%q) = %q, %v", name, s, dec, err)
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts differ from tiktoken-go", name, bad, len(texts))
		}
	}
}

func TestMergeLargeEqualsSmall(t *testing.T) {
	tok, err := LoadTiktoken(CL100KBase)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	alpha := "aabbe  =-_xyz01\n"
	var s mergeScratch
	for i := 0; i < 500; i++ {
		b := make([]byte, 2+r.IntN(80))
		for j := range b {
			b[j] = alpha[r.IntN(len(alpha))]
		}
		small := tok.model.mergeSmall(nil, string(b), &s)
		large := tok.model.mergeLarge(nil, string(b), &s)
		if !slices.Equal(small, large) {
			t.Fatalf("%q: small %v large %v", b, small, large)
		}
	}
}

func TestLoadTiktokenRejectsUnknown(t *testing.T) {
	if _, err := LoadTiktoken("p99k_base"); err == nil || !strings.Contains(err.Error(), "p99k_base") {
		t.Fatalf("want error naming the encoding, got %v", err)
	}
}

func TestAddSpecial(t *testing.T) {
	tok, err := LoadTiktoken(CL100KBase)
	if err != nil {
		t.Fatal(err)
	}
	if id, fresh := tok.AddSpecial("<|endoftext|>"); id != 100257 || fresh {
		t.Fatalf("endoftext: %d %v", id, fresh)
	}
	a, fresh := tok.AddSpecial("<|im_start|>")
	b, _ := tok.AddSpecial("<|im_end|>")
	a2, _ := tok.AddSpecial("<|im_start|>")
	if !fresh || a != 100277 || b != 100278 || a2 != a {
		t.Fatalf("added ids %d %d %d", a, b, a2)
	}
	if s, err := tok.Decode([]uint32{a, 9906, b}); err != nil || s != "<|im_start|>Hello<|im_end|>" {
		t.Fatalf("decode %q %v", s, err)
	}
	// a fresh load does not see another tokenizer's added tokens
	other, _ := LoadTiktoken(CL100KBase)
	if _, ok := other.SpecialID("<|im_start|>"); ok {
		t.Fatal("added token leaked across loads")
	}
}

// Invalid UTF-8 (possible in Parquet input) must not panic and must survive
// a round trip byte for byte; each invalid byte is an "other" character.
func TestInvalidUTF8RoundTrips(t *testing.T) {
	for _, name := range []string{CL100KBase, O200KBase} {
		tok, err := LoadTiktoken(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"abc\xffdef", "\xc3", "x \xe2\x82 y\n\xff\xfe", string([]byte{0x80, 'a', 0xc0, ' ', 'b'})} {
			ids := tok.Encode(s)
			back, err := tok.Decode(ids)
			if err != nil || back != s {
				t.Errorf("%s: %q -> %v -> %q, %v", name, s, ids, back, err)
			}
		}
	}
}
