package vlog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/internal/testenv"
)

func TestLexRoundTrip(t *testing.T) {
	src := "module M(input [3:0] a, output reg y); // c\n /* b */ always @(posedge clk or negedge rst_n) y <= a == 4'd9 ? 1'b1 : 'b0; endmodule\n"
	toks, err := Lex(src)
	if err != nil {
		t.Fatal(err)
	}
	if Join(toks) != src {
		t.Fatalf("round trip differs")
	}
	var nums []string
	for _, tk := range toks {
		if tk.Kind == Number {
			nums = append(nums, tk.Text)
		}
	}
	if strings.Join(nums, ",") != "3,0,4'd9,1'b1,'b0" {
		t.Errorf("numbers = %v", nums)
	}
	if _, err := Lex("module m; /* open"); err == nil {
		t.Error("unterminated comment accepted")
	}
}

func TestParseSeeds(t *testing.T) {
	root := testenv.RepoRoot(t)
	refs, _ := filepath.Glob(filepath.Join(root, "examples/seeds/rtl/*/reference.sv"))
	if len(refs) == 0 {
		t.Fatal("no seeds")
	}
	for _, p := range refs {
		b, _ := os.ReadFile(p)
		d, err := Parse(string(b), "RefModule")
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(d.Ports) == 0 {
			t.Errorf("%s: no ports", p)
		}
	}
}

func TestParseVerilogEval(t *testing.T) {
	path := testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	n, bad := 0, 0
	for sc.Scan() {
		var row struct {
			ID  string `json:"id"`
			Ref string `json:"ref"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		n++
		d, err := Parse(row.Ref, "RefModule")
		if err != nil || len(d.Ports) == 0 {
			bad++
			t.Logf("%s: %v", row.ID, err)
		}
	}
	if bad > n/20 {
		t.Errorf("%d of %d references did not parse", bad, n)
	}
}

// FuzzParseAndMutate: parsing and every operator must return errors, never
// panic, on arbitrary text.
func FuzzParseAndMutate(f *testing.F) {
	f.Add("module RefModule(input clk, input rst, output reg [3:0] q); always @(posedge clk) if (rst) q <= 0; else q <= q + 1; endmodule")
	f.Add("module RefModule(input [7:0] a, output y); assign y = a[3:0] == 4'hf ? 1'b1 : 'b0; endmodule")
	f.Add("module RefModule(); case (s) A: n = x ? B : A; endcase endmodule")
	f.Add("module RefModule(input a; always @(")
	f.Fuzz(func(t *testing.T, src string) {
		d, err := Parse(src, "RefModule")
		if err != nil {
			return
		}
		d.Cases()
		for i := range d.Toks {
			d.AssignTarget(i)
			d.StmtEnd(i)
		}
		for _, p := range d.Ports {
			d.Width(p)
		}
	})
}
