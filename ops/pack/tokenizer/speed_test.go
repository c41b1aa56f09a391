package tokenizer

import (
	"strings"
	"testing"
)

func BenchmarkEncodeCL100KCorpus(b *testing.B) {
	tok, err := LoadTiktoken(CL100KBase)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(corpusTexts(b), "")
	enc := tok.NewEncoder()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	var ids []uint32
	for i := 0; i < b.N; i++ {
		ids = enc.Encode(ids[:0], text)
	}
}
