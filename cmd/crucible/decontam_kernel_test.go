package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/decontam/decontamtest"
	"github.com/crucible-data/crucible/engine"
)

// runCLISplit is runCLI with stdout and stderr apart: the notes on
// methods not run go to stderr, the summaries to stdout.
func runCLISplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err = executeRoot(context.Background(), root)
	return out.String(), errb.String(), err
}

// writeRows writes each row as one JSONL line of dir/name.
func writeRows(t *testing.T, dir, name string, rows ...any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecontamCheckKernelBehavioural: `decontam check` matches a benchmark's
// CPU kernel problems behaviourally against the corpus rows that are kernel
// items, with the stage's matcher: a rewritten copy of matmul_f32_64
// (renamed, arguments reordered, other code) is a behavioural match naming
// the problem, the argument mapping and the verdict, at its place among
// all corpus rows (exit 6; --purify removes that row); a kernel of the same
// signature computing something else is not; a plain-text corpus gets one
// note on stderr under auto and is exit 2 under --method behavioural, as
// are items none of which is a kernel, and a corpus index (which keeps no
// kernel arguments) says so.
func TestDecontamCheckKernelBehavioural(t *testing.T) {
	decontamtest.RequireKernelCC(t)
	dir := t.TempDir()
	bench := decontamtest.WriteKernelBench(t, dir, "matmul_f32_64", "vector_add_f32")
	mm := decontamtest.KernelItem("mm", "mm_rewrite", decontamtest.MatmulRewrite, "out", "q", "p", "size")
	add := decontamtest.KernelItem("add", "addmat", decontamtest.AddSameShape, "x", "y", "z", "n")
	// A row before the kernel that is not an item: the match must name the
	// kernel's place among all rows, not among the items.
	prose := map[string]string{"item_id": "prose", "instruction": "Explain what a cache line is."}
	rtlItem := engine.Item{ItemID: "inv", Domain: engine.DomainRTL, Instruction: "Invert a.",
		Reference: "module inv(input a, output y); assign y = ~a; endmodule\n", Verifier: engine.Verifier{Kind: engine.VerifierSelfChecking, Harness: "module tb; endmodule"}}
	corpora := map[string]string{
		"copy":  writeRows(t, dir, "copy.jsonl", prose, mm),
		"other": writeRows(t, dir, "other.jsonl", add),
		"text":  writeRows(t, dir, "text.jsonl", map[string]string{"id": "d1", "text": "Caches hold recently used lines close to the core."}),
		"rtl":   writeRows(t, dir, "rtl.jsonl", rtlItem),
	}
	kernelKey := func(k string) string { return "behavioural." + k + ".kbench (kernel)" }
	for _, tc := range []struct {
		name, corpus, method string
		noCC                 bool     // PATH without gcc
		wantCode             int      // exit code
		wantMatch            string   // corpus id matched behaviourally ("" none)
		wantRow              int64    // its place among the corpus rows
		stderrHas, stdoutHas []string // lines the user sees
		wantCounts           map[string]int64
	}{
		{name: "rewrite flagged", corpus: "copy", method: "behavioural", wantCode: exitFindings, wantMatch: "mm", wantRow: 1,
			stdoutHas: []string{"decontam kbench (kernel) (behavioural): 1 designs in 2 rows, 2 problems", "2 pairs, 1 pruned by interface shape, 1 compatible",
				"matmul_f32_64                  ← mm                             behavioural (ports a=p,b=q,c=out,n=size)", "(kept 1 rows, removed 1 contaminated)"},
			// The first mapping (a=q) computes b·a and fails, the second passes.
			wantCounts: map[string]int64{"matches": 1, "simulations": 2, "pairs_compatible": 1, "pairs_pruned": 1, "unjudged": 0}},
		{name: "same signature other function", corpus: "other", method: "behavioural", wantCode: exitOK,
			stdoutHas:  []string{"decontam kbench (kernel) (behavioural): 1 designs in 1 rows", "0 contaminated"},
			wantCounts: map[string]int64{"matches": 0, "simulations": 2, "pairs_compatible": 1, "pairs_pruned": 1}},
		{name: "plain text auto", corpus: "text", method: "auto", wantCode: exitOK,
			stderrHas: []string{"decontam: the kernel problems of benchmark kbench are not matched behaviourally: the --corpus rows are not Crucible items"}},
		{name: "plain text behavioural", corpus: "text", method: "behavioural", wantCode: exitUsage,
			stderrHas: []string{"--method behavioural: the kernel problems of benchmark kbench are not matched behaviourally: the --corpus rows are not Crucible items"}},
		{name: "items without kernels behavioural", corpus: "rtl", method: "behavioural", wantCode: exitUsage,
			stderrHas: []string{"none of the 1 corpus items is a CPU kernel stating its arguments"}},
		// auto: the lexical pass runs too (it finds this short kernel
		// structurally); the behavioural match is written beside it.
		{name: "rewrite flagged auto", corpus: "copy", method: "auto", wantCode: exitFindings, wantMatch: "mm", wantRow: 1,
			stdoutHas: []string{"decontam kbench (kernel) (behavioural): 1 designs in 2 rows", "(kept 1 rows, removed 1 contaminated)"}},
		// Without gcc, auto says so and runs lexical only.
		{name: "no compiler auto", corpus: "copy", method: "auto", noCC: true, wantCode: exitFindings,
			stderrHas: []string{`decontam: behavioural matching of kernel problems NOT run (kernels: backend unavailable: C compiler "gcc" not found): install a C compiler (gcc) for kernel coverage`}},
		{name: "no compiler behavioural", corpus: "copy", method: "behavioural", noCC: true, wantCode: exitUsage,
			stderrHas: []string{"--method behavioural cannot run kernel problems here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noCC {
				t.Setenv("PATH", dir)
			}
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"decontam", "check", "--corpus", corpora[tc.corpus], "--benchmark", bench, "--id-field", "item_id", "--out", out,
				"--no-progress", "--workers", "2", "--method", tc.method}
			if tc.wantMatch != "" {
				args = append(args, "--purify", filepath.Join(t.TempDir(), "pure"))
			}
			stdout, stderr, err := runCLISplit(t, args...)
			if code := exitCode(context.Background(), err); code != tc.wantCode {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", code, err, tc.wantCode, stdout, stderr)
			}
			if err != nil && tc.wantCode == exitUsage {
				stderr += err.Error() // the command's error, which main prints on stderr
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if tc.wantCode == exitUsage {
				return
			}
			if tc.wantCounts == nil && tc.wantMatch == "" && strings.Contains(stdout, "(kernel) (behavioural)") {
				t.Errorf("a kernel pass ran:\n%s", stdout)
			}
			files, _ := filepath.Glob(filepath.Join(out, "matches-*.parquet"))
			ms, err := engine.ReadAll[decontam.Match](files...)
			if err != nil {
				t.Fatal(err)
			}
			var bhv []decontam.Match
			for _, m := range ms {
				if m.Method == decontam.MethodBehavioural {
					bhv = append(bhv, m)
				}
			}
			if tc.wantMatch == "" {
				if len(bhv) != 0 {
					t.Errorf("behavioural matches %+v, want none", bhv)
				}
			} else {
				if len(bhv) != 1 || bhv[0].CorpusID != tc.wantMatch || bhv[0].BenchmarkID != "matmul_f32_64" || bhv[0].Benchmark != "kbench" ||
					bhv[0].PortMapping != "a=p,b=q,c=out,n=size" || !bhv[0].Contaminated || bhv[0].Score != 1 || !strings.Contains(bhv[0].Evidence, `"status":"pass"`) {
					t.Fatalf("behavioural matches %+v", bhv)
				}
				files, _ = filepath.Glob(filepath.Join(out, "contaminated_rows-*.parquet"))
				all, err := engine.ReadAll[contamRow](files...)
				var rows []contamRow
				for _, r := range all {
					if r.Method == decontam.MethodBehavioural {
						rows = append(rows, r)
					}
				}
				if err != nil || len(rows) != 1 || rows[0].Row != tc.wantRow || rows[0].CorpusID != tc.wantMatch || rows[0].BenchmarkID != "matmul_f32_64" {
					t.Errorf("behavioural contaminated rows %+v (%v), want row %d", rows, err, tc.wantRow)
				}
				// The run record keeps the kernel pass: rescored, the
				// behavioural match (score 1) stays.
				if _, err := runCLI(t, "decontam", "rescore", out, "--threshold", "0.99"); exitCode(context.Background(), err) != exitFindings {
					t.Errorf("rescore: %v, want exit 6", err)
				}
			}
			if tc.wantCounts != nil {
				var man engine.Manifest
				b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
				if err := json.Unmarshal(b, &man); err != nil {
					t.Fatal(err)
				}
				for k, want := range tc.wantCounts {
					if got, ok := man.Counts[kernelKey(k)]; !ok || got != want {
						t.Errorf("manifest %s = %d (present %v), want %d; counts %v", kernelKey(k), got, ok, want, man.Counts)
					}
				}
			}
		})
	}

	// The reverse direction: a corpus index keeps RTL designs' interfaces
	// only, so kernel problems are noted as not matched (auto) and are
	// exit 2 under --method behavioural, when nothing else could run.
	t.Run("corpus index", func(t *testing.T) {
		idx := filepath.Join(t.TempDir(), "cidx")
		if _, err := runCLI(t, "decontam", "index", "--in", corpora["copy"], "--side", "corpus", "--out", idx); err != nil {
			t.Fatal(err)
		}
		_, stderr, err := runCLISplit(t, "decontam", "check", "--corpus-index", idx, "--benchmark", bench, "--id-field", "item_id", "--out", filepath.Join(t.TempDir(), "o"), "--method", "auto")
		if err != nil && exitCode(context.Background(), err) != exitFindings {
			t.Fatalf("auto: %v\n%s", err, stderr)
		}
		// Without Yosys the index has no interface index, and the note
		// says behavioural matching is not available for it at all.
		note := "decontam: the kernel problems of benchmark kbench are not matched behaviourally: a --corpus-index keeps RTL designs' interfaces, not kernel items' arguments; check the corpus files with --corpus"
		if _, err := exec.LookPath("yosys"); err != nil {
			note = "behavioural matching NOT available for --corpus-index"
		}
		if !strings.Contains(stderr, note) {
			t.Errorf("auto --corpus-index: stderr lacks %q:\n%s", note, stderr)
		}
		_, _, err = runCLISplit(t, "decontam", "check", "--corpus-index", idx, "--benchmark", bench, "--id-field", "item_id", "--out", filepath.Join(t.TempDir(), "o2"), "--method", "behavioural")
		if exitCode(context.Background(), err) != exitUsage {
			t.Errorf("--method behavioural --corpus-index: %v, want exit 2", err)
		}
	})
}
