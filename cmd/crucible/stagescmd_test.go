package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
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
		if len(st.Outputs) == 0 || st.Doc == "" || len(configKeys(reflect.TypeOf(st.Config))) == 0 {
			t.Errorf("stage type %s: outputs %v, doc %q, config %T: register it with RegisterType, its outputs and its config type", name, st.Outputs, st.Doc, st.Config)
		}
		// An unknown key is refused by the stage's own decoder, so the
		// declared config type is the one that decodes: every declared key
		// must not be reported as unknown.
		for _, key := range configKeys(reflect.TypeOf(st.Config)) {
			sc, err := engine.NewStageConfig(name, key+": null")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Build(name, sc); err != nil && strings.Contains(err.Error(), "not found in type") {
				t.Errorf("stage type %s: declared config key %q is unknown to its decoder: %v", name, key, err)
			}
		}
	}
}
