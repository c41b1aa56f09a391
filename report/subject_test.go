package report

import (
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// TestSubjectOf: a verify stage's evidence rows are reference self-checks
// or judged candidates by their candidate id (the one verify stage does
// both), whatever the verify stage type; select's are rollouts.
func TestSubjectOf(t *testing.T) {
	for _, c := range []struct{ typ, cand, want string }{
		{"verify", engine.ReferenceCandidateID, SubjectReference},
		{"verify", "cand-1", SubjectCandidate},
		{"verify_rtl", engine.ReferenceCandidateID, SubjectReference},
		{"verify_kernel", "cand-1", SubjectCandidate},
		{"select", "rollout-3", SubjectRollout},
		{"admit", engine.ReferenceCandidateID, SubjectCandidate},
	} {
		if got := subjectOf(c.typ, c.cand); got != c.want {
			t.Errorf("subjectOf(%q, %q) = %q, want %q", c.typ, c.cand, got, c.want)
		}
	}
}
