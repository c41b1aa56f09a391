package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// zstdTestPage is a Parquet-page-sized text: words from a small random
// vocabulary, so it has both literals and matches.
func zstdTestPage() []byte {
	r := rand.New(rand.NewPCG(7, 9))
	vocab := make([]string, 500)
	for i := range vocab {
		w := make([]byte, 2+r.IntN(8))
		for k := range w {
			w[k] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	var b bytes.Buffer
	for b.Len() < 1<<20 {
		b.WriteString(vocab[r.IntN(len(vocab))])
		b.WriteByte(" \n"[r.IntN(2)])
	}
	return b.Bytes()
}

// TestZstdCodecFastLevels: the registered zstd codec is Crucible's; levels
// 1-2 write standard zstd that a plain zstd decoder and the Parquet codec
// both decode to the input, compressed; level 3 and the library default
// write exactly what arrow-go's codec writes.
func TestZstdCodecFastLevels(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	fz, ok := c.(fastZstd)
	if !ok {
		t.Fatalf("registered zstd codec is %T, want fastZstd", c)
	}
	src := zstdTestPage()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, level := range []int{1, 2} {
		t.Run(fmt.Sprint(level), func(t *testing.T) {
			enc := c.EncodeLevel(make([]byte, 0, c.CompressBound(int64(len(src)))), src, level)
			if len(enc) >= len(src)*3/4 {
				t.Fatalf("level %d: %d bytes from %d", level, len(enc), len(src))
			}
			got, err := dec.DecodeAll(enc, nil)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("level %d: a plain zstd decoder gives %d bytes, err %v", level, len(got), err)
			}
			got, err = compress.Decode(c, nil, enc)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("level %d: the Parquet codec decodes %d bytes, err %v", level, len(got), err)
			}
			// The pooled encoder is reused: a second page encodes the same.
			if again := c.EncodeLevel(nil, src, level); !bytes.Equal(again, enc) {
				t.Fatalf("level %d: a second encode differs", level)
			}
		})
	}
	for _, level := range []int{3, 9, compress.DefaultCompressionLevel} {
		if got, want := c.EncodeLevel(nil, src, level), fz.arrowZstd.EncodeLevel(nil, src, level); !bytes.Equal(got, want) {
			t.Errorf("level %d: %d bytes, arrow-go's codec writes %d", level, len(got), len(want))
		}
	}
	if _, err := compress.Decode(c, nil, []byte("not zstd")); err == nil {
		t.Error("decoding garbage gave no error")
	}
}
