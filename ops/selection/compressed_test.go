package selection

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// TestRolloutsReadCompressed: a rollout table shipped as .jsonl.gz or
// .jsonl.zst (or gzip named .jsonl) reads as the plain table does.
func TestRolloutsReadCompressed(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "rollouts", "rollouts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "rollouts.jsonl")
	if err := os.WriteFile(plain, src, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _, err := ReadRollouts(plain)
	if err != nil || len(want) == 0 {
		t.Fatalf("plain: %d rollouts, %v", len(want), err)
	}
	for kind, p := range testenv.CompressedCopies(t, plain) {
		got, _, err := ReadRollouts(p)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d rollouts, %v; want the plain file's %d", kind, len(got), err, len(want))
		}
	}
	for what, p := range testenv.BadInputs(t, dir) {
		if _, _, err := ReadRollouts(p); !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: want an input error naming the file, got %v", what, err)
		}
	}
}
