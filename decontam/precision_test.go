package decontam

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/dedup"
)

// boilerHead and boilerTail are shared by every generated design: the
// header, reset branch and trailer most RTL items start and end with.
const boilerHead = "`timescale 1ns / 1ps\n`default_nettype none\n" +
	"module core (input wire clk, input wire rst, input wire [7:0] a, input wire [7:0] b, output reg [7:0] q, output reg valid);\n" +
	"  always @(posedge clk) begin\n    if (rst) begin\n      q <= 8'd0;\n      valid <= 1'b0;\n    end else begin\n"
const boilerTail = "    end\n  end\nendmodule\n"

// design returns boilerplate around a body of three statements specific to
// k: own register names, own constants, operators drawn from k's stream.
func design(k int) string {
	r := rand.New(rand.NewPCG(uint64(k), 7))
	ops := []string{"&", "|", "^", "+", "-"}
	var b strings.Builder
	b.WriteString(boilerHead)
	for i := range 3 {
		fmt.Fprintf(&b, "      r%d_%d <= (a %s b) %s 8'd%d;\n", k, i, ops[r.IntN(5)], ops[r.IntN(5)], 3*k+i)
	}
	b.WriteString(boilerTail)
	return b.String()
}

func rec(id, field, text string) dedup.Record {
	return dedup.Record{ID: id, Fields: []dedup.Field{{Name: field, Text: text}}}
}

// flagged returns corpus id → benchmark ids it is contaminated with.
func flagged(ms []Match) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		if m.Contaminated {
			out[m.CorpusID] = append(out[m.CorpusID], m.BenchmarkID)
		}
	}
	return out
}

func persistedIndex(t *testing.T, cfg Config, side string, src Source) *Index {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	if _, err := BuildIndex(context.Background(), cfg, dir, "t", side, src); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// TestDocFreqSuppressesBoilerplate: a corpus design sharing only the
// boilerplate of 20 benchmark designs is not contamination, a copy of one
// of them is; without suppression (max_doc_freq 1) the boilerplate alone
// scores as contamination, so the test can fail. Both directions, with a
// persisted index.
func TestDocFreqSuppressesBoilerplate(t *testing.T) {
	var bench RecordSlice
	for k := range 20 {
		bench = append(bench, rec(fmt.Sprintf("b%02d", k), "ref", design(k)))
	}
	corpus := RecordSlice{rec("boiler", "reference", design(100)), rec("copy", "reference", design(7))}
	for _, maxDF := range []float64{DefaultMaxDocFreq, 1} {
		cfg := DefaultConfig()
		cfg.MaxDocFreq = maxDF
		fwd, _ := check(t, persistedIndex(t, cfg, SideBenchmark, bench), corpus)
		rev, _ := check(t, persistedIndex(t, cfg, SideCorpus, corpus), bench)
		for dir, ms := range map[string][]Match{"forward": fwd, "reverse": rev} {
			got := flagged(ms)
			if !slices.Contains(got["copy"], "b07") || maxDF < 1 && len(got["copy"]) != 1 {
				t.Errorf("max_doc_freq=%v %s: copy of b07 flagged as %v", maxDF, dir, got["copy"])
			}
			if maxDF < 1 && len(got["boiler"]) > 0 {
				t.Errorf("max_doc_freq=%v %s: boilerplate-only design flagged as %v", maxDF, dir, got["boiler"])
			}
			if maxDF == 1 && len(got["boiler"]) != 20 {
				t.Errorf("max_doc_freq=1 %s: boilerplate-only design flagged against %d items, want all 20 (else this test proves nothing)", dir, len(got["boiler"]))
			}
		}
	}
}

// TestDocFreqCorpusSide: with a corpus index, grams common in the corpus are
// suppressed too, although the benchmark (one item) cannot know them as
// common.
func TestDocFreqCorpusSide(t *testing.T) {
	var corpus RecordSlice
	for k := range 20 {
		corpus = append(corpus, rec(fmt.Sprintf("c%02d", k), "reference", design(k)))
	}
	corpus = append(corpus, rec("copy", "reference", design(50)))
	bench := RecordSlice{rec("item", "ref", design(50))}
	for _, maxDF := range []float64{DefaultMaxDocFreq, 1} {
		cfg := DefaultConfig()
		cfg.MaxDocFreq = maxDF
		got := flagged(func() []Match { ms, _ := check(t, persistedIndex(t, cfg, SideCorpus, corpus), bench); return ms }())
		if !slices.Equal(got["copy"], []string{"item"}) {
			t.Errorf("max_doc_freq=%v: copy flagged as %v", maxDF, got["copy"])
		}
		want := 0
		if maxDF == 1 {
			want = 20
		}
		if n := len(got) - 1; n != want {
			t.Errorf("max_doc_freq=%v: %d boilerplate-only corpus designs flagged, want %d: %v", maxDF, n, want, got)
		}
	}
}

func TestMaxDocFreqValidated(t *testing.T) {
	for _, v := range []float64{0, -0.1, 1.5} {
		c := DefaultConfig()
		c.MaxDocFreq = v
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max_doc_freq") {
			t.Errorf("max_doc_freq=%v: %v", v, err)
		}
	}
	// A persisted index keeps its suppression: another request is refused.
	c := DefaultConfig()
	c.MaxDocFreq = 1
	if err := compatible(DefaultConfig(), c); err == nil || !strings.Contains(err.Error(), "max_doc_freq") {
		t.Errorf("compatible: %v", err)
	}
}

// TestShortItemsMatchWhole: a benchmark item shorter than the n-gram (but at
// least min_tokens long) matches as its whole normalised text, inside a
// longer corpus text, across case, spacing and comments; one changed token
// breaks it.
func TestShortItemsMatchWhole(t *testing.T) {
	bench := RecordSlice{rec("short", "ref", "assign out = (a & b) | c;"), rec("long", "ref", design(1))}
	ix := persistedIndex(t, DefaultConfig(), SideBenchmark, bench)
	if !slices.Contains(ix.Meta.Lens, 11) {
		t.Fatalf("index lens %v lack the short item's 11 tokens", ix.Meta.Lens)
	}
	corpus := RecordSlice{
		rec("same", "reference", "Here is the gate:\n// combine\nASSIGN   OUT=(A&B)|C; /* done */\nThat is all there is to it."),
		rec("changed", "reference", "Here is the gate:\nassign out = (a & b) ^ c;\nThat is all there is to it."),
	}
	ms, _ := check(t, ix, corpus)
	var same *Match
	for i, m := range ms {
		if m.BenchmarkID == "short" && m.CorpusID == "same" {
			same = &ms[i]
		}
		if m.BenchmarkID == "short" && m.CorpusID == "changed" && m.Contaminated {
			t.Errorf("one token changed, still flagged: %+v", m)
		}
	}
	if same == nil || !same.Contaminated || same.LexicalOverlap != 1 || len(same.Spans) != 1 {
		t.Fatalf("short item not matched whole: %+v", same)
	}
	if ex := corpus[0].Fields[0].Text[same.Spans[0].Start:same.Spans[0].End]; ex != "ASSIGN   OUT=(A&B)|C" && ex != "ASSIGN   OUT=(A&B)|C;" {
		t.Errorf("span %q", ex)
	}
}

// TestSharedWith: a match whose matched text is held by other benchmark
// items names them; a match specific to its item names none. Both
// directions.
func TestSharedWith(t *testing.T) {
	bench := RecordSlice{rec("b1", "ref", design(1)), rec("b2", "ref", design(2)),
		rec("dupA", "ref", design(9)), rec("dupB", "ref", design(9)), rec("b3", "ref", design(3))}
	corpus := RecordSlice{rec("c-dup", "reference", design(9)), rec("c-b2", "reference", design(2))}
	cfg := DefaultConfig()
	fwd, sum := check(t, persistedIndex(t, cfg, SideBenchmark, bench), corpus)
	rev, _ := check(t, persistedIndex(t, cfg, SideCorpus, corpus), bench)
	want := map[string][]string{"c-dup/dupA": {"dupB"}, "c-dup/dupB": {"dupA"}, "c-b2/b2": nil}
	for dir, ms := range map[string][]Match{"forward": fwd, "reverse": rev} {
		got := map[string][]string{}
		for _, m := range ms {
			if m.Contaminated {
				got[m.CorpusID+"/"+m.BenchmarkID] = m.SharedWith
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: contaminated %v, want %v", dir, got, want)
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || !slices.Equal(g, w) {
				t.Errorf("%s: %s shared_with %v, want %v", dir, k, g, w)
			}
		}
	}
	if !strings.Contains(sum.String(), "span also in 1 other benchmark item (dupB)") {
		t.Errorf("summary does not say the span is shared:\n%s", sum)
	}
}

// TestDamagedGramsRefused: a grams.bin record naming an entry the index
// lacks is an input error naming the file and record, in memory and on disk.
func TestDamagedGramsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	if _, err := BuildIndex(context.Background(), DefaultConfig(), dir, "t", SideBenchmark, RecordSlice{rec("b1", "ref", design(1))}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, gramsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[16+8] = 9 // record 2 names entry 9
	os.WriteFile(p, b, 0o644)
	for _, mem := range []int64{inMemoryGramBytes, 0} {
		old := inMemoryGramBytes
		inMemoryGramBytes = mem
		_, err := Open(dir)
		inMemoryGramBytes = old
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "record 2") {
			t.Errorf("in-memory limit %d: %v", mem, err)
		}
	}
}

// TestVerilogEvalSuppression: on the VerilogEval self-check (references as
// corpus, prompt+ref as benchmark) the default max_doc_freq keeps every
// reference flagged as its own item at score 1, suppresses some n-gram keys
// and flags fewer references against other items than no suppression does.
// The figures are logged (README/issue 19).
func TestVerilogEvalSuppression(t *testing.T) {
	path := filepath.Join(datasets(t), "verilog-eval", "spec-to-rtl.jsonl")
	suite := readAll(t, path, "id", "prompt", "ref")
	corpus := readAll(t, path, "id", "ref")
	cross := map[float64]int{}
	for _, maxDF := range []float64{1, DefaultMaxDocFreq} {
		cfg := DefaultConfig()
		cfg.MaxDocFreq = maxDF
		ix := benchIndex(t, cfg, "ve", suite)
		ms, _ := check(t, ix, corpus)
		own := map[string]bool{}
		for _, m := range ms {
			switch {
			case m.BenchmarkID == m.CorpusID && m.BenchmarkField == "ref" && m.Score == 1:
				own[m.CorpusID] = true
			case m.BenchmarkID != m.CorpusID && m.Contaminated:
				cross[maxDF]++
			}
		}
		if len(own) != len(corpus) {
			t.Errorf("max_doc_freq=%v: %d of %d references flagged as their own item at score 1", maxDF, len(own), len(corpus))
		}
		if maxDF < 1 && ix.Meta.Common == 0 {
			t.Errorf("max_doc_freq=%v: no n-gram suppressed", maxDF)
		}
		t.Logf("max_doc_freq=%v: %d n-gram keys suppressed; own reference flagged %d/%d; %d contaminated matches against another item",
			maxDF, ix.Meta.Common, len(own), len(corpus), cross[maxDF])
	}
	if cross[DefaultMaxDocFreq] >= cross[1] {
		t.Errorf("suppression did not reduce cross-item matches: %v", cross)
	}
}
