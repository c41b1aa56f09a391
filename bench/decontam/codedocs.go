package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// writeCodeDocs writes n seeded code documents of ≈ 2 KB — Verilog modules
// and C functions alternately, random identifiers, widths and expressions —
// as JSONL rows {id, text} and returns the bytes written. They share the
// languages' boilerplate with the benchmarks but no problem's text.
func writeCodeDocs(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(7, 11))
	var size int64
	for i := range n {
		var text string
		if i%2 == 0 {
			text = verilogDoc(r)
		} else {
			text = cDoc(r)
		}
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("doc%06d", i), "text": text})
		k, _ := w.Write(append(line, '\n'))
		size += int64(k)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return size, f.Close()
}

var syllables = []string{"ka", "lo", "mi", "ren", "sa", "tor", "vel", "qu", "zi", "ban", "dex", "fo", "gri", "hu", "jin", "pol"}

func ident(r *rand.Rand) string {
	var b strings.Builder
	for range 2 + r.IntN(3) {
		b.WriteString(syllables[r.IntN(len(syllables))])
	}
	if r.IntN(3) == 0 {
		fmt.Fprintf(&b, "_%d", r.IntN(100))
	}
	return b.String()
}

func verilogDoc(r *rand.Rand) string {
	var b strings.Builder
	ins := []string{ident(r), ident(r), ident(r)}
	outs := []string{ident(r), ident(r)}
	fmt.Fprintf(&b, "module %s (\n  input clk,\n  input rst,\n", ident(r))
	for _, p := range ins {
		fmt.Fprintf(&b, "  input [%d:0] %s,\n", r.IntN(16), p)
	}
	for k, p := range outs {
		sep := ","
		if k == len(outs)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  output reg [%d:0] %s%s\n", r.IntN(16), p, sep)
	}
	b.WriteString(");\n")
	ops := []string{"+", "-", "^", "&", "|"}
	for b.Len() < 1900 {
		reg := ident(r)
		fmt.Fprintf(&b, "  reg [%d:0] %s;\n  always @(posedge clk) begin\n    if (rst) %s <= 0;\n    else if (%s[%d]) %s <= %s %s %d'd%d;\n    else %s <= %s %s %s;\n  end\n",
			r.IntN(16), reg, reg, ins[r.IntN(3)], r.IntN(4), reg, ins[r.IntN(3)], ops[r.IntN(5)], 4+r.IntN(8), r.IntN(16),
			reg, reg, ops[r.IntN(5)], ins[r.IntN(3)])
		fmt.Fprintf(&b, "  always @(*) %s = %s %s %s;\n", outs[r.IntN(2)], reg, ops[r.IntN(5)], ins[r.IntN(3)])
	}
	b.WriteString("endmodule\n")
	return b.String()
}

func cDoc(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("#include <stdint.h>\n#include <stddef.h>\n\n")
	types := []string{"float", "double", "int32_t", "int64_t"}
	for b.Len() < 1900 {
		t := types[r.IntN(len(types))]
		a, o, n := ident(r), ident(r), ident(r)
		fmt.Fprintf(&b, "void %s(const %s *%s, %s *%s, size_t %s) {\n", ident(r), t, a, t, o, n)
		fmt.Fprintf(&b, "  for (size_t i = 0; i < %s; i++) {\n    %s acc = %s[i] * (%s)%d;\n", n, t, a, t, 1+r.IntN(9))
		fmt.Fprintf(&b, "    if (i %% %d == 0) acc += %s[i / %d];\n    %s[i] = acc;\n  }\n}\n\n", 2+r.IntN(5), a, 2+r.IntN(3), o)
	}
	return b.String()
}
