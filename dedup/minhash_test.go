package dedup

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// refShingles and refSign are AppendShingles and Signer.Sign as first
// written (before their loops were tuned): stored signatures and
// --reuse-signatures depend on every bit staying the same.
func refShingles(t *Tokens, kind string, n int, seed uint64) []uint64 {
	var out []uint64
	if t.Len() == 0 {
		return nil
	}
	if kind == ShingleChar {
		b := t.Buf
		if len(b) <= n {
			return []uint64{xxh3.HashSeed(b, seed)}
		}
		for i := 0; i+n <= len(b); i++ {
			out = append(out, xxh3.HashSeed(b[i:i+n], seed))
		}
		return out
	}
	m := t.Len()
	if m <= n {
		return []uint64{xxh3.HashSeed(t.Buf[t.Start[0]:t.End(m-1)], seed)}
	}
	for i := 0; i+n <= m; i++ {
		out = append(out, xxh3.HashSeed(t.Buf[t.Start[i]:t.End(i+n-1)], seed))
	}
	return out
}

func refSign(s Signer, shingles []uint64) []uint64 {
	if len(shingles) == 0 {
		return nil
	}
	dst := make([]uint64, s.K)
	for i := range dst {
		dst[i] = emptyBin
	}
	for _, h := range shingles {
		v := mix64(h ^ s.Seed)
		bin, _ := bits.Mul64(v, uint64(s.K))
		if v < dst[bin] {
			dst[bin] = v
		}
	}
	s.densify(dst)
	return dst
}

// TestSignaturesBitIdentical: the tuned shingling and signing give the
// reference's bits on synthetic documents (long, short, empty; word and
// char shingles; two seeds and slot counts).
func TestSignaturesBitIdentical(t *testing.T) {
	syn := NewSynth(SynthConfig{N: 300, DocWords: 120, Vocab: 500, DupFrac: 0.2, EditsMin: 1, EditsMax: 3, Seed: 3})
	texts := []string{"", "a", "one two", "x <= y;", "module m; endmodule"}
	for i := range 300 {
		texts = append(texts, syn.Text(i))
	}
	for _, c := range []struct {
		kind string
		n    int
		k    int
		seed uint64
	}{{ShingleWord, 5, 128, 1}, {ShingleWord, 3, 256, 99}, {ShingleChar, 7, 64, 5}} {
		s := Signer{K: c.k, Seed: c.seed}
		var tok Tokens
		var sh []uint64
		var sig []uint64
		for _, text := range texts {
			Tokenize(text, TokenizeOptions{Lang: LangAuto, StripComments: true}, &tok)
			sh = AppendShingles(sh[:0], &tok, c.kind, c.n, c.seed)
			if want := refShingles(&tok, c.kind, c.n, c.seed); !slices.Equal(sh, want) {
				t.Fatalf("%s%d: shingles of %.30q differ from the reference", c.kind, c.n, text)
			}
			sig = s.Sign(sh, sig)
			if want := refSign(s, sh); !slices.Equal(sig, want) {
				t.Fatalf("%s%d k=%d: signature of %.30q differs from the reference", c.kind, c.n, c.k, text)
			}
		}
	}
}

// TestSortUint32: the radix sort gives slices.Sort's order for short and
// long slices, repeats, keys sharing bytes (skipped passes) and reused
// scratch.
func TestSortUint32(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	var tmp []uint32
	for _, n := range []int{0, 1, 63, 64, 65, 400, 3000} {
		for _, mask := range []uint32{0xffffffff, 0xff, 0xff00ff00, 0x0f0000f0, 0} {
			a := make([]uint32, n)
			for i := range a {
				a[i] = r.Uint32() & mask
			}
			want := slices.Clone(a)
			slices.Sort(want)
			tmp = sortUint32(a, tmp)
			if !slices.Equal(a, want) {
				t.Fatalf("n=%d mask=%#x: not sorted like slices.Sort", n, mask)
			}
		}
	}
}
