package selection

import (
	"errors"
	"testing"
)

func TestExtract(t *testing.T) {
	const twoBlocks = "think\n```verilog\nmodule a; endmodule\n```\nmore\n```python\nprint(1)\n```\n"
	cases := []struct {
		name string
		cfg  ExtractConfig
		in   string
		want string
		fail bool
	}{
		{"last fenced wins by default", DefaultExtractConfig(), twoBlocks, "print(1)", false},
		{"first fenced", ExtractConfig{Mode: ExtractFenced, Pick: PickFirst}, twoBlocks, "module a; endmodule", false},
		{"language filter", ExtractConfig{Mode: ExtractFenced, Pick: PickLast, Languages: []string{"Verilog", "sv"}}, twoBlocks, "module a; endmodule", false},
		{"untagged block passes language filter", ExtractConfig{Mode: ExtractFenced, Pick: PickLast, Languages: []string{"verilog"}}, "```\nx\n```", "x", false},
		{"answer tag beats fences in auto", DefaultExtractConfig(), twoBlocks + "<answer>final</answer>", "final", false},
		{"fence inside answer tag is unwrapped", DefaultExtractConfig(), "<answer>\n```verilog\nmodule b;\nendmodule\n```\n</answer>", "module b;\nendmodule", false},
		{"answer tag mode ignores fences", ExtractConfig{Mode: ExtractAnswerTag, Pick: PickLast}, twoBlocks, "", true},
		{"multiple answer tags, first", ExtractConfig{Mode: ExtractAnswerTag, Pick: PickFirst}, "<answer>1</answer> <ANSWER>2</ANSWER>", "1", false},
		{"tilde fence and longer closer", DefaultExtractConfig(), "~~~~\ncode ```\n~~~~~\n", "code ```", false},
		{"unclosed block is not an answer", DefaultExtractConfig(), "```verilog\nmodule cut", "", true},
		{"empty block is not an answer", DefaultExtractConfig(), "```\n   \n```", "", true},
		{"no block", DefaultExtractConfig(), "I think the answer is 4.", "", true},
		{"regexp named group", ExtractConfig{Mode: ExtractRegexp, Pick: PickLast, Pattern: `BEGIN(?P<answer>.*?)END`}, "BEGIN x END BEGIN y\nz END", " y\nz ", false},
		{"regexp first group", ExtractConfig{Mode: ExtractRegexp, Pick: PickFirst, Pattern: `<<(.*?)>>`}, "<<a>> <<b>>", "a", false},
		{"regexp no match", ExtractConfig{Mode: ExtractRegexp, Pick: PickFirst, Pattern: `<<(.*?)>>`}, "nothing", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := NewExtractor(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Extract(c.in)
			if c.fail {
				if !errors.Is(err, ErrNoAnswer) {
					t.Fatalf("want ErrNoAnswer, got %q, %v", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestExtractConfigValidateReportsEveryField(t *testing.T) {
	err := ExtractConfig{Mode: "xml", Pick: "middle"}.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"extract.mode", "extract.pick"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if err := (ExtractConfig{Mode: ExtractRegexp, Pick: PickLast, Pattern: "("}).Validate(); err == nil || !contains(err.Error(), "extract.pattern") {
		t.Errorf("bad pattern not reported: %v", err)
	}
}
