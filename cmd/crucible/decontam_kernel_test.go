package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// TestDecontamCheckKernelBehavioural: `decontam check` matches a benchmark's
// CPU kernel problems behaviourally against the corpus rows that are kernel
// items, with the stage's matcher: a rewritten copy of matmul_f32_64
// (renamed, arguments reordered, other code) is a behavioural match naming
// the problem, the argument mapping and the verdict, at its place among
// all corpus rows (exit 6; --purify removes that row); a kernel of the same
// signature computing something else is not; a plain-text corpus gets one
// note on stderr under auto and is exit 2 under --method behavioural, as
// are items none of which is a kernel. Checked against a corpus index of
// those files instead (the reverse direction), the benchmark gets the same
// match, contaminated row, counts, notes and exit codes; an index written
// before indexes kept kernel items (version 3) says so.
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
		"copy":  decontamtest.WriteJSONL(t, dir, "copy.jsonl", prose, mm),
		"other": decontamtest.WriteJSONL(t, dir, "other.jsonl", add),
		"text":  decontamtest.WriteJSONL(t, dir, "text.jsonl", map[string]string{"id": "d1", "text": "Caches hold recently used lines close to the core."}),
		"rtl":   decontamtest.WriteJSONL(t, dir, "rtl.jsonl", rtlItem),
	}
	kernelKey := func(k string) string { return "behavioural." + k + ".kbench (kernel)" }
	for _, tc := range []struct {
		name, corpus, method string
		// index: check a corpus index built from the corpus (`decontam
		// index`, default method) instead of the corpus files: "new", or
		// "v3", that index rewritten as one of version 3 (no kernel index).
		index                string
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
		// The reverse direction: the corpus index keeps the kernel items
		// with their rows, so the benchmark checked against it gets what
		// the corpus files give: the same match, row, counts and exit.
		{name: "index rewrite flagged", corpus: "copy", index: "new", method: "behavioural", wantCode: exitFindings, wantMatch: "mm", wantRow: 1,
			stdoutHas: []string{"decontam kbench (kernel) (behavioural): 1 designs in 2 rows, 2 problems", "2 pairs, 1 pruned by interface shape, 1 compatible",
				"matmul_f32_64                  ← mm                             behavioural (ports a=p,b=q,c=out,n=size)"},
			wantCounts: map[string]int64{"matches": 1, "simulations": 2, "pairs_compatible": 1, "pairs_pruned": 1, "unjudged": 0}},
		{name: "index rewrite flagged auto", corpus: "copy", index: "new", method: "auto", wantCode: exitFindings, wantMatch: "mm", wantRow: 1,
			stdoutHas: []string{"decontam kbench (kernel) (behavioural): 1 designs in 2 rows"}},
		{name: "index same signature other function", corpus: "other", index: "new", method: "behavioural", wantCode: exitOK,
			stdoutHas:  []string{"decontam kbench (kernel) (behavioural): 1 designs in 1 rows", "0 contaminated"},
			wantCounts: map[string]int64{"matches": 0, "simulations": 2, "pairs_compatible": 1, "pairs_pruned": 1}},
		{name: "index of plain text auto", corpus: "text", index: "new", method: "auto", wantCode: exitOK,
			stderrHas: []string{"decontam: the kernel problems of benchmark kbench are not matched behaviourally: the --corpus-index rows are not Crucible items"}},
		{name: "index of plain text behavioural", corpus: "text", index: "new", method: "behavioural", wantCode: exitUsage,
			stderrHas: []string{"--method behavioural: the kernel problems of benchmark kbench are not matched behaviourally: the --corpus-index rows are not Crucible items"}},
		{name: "index of items without kernels behavioural", corpus: "rtl", index: "new", method: "behavioural", wantCode: exitUsage,
			stderrHas: []string{"none of the 1 corpus items indexed in the --corpus-index is a CPU kernel stating its arguments"}},
		// An index written before indexes kept kernel items: the note (and
		// the lexical pass, which finds the short kernel structurally).
		{name: "old index auto", corpus: "copy", index: "v3", method: "auto", wantCode: exitFindings,
			stderrHas: []string{"decontam: the kernel problems of benchmark kbench are not matched behaviourally: a --corpus-index keeps RTL designs' interfaces, not kernel items' arguments; check the corpus files with --corpus (index version 3"}},
		{name: "old index behavioural", corpus: "copy", index: "v3", method: "behavioural", wantCode: exitUsage,
			stderrHas: []string{"--method behavioural: the kernel problems of benchmark kbench are not matched behaviourally: a --corpus-index keeps RTL designs' interfaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noCC {
				t.Setenv("PATH", dir)
			}
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"decontam", "check", "--corpus", corpora[tc.corpus], "--benchmark", bench, "--id-field", "item_id", "--out", out,
				"--no-progress", "--workers", "2", "--method", tc.method}
			if tc.index != "" {
				args[2] = "--corpus-index"
				args[3] = buildKernelCorpusIndex(t, corpora[tc.corpus], tc.index == "v3")
				if _, err := exec.LookPath("yosys"); err != nil && tc.index == "v3" {
					// Without Yosys the old index has no interface index
					// either, and the note says behavioural matching is
					// not available for it at all.
					tc.stderrHas = []string{"behavioural matching NOT available for --corpus-index"}
					if tc.method == "behavioural" {
						tc.stderrHas = []string{"--method behavioural: --corpus-index"}
					}
				}
			} else if tc.wantMatch != "" {
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
}

// buildKernelCorpusIndex indexes corpus with `decontam index --side corpus`
// (default method: the kernel index too) and returns the index directory;
// old rewrites it as an index of version 3, written before indexes kept
// kernel items: no kernels.jsonl, no kernel fields in meta.json.
func buildKernelCorpusIndex(t *testing.T, corpus string, old bool) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "cidx")
	stdout, err := runCLI(t, "decontam", "index", "--in", corpus, "--side", "corpus", "--out", idx, "--no-progress")
	if err != nil || !strings.Contains(stdout, "kernel index: ") {
		t.Fatalf("index: %v\n%s", err, stdout)
	}
	if !old {
		return idx
	}
	var m map[string]any
	raw, err := os.ReadFile(filepath.Join(idx, "meta.json"))
	if err != nil || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("meta.json: %v %s", err, raw)
	}
	for k := range m {
		if strings.HasPrefix(k, "kernel") {
			delete(m, k)
		}
	}
	m["version"] = 3
	raw, _ = json.Marshal(m)
	if err := errors.Join(os.WriteFile(filepath.Join(idx, "meta.json"), raw, 0o644), os.Remove(filepath.Join(idx, "kernels.jsonl"))); err != nil {
		t.Fatal(err)
	}
	return idx
}
