package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/internal/testenv"
)

// The README's stage table is `crucible stages --markdown`, so it cannot
// drift from what the types declare.
func TestREADMEStageTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	const begin, end = "<!-- stages:begin", "<!-- stages:end -->"
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("README has no stages:begin/stages:end block")
	}
	block := s[i:j]
	block = block[strings.Index(block, "\n")+1:]
	if want := stagesMarkdown(newRegistry()); block != want {
		t.Fatalf("README stage table is stale; replace it with `crucible stages --markdown`:\n%s", want)
	}
}

// Every product stage type declares its outputs (writing an undeclared kind
// is an error) and a parallelism; test doubles alone use the shorthand.
func TestEveryStageTypeIsDeclared(t *testing.T) {
	reg := newRegistry()
	for _, name := range reg.Types() {
		st, _ := reg.Type(name)
		if len(st.Outputs) == 0 || st.Doc == "" {
			t.Errorf("stage type %s: outputs %v, doc %q: register it with RegisterType and its outputs", name, st.Outputs, st.Doc)
		}
	}
}
