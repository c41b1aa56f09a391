package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/engine"
)

// contaminatedSet reads a check output's matches: the sorted
// corpus/benchmark/field keys of those flagged contaminated, and all rows.
func contaminatedSet(t *testing.T, dir string) ([]string, int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "matches-*.parquet"))
	ms, err := engine.ReadAll[decontam.Match](files...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.Contaminated {
			out = append(out, m.CorpusID+"|"+m.BenchmarkID+"/"+m.BenchmarkField)
		}
	}
	slices.Sort(out)
	return out, len(ms)
}

// summaryOf drops the trailing "matches…: DIR" line, which names the output.
func summaryOf(s string) string {
	return s[:strings.LastIndex(strings.TrimSuffix(s, "\n"), "\n")+1]
}

// TestDecontamRescore: rescoring one check's matches at T gives the exit
// code, printed summary and contaminated set of a fresh check at T, for two
// values of T on either side of the check's own threshold; --out writes
// exactly that set, which can be rescored again from T up; T below the
// recorded floor is exit 2.
func TestDecontamRescore(t *testing.T) {
	ds := datasetsDir(t)
	ve := filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl")
	dir := t.TempDir()
	check := func(out string, threshold float64) (string, int) {
		o := DecontamCheckOptions{Benchmarks: []string{ve}, IDField: "id", Fields: []string{"prompt", "ref"}, Out: filepath.Join(dir, out),
			Corpus: []string{ve}, CorpusFields: []string{"prompt"}, CorpusIDField: "id",
			Workers: 2, Config: decontam.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &strings.Builder{}}
		o.Config.Threshold = threshold
		err := runDecontamCheck(context.Background(), o)
		return o.Stdout.(*strings.Builder).String(), exitCode(context.Background(), err)
	}
	rescore := func(in string, threshold float64, out string) (string, int, error) {
		o := DecontamRescoreOptions{Dir: filepath.Join(dir, in), Threshold: threshold, Writer: engine.DefaultWriterOptions(), Stdout: &strings.Builder{}}
		if out != "" {
			o.Out = filepath.Join(dir, out)
		}
		err := runDecontamRescore(context.Background(), o)
		return o.Stdout.(*strings.Builder).String(), exitCode(context.Background(), err), err
	}
	// The prompts as corpus: each is flagged against its own item's prompt,
	// with scores spread below 1 against other items' texts.
	if _, code := check("base", 0.5); code != exitFindings {
		t.Fatalf("base check: exit %d", code)
	}
	_, all := contaminatedSet(t, filepath.Join(dir, "base"))
	for _, T := range []float64{0.3, 0.9} {
		name := fmt.Sprintf("fresh-%v", T)
		freshOut, freshCode := check(name, T)
		fresh, _ := contaminatedSet(t, filepath.Join(dir, name))
		got, code, err := rescore("base", T, "rescored-"+name)
		if code != freshCode || summaryOf(got) != summaryOf(freshOut) {
			t.Errorf("T=%v: rescore exit %d (%v), summary\n%s\nfresh check exit %d, summary\n%s", T, code, err, got, freshCode, freshOut)
		}
		re, n := contaminatedSet(t, filepath.Join(dir, "rescored-"+name))
		if len(fresh) == 0 || !slices.Equal(re, fresh) || n != len(re) {
			t.Errorf("T=%v: rescored set %d (of %d rows), fresh check %d contaminated", T, len(re), n, len(fresh))
		}
		t.Logf("T=%v: %d contaminated of %d matches", T, len(fresh), all)
	}
	if a, _ := contaminatedSet(t, filepath.Join(dir, "fresh-0.3")); len(a) == len(func() []string { b, _ := contaminatedSet(t, filepath.Join(dir, "fresh-0.9")); return b }()) {
		t.Errorf("T=0.3 and T=0.9 flag the same %d matches: the comparison cannot tell rescoring apart from copying", len(a))
	}
	// A rescored set is complete from its T up, and only from there.
	if _, code, err := rescore("rescored-fresh-0.3", 0.9, ""); code != exitFindings {
		t.Errorf("rescore of a rescored set: exit %d (%v)", code, err)
	}
	if _, code, err := rescore("rescored-fresh-0.9", 0.5, ""); code != exitUsage || !strings.Contains(err.Error(), "floor 0.9") {
		t.Errorf("below a rescored set's floor: exit %d (%v)", code, err)
	}
	if _, code, err := rescore("base", 0.1, ""); code != exitUsage || !strings.Contains(err.Error(), "floor 0.2") || !strings.Contains(err.Error(), "--report-min") {
		t.Errorf("below the check's report_min: exit %d (%v)", code, err)
	}
	if _, code, err := rescore("nothing-here", 0.5, ""); code != exitInput {
		t.Errorf("not a check output: exit %d (%v)", code, err)
	}
	if _, code, _ := rescore("base", 0.5, "base"); code != exitUsage {
		t.Errorf("--out equal to DIR: exit %d", code)
	}
	// Through the command line: the argument and a required threshold.
	if out, err := runCLI(t, "decontam", "rescore", filepath.Join(dir, "base"), "--threshold", "1"); exitCode(context.Background(), err) != exitFindings || !strings.Contains(out, "score ≥ 1.00") {
		t.Errorf("CLI rescore: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "decontam", "rescore", filepath.Join(dir, "base")); exitCode(context.Background(), err) != exitUsage {
		t.Errorf("CLI rescore without --threshold: %v", err)
	}
	if _, err := runCLI(t, "decontam", "check", "--corpus", ve, "--benchmark", ve, "--out", filepath.Join(dir, "bad"), "--max-doc-freq", "0", "--no-progress"); exitCode(context.Background(), err) != exitUsage || !strings.Contains(err.Error(), "max_doc_freq") {
		t.Errorf("--max-doc-freq 0: %v", err)
	}
}
