package rtl

import (
	"strings"
	"testing"
)

// TestLexEscapedIdentifiers: an escaped identifier runs to white space
// whatever it holds, so `"`, `//` and `/*` inside one hide nothing; and an
// escaped keyword is a name.
func TestLexEscapedIdentifiers(t *testing.T) {
	src := "wire \\x\" ; RefModule r(); wire \\a// ; assign q = tb.q; wire \\b/* ; initial \\force x = 1; force y = 0;"
	toks, err := lexVerilog(src, lexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var idents, keywords []string
	for _, tk := range toks {
		if tk.Kind == tokIdent {
			idents = append(idents, tk.Text)
			if tk.isKeyword("force") {
				keywords = append(keywords, tk.Text)
			}
		}
	}
	got := strings.Join(idents, " ")
	for _, want := range []string{`x"`, "RefModule", "a//", "tb", "b/*", "force"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("identifiers %q lack %q", got, want)
		}
	}
	if len(keywords) != 1 {
		t.Errorf("keyword force seen %d times, want once (the escaped one is a name)", len(keywords))
	}
	if f := checkTokens(src); f == nil || !strings.Contains(f.Detail, "keyword force") {
		t.Errorf("checkTokens: %v, want the force keyword", f)
	}
}

// TestCheckTokens covers the rules on preprocessed text.
func TestCheckTokens(t *testing.T) {
	line := "`line 1 \"" + candidateFileName + "\" 0\n"
	cases := []struct {
		name, src string
		bad       string // "" = clean
	}{
		{"clean", line + "module TopModule(input a, output y); assign y = a; initial $display(\"$fopen\"); endmodule", ""},
		{"comment", line + "module TopModule; // $system force `include\n/* $fopen */ endmodule", ""},
		{"fopen", line + "module TopModule; integer f; initial f = $fopen(\"x\"); endmodule", "$fopen"},
		{"root", line + "module TopModule; initial $root.tb.x = 1; endmodule", "$root"},
		{"finish", line + "module TopModule; initial $finish; endmodule", "run-ending"},
		{"include", line + "`line 1 \"/etc/passwd\" 1\nroot:x:0:0\n", "another file"},
		{"pragma", line + "`pragma protect\nmodule TopModule; endmodule", "`pragma"},
		{"dpi", line + "import \"DPI-C\" function void f();\nmodule TopModule; endmodule", "DPI"},
		{"release", line + "module TopModule(input a); initial release a; endmodule", "release"},
		{"verilator-c", line + "module TopModule; initial $c(\"x\"); endmodule", "$c"},
		{"package-import", line + "package p; endpackage\nmodule TopModule; import p::*; endmodule", ""},
		{"escaped-dollar-names", line + "module TopModule(input a, output y); wire \\$abc$1$n ; assign \\$abc$1$n = a; assign y = \\$abc$1$n ; endmodule", ""},
	}
	for _, c := range cases {
		f := checkTokens(c.src)
		switch {
		case c.bad == "" && f != nil:
			t.Errorf("%s: unexpected finding %s", c.name, f.Error())
		case c.bad != "" && (f == nil || !strings.Contains(f.Detail, c.bad)):
			t.Errorf("%s: finding %v, want one naming %q", c.name, f, c.bad)
		}
	}
}

// TestModulePorts reads ANSI and non-ANSI headers.
func TestModulePorts(t *testing.T) {
	cases := []struct{ src, want string }{
		{"module TopModule #(parameter W = 4) (input wire [W-1:0] a, b, output reg signed [3:0] q = 0, input my_t c);\nendmodule", "a:input b:input q:output c:input"},
		{"module TopModule(a, b, y);\n input [3:0] a; input b;\n function f(input x); f = x; endfunction\n output y;\n assign y = b;\nendmodule", "a:input b:input y:output"},
		{"`define W 4\nmodule TopModule(input [`W-1:0] a, output \\y$1 );\nendmodule", "a:input y$1:output"},
		{"module Other(input x); endmodule\nmodule TopModule(output z); endmodule", "z:output"},
	}
	for _, c := range cases {
		toks, err := lexVerilog(c.src, lexOptions{skipDefines: true})
		if err != nil {
			t.Fatal(err)
		}
		ports, err := modulePorts(toks, "TopModule")
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		var got []string
		for _, p := range ports {
			got = append(got, p.Name+":"+p.Direction)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q: ports %v, want %s", c.src, got, c.want)
		}
	}
	for _, bad := range []string{"module TopModule(a); endmodule", "module TopModule(input a, input a); endmodule", "module TopModule(input a);"} {
		toks, err := lexVerilog(bad, lexOptions{})
		if err == nil {
			if _, err = modulePorts(toks, "TopModule"); err == nil {
				t.Errorf("%q: no error", bad)
			}
		}
	}
}

// FuzzLexVerilog: the lexer and the checks on its tokens never panic; token
// spans are in order and inside the input.
func FuzzLexVerilog(f *testing.F) {
	for _, s := range []string{"module m(input a); endmodule", "wire \\a\"b ; /* x */ // y\n$fopen `S`FO 4'b10x1 'h ff 1.5e3 \"s\\\"t\"",
		"`define X(a) a``b\n`X(1)", "'{1,2}", "int'(x)", "\\", "\"unterminated", "/* open", "a::b", "\x00", "(* keep *) reg r;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		toks, err := lexVerilog(src, lexOptions{skipDefines: len(src)%2 == 0})
		if err != nil {
			return
		}
		last := 0
		for _, tk := range toks {
			if tk.Pos < last || tk.End > len(src) || tk.End <= tk.Pos {
				t.Fatalf("token %+v out of order or bounds (last end %d, len %d)", tk, last, len(src))
			}
			last = tk.End
		}
		checkTokens(src)
		designUnits(toks)
		modulePorts(toks, "TopModule")
	})
}
