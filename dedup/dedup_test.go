package dedup

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func norm(t *testing.T, text string, lang Lang) string {
	t.Helper()
	var tok Tokens
	Tokenize(text, TokenizeOptions{Lang: lang, StripComments: true}, &tok)
	return string(tok.Normalized())
}

func TestTokenizeCodeAware(t *testing.T) {
	a := "module top(input a, output y); // comment\n  assign y = ~a; /* block\n comment */ endmodule"
	b := "module top (input a,output y);\n\n\tassign y=~a;\nendmodule // trailing"
	if na, nb := norm(t, a, LangAuto), norm(t, b, LangAuto); na != nb {
		t.Fatalf("verilog normalisation differs:\n%q\n%q", na, nb)
	}
	if got := norm(t, "assign y = 8'hFF;", LangVerilog); got != "assign y = 8'hFF ;" {
		t.Fatalf("verilog literal: %q", got)
	}
	py := "def f(x):  # add one\n    return x // 2  # floor\ns = '# not a comment'"
	if got := norm(t, py, LangAuto); got != "def f ( x ) : return x / / 2 s = '# not a comment'" {
		t.Fatalf("python: %q", got)
	}
	doc := "def f(x):\n    \"\"\"Add one.\n    Long docstring.\"\"\"\n    y = \"\"\"kept\"\"\"\n    return x + 1"
	if got := norm(t, doc, LangPython); got != "def f ( x ) : y = \"\"\"kept\"\"\" return x + 1" {
		t.Fatalf("python docstring: %q", got)
	}
	c := "int x = 1; // c\nchar *s = \"// kept\"; /* gone */"
	if got := norm(t, c, LangC); got != "int x = 1 ; char * s = \"// kept\" ;" {
		t.Fatalf("c: %q", got)
	}
	if norm(t, "assign y = a;", LangVerilog) == norm(t, "assign z = a;", LangVerilog) {
		t.Fatal("identifiers must be kept: renamed signal normalised to the same text")
	}
}

func TestChooseBands(t *testing.T) {
	b, err := ChooseBands(128, 0.8, DefaultFPWeight, DefaultFNWeight)
	if err != nil {
		t.Fatal(err)
	}
	if b.B*b.R > 128 || b.PAtThreshold < 0.9 {
		t.Fatalf("default banding %v: want P(0.8) ≥ 0.9", b)
	}
	eq, _ := ChooseBands(128, 0.8, 0.5, 0.5)
	if eq.B != 9 || eq.R != 13 || eq.PAtThreshold > 0.45 {
		t.Fatalf("equal weights gave %v, want the 9×13 choice with P(0.8)≈0.40", eq)
	}
	if _, err := ChooseBands(128, 1.2, 1, 1); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad threshold: %v", err)
	}
}

// TestSignatureUnbiased checks the OPH estimator's mean against true
// Jaccard over many seeds, for small sets (heavy densification) and large.
func TestSignatureUnbiased(t *testing.T) {
	for _, size := range []int{40, 400} {
		for _, want := range []float64{0.3, 0.8} {
			// |A∩B| = c, |A∪B| = size → J = c/size.
			c := int(want * float64(size))
			r := rand.New(rand.NewPCG(1, 2))
			common := make([]uint64, c)
			for i := range common {
				common[i] = r.Uint64()
			}
			a := append([]uint64{}, common...)
			b := append([]uint64{}, common...)
			for i := c; i < size; i++ {
				if i%2 == 0 {
					a = append(a, r.Uint64())
				} else {
					b = append(b, r.Uint64())
				}
			}
			j := ExactJaccard(SortedSet(append([]uint64{}, a...)), SortedSet(append([]uint64{}, b...)))
			sum := 0.0
			const seeds = 300
			for s := range seeds {
				sg := Signer{K: 128, Seed: uint64(s)*7919 + 1}
				sum += Estimate(sg.Sign(a, nil), sg.Sign(b, nil))
			}
			mean := sum / seeds
			if math.Abs(mean-j) > 0.015 {
				t.Errorf("size %d J=%.3f: mean estimate %.4f", size, j, mean)
			}
		}
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := DefaultConfig()
	c.Threshold = 2
	c.NumPerm = 1
	c.Shingle = "line"
	c.Verify = "maybe"
	err := c.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("want ErrConfig, got %v", err)
	}
	for _, f := range []string{"threshold", "num_perm", "shingle", "verify"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

// runPlanted deduplicates a synthetic corpus and checks it against the
// planted truth: every planted pair with true Jaccard ≥ 0.85 ends in one
// cluster, and no cluster joins documents of different planted families.
func runPlanted(t *testing.T, cfg Config, n int) *Result {
	t.Helper()
	sc := DefaultSynthConfig(n)
	sc.ExactFrac = 0.1
	syn := NewSynth(sc)
	res, err := Run(context.Background(), syn, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Close)
	planted := syn.Planted(cfg)
	if len(planted) < n/20 {
		t.Fatalf("only %d planted pairs", len(planted))
	}
	missed, strong := 0, 0
	for _, p := range planted {
		if p.Jaccard < 0.85 {
			continue
		}
		strong++
		if res.root[p.Base] != res.root[p.Dup] {
			missed++
		}
	}
	// P(detect) > 0.99 at J = 0.85 with the default banding: allow 1%.
	if strong == 0 || missed*100 > strong {
		t.Errorf("%s: missed %d of %d planted pairs with J ≥ 0.85", cfg.Backend, missed, strong)
	}
	family := func(i int) int {
		if b := syn.Base(i); b >= 0 {
			return b
		}
		return i
	}
	for i := range res.Len() {
		d := res.Decision(i)
		if d.Kept {
			continue
		}
		s := res.survivor[res.root[i]]
		if family(i) != family(int(s)) {
			t.Errorf("%s: %s removed as duplicate of unrelated %s", cfg.Backend, d.ID, d.SurvivorID)
		}
	}
	if res.Stats.Removed == 0 || res.Stats.ExactPairs == 0 {
		t.Errorf("stats: %+v", res.Stats)
	}
	return res
}

func TestPlantedNearDuplicatesBothBackends(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Backend = BackendMemory
	mem := runPlanted(t, cfg, 3000)
	cfg.Backend = BackendDisk
	cfg.RunBytes = 1 << 16 // force many spilled runs
	disk := runPlanted(t, cfg, 3000)
	for i := range mem.Len() {
		if a, b := mem.Decision(i), disk.Decision(i); a != b {
			t.Fatalf("backends disagree on doc %d: %+v vs %+v", i, a, b)
		}
	}
	// Output does not depend on the worker count or batch size.
	cfg.Workers, cfg.BatchDocs = 3, 97
	par := runPlanted(t, cfg, 3000)
	for i := range mem.Len() {
		if a, b := mem.Decision(i), par.Decision(i); a != b {
			t.Fatalf("3 workers disagree on doc %d: %+v vs %+v", i, a, b)
		}
	}
	cfg.Verify = VerifySignature
	runPlanted(t, cfg, 1000)
}

func TestSurvivorPriorityAndExactReason(t *testing.T) {
	body := "module add(input [3:0] a, b, output [4:0] y);\n  assign y = a + b;\nendmodule\n"
	docs := SliceSource{
		{ID: "late-copy", Text: "// a comment\n" + body, Tier: TierOther},
		{ID: "root", Text: strings.ReplaceAll(body, "\n", "\n\n"), Tier: TierLineageRoot},
		{ID: "verified", Text: body + "/* trailing */", Tier: TierVerifiedReference},
		{ID: "other", Text: "module mul(input [3:0] a, b, output [7:0] y);\n  assign y = a * b;\nendmodule\n"},
		{ID: "empty1", Text: "  // only a comment\n"},
		{ID: "empty2", Text: ""},
	}
	res, err := Run(context.Background(), docs, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Close)
	want := map[string]Decision{
		"late-copy": {Kept: false, SurvivorID: "verified", Reason: ReasonExactDuplicate, ClusterSize: 3},
		"root":      {Kept: false, SurvivorID: "verified", Reason: ReasonExactDuplicate, ClusterSize: 3},
		"verified":  {Kept: true, SurvivorID: "verified", ClusterSize: 3},
		"other":     {Kept: true, SurvivorID: "other", ClusterSize: 1},
		"empty1":    {Kept: true, SurvivorID: "empty1", ClusterSize: 2},
		"empty2":    {Kept: false, SurvivorID: "empty1", Reason: ReasonExactDuplicate, ClusterSize: 2},
	}
	for i := range res.Len() {
		d := res.Decision(i)
		w := want[d.ID]
		if d.Kept != w.Kept || d.SurvivorID != w.SurvivorID || d.Reason != w.Reason || d.ClusterSize != w.ClusterSize {
			t.Errorf("%s: got %+v want %+v", d.ID, d, w)
		}
		if d.ClusterSize > 1 && d.ClusterID == "" {
			t.Errorf("%s: no cluster id", d.ID)
		}
	}
}

func TestUnrelatedCodeNotPaired(t *testing.T) {
	syn := NewSynth(SynthConfig{N: 2000, DocWords: 60, Vocab: 300, DupFrac: 0, Seed: 7})
	res, err := Run(context.Background(), syn, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Close)
	// Small vocabulary makes short documents share many words, but no two
	// share 80% of their 5-grams.
	if res.Stats.Removed != 0 {
		t.Fatalf("unrelated documents removed: %+v", res.Stats)
	}
}
