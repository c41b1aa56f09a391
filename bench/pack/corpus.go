// Package packbench holds the packing benchmarks: a generator for large
// synthetic trajectory corpora with the length mix of real RTL and GPU-kernel
// agent trajectories, tokenisation speed against tiktoken-go, packing on
// precomputed lengths, and an end-to-end driver (cmd/packrun).
package packbench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/crucible-data/crucible/ops/pack"
)

// GenOptions size a generated corpus.
type GenOptions struct {
	// TargetBytes stops generation once this much message text is written
	// (≈ 3.9 bytes per cl100k token for this mix: 540M tokens ≈ 2.1 GB).
	TargetBytes int64
	Seed        uint64
}

// GenStats summarises what Generate wrote.
type GenStats struct {
	Trajectories int64
	TextBytes    int64
	FileBytes    int64
}

// Generate writes JSONL trajectories: a task prompt, then rounds of assistant
// reasoning + code and environment feedback (compiler errors, simulator
// transcripts, profiler tables). Turn lengths are log-normal, from a few
// hundred to about twenty thousand characters with a long tail, so a few
// percent of samples exceed 32k tokens. Identifiers, numbers and widths are
// random so the tokeniser's piece cache sees realistic hit rates.
func Generate(w io.Writer, o GenOptions) (GenStats, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	g := &gen{seed: o.Seed, r: rand.New(rand.NewPCG(o.Seed, o.Seed+1))}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	var st GenStats
	for st.TextBytes < o.TargetBytes {
		t := g.trajectory(st.Trajectories)
		for _, m := range t.Messages {
			st.TextBytes += int64(len(m.Content) + len(m.Reasoning))
		}
		if err := enc.Encode(t); err != nil {
			return st, err
		}
		st.Trajectories++
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.FileBytes = cw.n
	return st, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type gen struct {
	seed uint64
	r    *rand.Rand
	b    strings.Builder
}

var families = []struct{ domain, family string }{
	{"rtl", "counter"}, {"rtl", "fsm"}, {"rtl", "fifo"}, {"rtl", "alu"}, {"rtl", "arbiter"},
	{"kernels", "gemm"}, {"kernels", "reduction"}, {"kernels", "softmax"}, {"kernels", "conv"},
}

// logNormal returns a length with the given median and spread, clamped.
func (g *gen) logNormal(median, sigma float64, lo, hi int) int {
	v := int(median * math.Exp(sigma*g.r.NormFloat64()))
	return max(lo, min(hi, v))
}

func (g *gen) trajectory(i int64) pack.Trajectory {
	f := families[g.r.IntN(len(families))]
	kernel := f.domain == "kernels"
	t := pack.Trajectory{ID: fmt.Sprintf("traj-%d-%09d", g.seed, i), Domain: f.domain, Family: f.family}
	t.Messages = append(t.Messages,
		pack.Message{Role: pack.RoleSystem, Content: "You are an expert hardware and GPU engineer. Think step by step, then answer with complete code."},
		pack.Message{Role: pack.RoleUser, Content: g.text(g.logNormal(1200, 0.6, 200, 8000), proseMode) + "\n\n" + g.code(g.logNormal(800, 0.7, 100, 6000), kernel)})
	rounds := 1 + g.r.IntN(4)
	if g.r.IntN(16) == 0 {
		rounds += 3 + g.r.IntN(6) // long agentic tail
	}
	for k := 0; k < rounds; k++ {
		t.Messages = append(t.Messages, pack.Message{
			Role:      pack.RoleAssistant,
			Reasoning: g.text(g.logNormal(2500, 0.7, 200, 20000), proseMode),
			Content:   g.code(g.logNormal(2500, 0.7, 200, 20000), kernel),
		})
		if k < rounds-1 || g.r.IntN(2) == 0 {
			t.Messages = append(t.Messages, pack.Message{Role: pack.RoleEnvironment, Content: g.feedback(g.logNormal(1500, 1.0, 150, 20000), kernel)})
		}
	}
	return t
}

const (
	proseMode = iota
	verilogMode
	cudaMode
)

var proseWords = strings.Fields(`the a of to and in is that for it as with be on by this are or from at which we
can not but if then so each when all one register clock reset signal output input state value width
kernel thread block warp memory shared global latency bandwidth tile loop index buffer compute result
error test fails because should must will would need use check first next now again here there update
fix timing path carry overflow handshake valid ready pipeline stage stall hazard bank conflict coalesced
vectorized occupancy registers spill launch grid dimension bound tensor matrix row column element sum`)

func (g *gen) ident() string {
	stems := []string{"data", "addr", "cnt", "state", "next", "buf", "acc", "tile", "idx", "row", "col", "sum", "tmp", "fifo", "wr", "rd", "valid", "ready", "q", "d"}
	s := stems[g.r.IntN(len(stems))]
	switch g.r.IntN(4) {
	case 0:
		return s
	case 1:
		return s + "_" + stems[g.r.IntN(len(stems))]
	case 2:
		return fmt.Sprintf("%s%d", s, g.r.IntN(64))
	default:
		return fmt.Sprintf("%s_%s%d", stems[g.r.IntN(len(stems))], s, g.r.IntN(16))
	}
}

// text writes about n bytes of prose with inline identifiers and numbers.
func (g *gen) text(n int, _ int) string {
	b := &g.b
	b.Reset()
	for b.Len() < n {
		words := 6 + g.r.IntN(18)
		for w := 0; w < words; w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			switch g.r.IntN(12) {
			case 0:
				b.WriteString("`" + g.ident() + "`")
			case 1:
				fmt.Fprintf(b, "%d", g.r.IntN(5000))
			default:
				word := proseWords[g.r.IntN(len(proseWords))]
				if w == 0 {
					word = strings.ToUpper(word[:1]) + word[1:]
				}
				b.WriteString(word)
			}
		}
		b.WriteString([]string{". ", ". ", ", so ", "? ", ".\n\n", ": "}[g.r.IntN(6)])
	}
	return b.String()
}

func (g *gen) code(n int, kernel bool) string {
	b := &g.b
	b.Reset()
	if kernel {
		fmt.Fprintf(b, "#include <cuda_runtime.h>\n\n__global__ void %s_kernel(const float* __restrict__ a, float* __restrict__ out, int n) {\n", g.ident())
		for b.Len() < n {
			switch g.r.IntN(6) {
			case 0:
				fmt.Fprintf(b, "    int %s = blockIdx.x * blockDim.x + threadIdx.x;\n", g.ident())
			case 1:
				fmt.Fprintf(b, "    __shared__ float %s[%d][%d];\n", g.ident(), 16<<g.r.IntN(2), 17+g.r.IntN(16))
			case 2:
				fmt.Fprintf(b, "    for (int %s = 0; %s < %d; ++%s) { %s += a[%s * n + %s]; }\n", "k", "k", g.r.IntN(256), "k", g.ident(), g.ident(), "k")
			case 3:
				fmt.Fprintf(b, "    if (%s < n) out[%s] = %s * %.3ff + %s;\n", g.ident(), g.ident(), g.ident(), g.r.Float64()*4, g.ident())
			case 4:
				b.WriteString("    __syncthreads();\n")
			default:
				fmt.Fprintf(b, "    float %s = __shfl_down_sync(0xffffffff, %s, %d);\n", g.ident(), g.ident(), 1<<g.r.IntN(5))
			}
		}
		b.WriteString("}\n")
		return b.String()
	}
	fmt.Fprintf(b, "module %s #(parameter WIDTH = %d) (\n    input  wire clk,\n    input  wire rst_n,\n", g.ident(), 4+g.r.IntN(60))
	for b.Len() < n {
		switch g.r.IntN(6) {
		case 0:
			fmt.Fprintf(b, "    input  wire [%d:0] %s,\n", g.r.IntN(64), g.ident())
		case 1:
			fmt.Fprintf(b, "  reg [WIDTH-1:0] %s;\n", g.ident())
		case 2:
			fmt.Fprintf(b, "  always @(posedge clk or negedge rst_n) begin\n    if (!rst_n) %s <= '0;\n    else %s <= %s + %d'd%d;\n  end\n", g.ident(), g.ident(), g.ident(), 1+g.r.IntN(16), g.r.IntN(100))
		case 3:
			fmt.Fprintf(b, "  assign %s = (%s == %d'h%x) ? %s : %s;\n", g.ident(), g.ident(), 8, g.r.IntN(256), g.ident(), g.ident())
		case 4:
			fmt.Fprintf(b, "  // %s\n", proseWords[g.r.IntN(len(proseWords))]+" "+proseWords[g.r.IntN(len(proseWords))])
		default:
			fmt.Fprintf(b, "  case (%s)\n    %d'd%d: %s = %s;\n    default: %s = '0;\n  endcase\n", g.ident(), 3, g.r.IntN(8), g.ident(), g.ident(), g.ident())
		}
	}
	b.WriteString("endmodule\n")
	return b.String()
}

func (g *gen) feedback(n int, kernel bool) string {
	b := &g.b
	b.Reset()
	for b.Len() < n {
		switch {
		case kernel && g.r.IntN(2) == 0:
			fmt.Fprintf(b, "%-28s %8.2f us %6.2f%% %10d  %5.1f GB/s  occupancy %4.1f%%\n", g.ident()+"_kernel", g.r.Float64()*900, g.r.Float64()*100, g.r.IntN(1<<20), g.r.Float64()*3000, g.r.Float64()*100)
		case kernel:
			fmt.Fprintf(b, "kernel.cu(%d): error: identifier \"%s\" is undefined\n", g.r.IntN(400), g.ident())
		case g.r.IntN(3) == 0:
			fmt.Fprintf(b, "design.v:%d: syntax error near '%s'\nI give up.\n", g.r.IntN(300), g.ident())
		default:
			fmt.Fprintf(b, "%8d ns: %s=0x%04x %s=%d expected=%d MISMATCH\n", g.r.IntN(1<<20), g.ident(), g.r.IntN(1<<16), g.ident(), g.r.IntN(256), g.r.IntN(256))
		}
	}
	return b.String()
}
