package decontam

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/internal/testenv"
)

// datasets returns ../shared/datasets relative to the repository root.
func datasets(t *testing.T) string {
	t.Helper()
	return filepath.Dir(filepath.Dir(testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl")))
}

func readAll(t *testing.T, path, idField string, fields ...string) RecordSlice {
	t.Helper()
	var out RecordSlice
	err := dedup.ScanRecords(context.Background(), path, idField, fields, func(r dedup.Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func benchIndex(t *testing.T, cfg Config, name string, src Source) *Index {
	t.Helper()
	ix, cleanup, err := BuildTempIndex(context.Background(), cfg, t.TempDir(), name, SideBenchmark, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return ix
}

func check(t *testing.T, ix *Index, src Source) ([]Match, Summary) {
	t.Helper()
	var ms []Match
	s, err := Check(context.Background(), ix, src, 2, func(m Match) error { ms = append(ms, m); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return ms, s
}

// TestVerilogEvalReferencesAllFlagged ingests the VerilogEval references as
// a corpus and checks it against the VerilogEval suite (prompt + ref).
func TestVerilogEvalReferencesAllFlagged(t *testing.T) {
	ds := datasets(t)
	path := filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl")
	suite := readAll(t, path, "id", "prompt", "ref")
	ix := benchIndex(t, DefaultConfig(), "verilog-eval/spec-to-rtl", suite)
	corpus := readAll(t, path, "id", "ref")
	ms, sum := check(t, ix, corpus)
	own := map[string]bool{}
	for _, m := range ms {
		if m.Contaminated && m.BenchmarkID == m.CorpusID && m.BenchmarkField == "ref" {
			own[m.CorpusID] = true
			if len(m.Spans) == 0 || m.Excerpt == "" {
				t.Errorf("%s: flagged without spans", m.CorpusID)
			}
		}
	}
	for _, r := range corpus {
		if !own[r.ID] {
			t.Errorf("%s: reference not flagged against its own benchmark item", r.ID)
		}
	}
	if sum.CorpusItems != len(corpus) {
		t.Errorf("summary: %d contaminated corpus items, want %d\n%s", sum.CorpusItems, len(corpus), sum)
	}
	t.Log(sum.String())

	// Reverse direction: the references as a persisted corpus index, the
	// suite checked against it.
	dir := filepath.Join(t.TempDir(), "corpus-index")
	if _, err := BuildIndex(context.Background(), DefaultConfig(), dir, "refs", SideCorpus, corpus); err != nil {
		t.Fatal(err)
	}
	cix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cix.Close()
	refsOnly := readAll(t, path, "id", "ref")
	rms, _ := check(t, cix, refsOnly)
	rev := map[string]bool{}
	for _, m := range rms {
		if m.Contaminated && m.BenchmarkID == m.CorpusID {
			rev[m.BenchmarkID] = true
		}
	}
	if len(rev) != len(refsOnly) {
		t.Errorf("reverse check flagged %d of %d benchmark items", len(rev), len(refsOnly))
	}
}

// TestUnrelatedNotFlagged: KernelBench PyTorch programs are not
// contamination of VerilogEval, nor the reverse.
func TestUnrelatedNotFlagged(t *testing.T) {
	ds := datasets(t)
	ve := readAll(t, filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl"), "id", "prompt", "ref")
	kb := readAll(t, filepath.Join(ds, "kernelbench", "level1.jsonl"), "id", "code")
	_, s := check(t, benchIndex(t, DefaultConfig(), "ve", ve), kb)
	if s.Contaminated != 0 {
		t.Errorf("KernelBench flagged against VerilogEval:\n%s", s)
	}
	_, s = check(t, benchIndex(t, DefaultConfig(), "kb", kb), ve)
	if s.Contaminated != 0 {
		t.Errorf("VerilogEval flagged against KernelBench:\n%s", s)
	}
}

var identRe = regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)

// disguise renames every non-keyword identifier, reorders the port list,
// rewrites whitespace, adds comments and embeds the result in a longer
// instruction.
func disguise(ref string) string {
	names := map[string]string{}
	renamed := identRe.ReplaceAllStringFunc(ref, func(w string) string {
		if keywords[strings.ToLower(w)] {
			return w
		}
		if n, ok := names[w]; ok {
			return n
		}
		n := "sig_" + string(rune('a'+len(names)%26)) + strings.Repeat("x", len(names)/26)
		names[w] = n
		return n
	})
	// Reorder the port list of the module header.
	open := strings.Index(renamed, "(")
	closeIdx := strings.Index(renamed, ");")
	if open > 0 && closeIdx > open {
		ports := strings.Split(renamed[open+1:closeIdx], ",")
		for i, j := 0, len(ports)-1; i < j; i, j = i+1, j-1 {
			ports[i], ports[j] = ports[j], ports[i]
		}
		renamed = renamed[:open+1] + strings.Join(ports, ",") + renamed[closeIdx:]
	}
	renamed = strings.ReplaceAll(renamed, ";\n", "; // step\n")
	renamed = strings.ReplaceAll(renamed, "  ", "\t")
	return "You are an expert hardware engineer. Study the following design carefully, then write a " +
		"testbench for it that covers every state and reports mismatches.\n\n```verilog\n" + renamed +
		"\n```\nExplain your reasoning before the code."
}

func TestDisguisedBenchmarkItemCaught(t *testing.T) {
	ds := datasets(t)
	path := filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl")
	suite := readAll(t, path, "id", "prompt", "ref")
	ix := benchIndex(t, DefaultConfig(), "ve", suite)
	byID := map[string]dedup.Record{}
	for _, r := range suite {
		byID[r.ID] = r
	}
	field := func(id, f string) string {
		for _, x := range byID[id].Fields {
			if x.Name == f {
				return x.Text
			}
		}
		t.Fatalf("%s has no %s", id, f)
		return ""
	}
	// Sequential designs with enough body to survive disguise.
	var cases RecordSlice
	var want []string
	for _, id := range []string{"Prob144_conwaylife", "Prob127_lemmings1", "Prob140_fsm_hdlc", "Prob089_ece241_2014_q5a"} {
		if _, ok := byID[id]; !ok {
			t.Fatalf("dataset lacks %s", id)
		}
		cases = append(cases, dedup.Record{ID: "disguised-" + id, Fields: []dedup.Field{{Name: "instruction", Text: disguise(field(id, "ref"))}}})
		want = append(want, id)
	}
	// A benchmark prompt embedded in a longer instruction.
	p := field("Prob030_popcount255", "prompt")
	cases = append(cases, dedup.Record{ID: "embedded-prompt", Fields: []dedup.Field{{Name: "instruction",
		Text: "Solve the following task step by step and show your work.\n" + strings.ToUpper(p[:1]) + p[1:] + "\nUse only synthesizable constructs."}}})
	want = append(want, "Prob030_popcount255")
	ms, _ := check(t, ix, cases)
	for i, c := range cases {
		found := false
		for _, m := range ms {
			if m.CorpusID == c.ID && m.BenchmarkID == want[i] && m.Contaminated {
				found = true
				t.Logf("%s caught: %s score %.2f (lex %.2f struct %.2f minhash %.2f)", c.ID, m.Method, m.Score, m.LexicalOverlap, m.StructuralOverlap, m.MinhashSimilarity)
			}
		}
		if !found {
			t.Errorf("%s not caught as %s", c.ID, want[i])
			for _, m := range ms {
				if m.CorpusID == c.ID {
					t.Logf("  got %s/%s %.2f", m.BenchmarkID, m.BenchmarkField, m.Score)
				}
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.NGram = 1
	c.Threshold = 0
	c.Lang = "cobol"
	err := c.Validate()
	for _, f := range []string{"ngram", "threshold", "lang"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

// TestDiskLookupMatchesMemory forces the on-disk gram search (fence index,
// signatures read by offset) and checks it reports exactly what the
// in-memory index reports.
func TestDiskLookupMatchesMemory(t *testing.T) {
	ds := datasets(t)
	path := filepath.Join(ds, "verilog-eval", "code-complete-iccad2023.jsonl")
	suite := readAll(t, path, "id", "prompt", "ref")
	corpus := readAll(t, filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl"), "id", "ref")
	dir := filepath.Join(t.TempDir(), "ix")
	if _, err := BuildIndex(context.Background(), DefaultConfig(), dir, "cc", SideBenchmark, suite); err != nil {
		t.Fatal(err)
	}
	run := func() []Match {
		ix, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		ms, _ := check(t, ix, corpus)
		return ms
	}
	mem := run()
	old := inMemoryGramBytes
	inMemoryGramBytes = 0
	defer func() { inMemoryGramBytes = old }()
	disk := run()
	if len(mem) == 0 || len(mem) != len(disk) {
		t.Fatalf("memory %d matches, disk %d", len(mem), len(disk))
	}
	for i := range mem {
		a, b := mem[i], disk[i]
		if a.CorpusID != b.CorpusID || a.BenchmarkID != b.BenchmarkID || a.BenchmarkField != b.BenchmarkField || a.Score != b.Score {
			t.Fatalf("match %d differs: %+v vs %+v", i, a, b)
		}
	}
}

var pyIdentRe = regexp.MustCompile(`(^|[^.\w])([A-Za-z_][A-Za-z0-9_]*)`)

// TestDisguisedKernelBenchItemCaught renames the variables of a KernelBench
// program (API names after '.' stay: they are the task), rewrites comments
// and docstrings and checks it is still caught.
func TestDisguisedKernelBenchItemCaught(t *testing.T) {
	ds := datasets(t)
	suite := readAll(t, filepath.Join(ds, "kernelbench", "level2.jsonl"), "id", "code")
	ix := benchIndex(t, DefaultConfig(), "kernelbench-level2", suite)
	orig := suite[7]
	src := orig.Fields[0].Text
	names := map[string]string{}
	renamed := pyIdentRe.ReplaceAllStringFunc(src, func(m string) string {
		sub := pyIdentRe.FindStringSubmatch(m)
		w := sub[2]
		if keywords[strings.ToLower(w)] {
			return m
		}
		if _, ok := names[w]; !ok {
			names[w] = "v" + strings.Repeat("q", len(names)%7) + string(rune('a'+len(names)%26))
		}
		return sub[1] + names[w]
	})
	renamed = strings.ReplaceAll(renamed, "\n", "  # rewritten\n")
	doc := dedup.Record{ID: "kernel-rewrite", Fields: []dedup.Field{{Name: "reference", Text: renamed}}}
	ms, _ := check(t, ix, RecordSlice{doc})
	for _, m := range ms {
		if m.BenchmarkID == orig.ID && m.Contaminated {
			t.Logf("caught via %s: score %.2f (lex %.2f struct %.2f minhash %.2f)", m.Method, m.Score, m.LexicalOverlap, m.StructuralOverlap, m.MinhashSimilarity)
			return
		}
	}
	t.Fatalf("renamed %s not caught; matches %+v", orig.ID, ms)
}

// An index build that fails before it finishes publishes nothing: every
// file is built in a .build-* directory and renamed in only at Finish, with
// meta.json last, and the next build into the directory clears the dead
// build's directory and succeeds.
func TestIndexBuildPublishesOnlyWhenComplete(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	b, err := NewBuilder(cfg, dir, "bench", SideBenchmark)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add("p1", "text", "module m(input a, output y); assign y = ~a; endmodule"); err != nil {
		t.Fatal(err)
	}
	// The build dies here (no Finish): what is in dir is its temp dir only.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".build-") {
			t.Fatalf("an unfinished build left %s in the index directory", e.Name())
		}
	}
	b.entF.Close()
	b.sigF.Close()
	b2, err := NewBuilder(cfg, dir, "bench", SideBenchmark)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Add("p1", "text", "module m(input a, output y); assign y = ~a; endmodule"); err != nil {
		t.Fatal(err)
	}
	if err := b2.Finish(); err != nil {
		t.Fatal(err)
	}
	var names []string
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{entriesFile, gramsFile, metaFile, sigsFile}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("index directory holds %v, want %v (the dead build's directory removed)", names, want)
	}
	if ix, err := Open(dir); err != nil {
		t.Fatalf("the finished index does not open: %v", err)
	} else {
		ix.Close()
	}
}
