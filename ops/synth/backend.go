package synth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// Backend names.
const (
	BackendReal       = "real"
	BackendWorldModel = "world_model"
	BackendNone       = "none" // no code could be extracted; nothing ran
)

// ErrMalformed says a world model's answers could not be parsed into an
// observation after every retry. The turn falls back to the real backend.
var ErrMalformed = errors.New("world model answer malformed")

// Backend executes a candidate against a bundle and reports an observation.
// A verdict (pass, fail, infrastructure) is an observation, not an error;
// the error is for cancellation and unusable backends.
type Backend interface {
	Name() string
	Execute(ctx context.Context, b *Bundle, item *engine.Item, code string) (Observation, error)
}

// RealBackend runs the real toolchains: the run's judges, one per domain.
type RealBackend struct {
	Judges        *engine.Judges
	MaxDiagnostic int
}

// Name implements Backend.
func (r *RealBackend) Name() string { return BackendReal }

// Execute implements Backend.
func (r *RealBackend) Execute(ctx context.Context, b *Bundle, item *engine.Item, code string) (Observation, error) {
	ev, err := r.Judges.Judge(ctx, *item, engine.Candidate{ItemID: item.ItemID, CandidateID: CandidateID(code), Code: code})
	if err != nil {
		return Observation{}, err
	}
	return ObservationFromEvidence(item.Domain, ev, r.MaxDiagnostic), nil
}

// CandidateID names a candidate by its code.
func CandidateID(code string) string {
	h := sha256.Sum256([]byte(code))
	return "synth-" + hex.EncodeToString(h[:8])
}

// Completer is a multi-turn chat client; *textgen.Chat implements it.
type Completer interface {
	Complete(ctx context.Context, role, itemID string, msgs []textgen.Message) (textgen.Reply, error)
}

// Chat roles used for logs and role models.
const (
	RoleGenerator  = "synth_generator"
	RoleWorldModel = "synth_world_model"
)

// WorldModel predicts observations with a language model prompted with the
// domain tag, the bundle and the code.
type WorldModel struct {
	Chat Completer
	// Retries is how many more times a malformed answer is asked again.
	Retries       int
	MaxDiagnostic int
}

// Name implements Backend.
func (w *WorldModel) Name() string { return BackendWorldModel }

// Execute implements Backend.
func (w *WorldModel) Execute(ctx context.Context, b *Bundle, item *engine.Item, code string) (Observation, error) {
	o, _, err := w.Predict(ctx, b, code)
	return o, err
}

// Predict is Execute that also says how many malformed answers it
// discarded on the way (they are counted per turn and per domain).
func (w *WorldModel) Predict(ctx context.Context, b *Bundle, code string) (Observation, int, error) {
	msgs := WorldModelPrompt(b, code)
	var last error
	malformed := 0
	for attempt := 0; attempt <= w.Retries; attempt++ {
		rep, err := w.Chat.Complete(ctx, RoleWorldModel, b.ItemID, msgs)
		if err != nil {
			return Observation{}, malformed, err
		}
		o, err := ParseWorldModelAnswer(b.Domain, rep.Content, w.MaxDiagnostic)
		if err == nil {
			return o, malformed, nil
		}
		last = err
		malformed++
	}
	return Observation{}, malformed, fmt.Errorf("%w: %s after %d attempts: %v", ErrMalformed, b.ItemID, w.Retries+1, last)
}

// predictor is a world-model backend that reports malformed answers.
type predictor interface {
	Predict(ctx context.Context, b *Bundle, code string) (Observation, int, error)
}

// WorldModelPrompt asks for the observation the real toolchain would give.
// The same text (with the real observation as the answer) is a training
// pair, so a model trained on the pairs sees exactly this prompt.
func WorldModelPrompt(b *Bundle, code string) []textgen.Message {
	sys := fmt.Sprintf("You simulate the %s toolchain (%s) for %s tasks. Predict exactly what verifying the candidate reports. "+
		"Answer with one JSON object only: {\"outcome\": one of %s, \"diagnostic\": the tool output an engineer would read, "+
		"\"mismatches\": int, \"samples\": int}.", b.Toolchain, b.Tag, b.Domain, strings.Join(Vocabulary(b.Domain), "|"))
	var u strings.Builder
	fmt.Fprintf(&u, "## Environment %s (%s)\n\n### Task\n%s\n\n### Interface\n%s\n", b.ID[:12], b.Tag, strings.TrimSpace(b.Instruction), interfaceText(b))
	fmt.Fprintf(&u, "\n### Verifier: %s (harness top %s)\n```\n%s\n```\n", b.VerifierKind, b.HarnessTop, bounded(b.Harness, 6000))
	if b.Reference != "" {
		fmt.Fprintf(&u, "\n### Reference\n```\n%s\n```\n", bounded(b.Reference, 6000))
	}
	fmt.Fprintf(&u, "\n### Candidate\n```\n%s\n```\n", code)
	return []textgen.Message{{Role: "system", Content: sys}, {Role: "user", Content: u.String()}}
}

// WorldModelTarget is the answer a world model should give for o.
func WorldModelTarget(o Observation) string {
	data, _ := json.Marshal(struct {
		Outcome    string `json:"outcome"`
		Diagnostic string `json:"diagnostic"`
		Mismatches int64  `json:"mismatches"`
		Samples    int64  `json:"samples"`
	}{o.Outcome, o.Diagnostic, o.Mismatches, o.Samples})
	return string(data)
}

// ParseWorldModelAnswer reads a world model's JSON answer (the outermost
// braces of the text, so a fenced or chatty answer still parses). An
// outcome outside the domain's vocabulary is malformed.
func ParseWorldModelAnswer(domain, text string, maxDiag int) (Observation, error) {
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return Observation{}, fmt.Errorf("no JSON object in %q", bounded(text, 120))
	}
	var a struct {
		Outcome    string `json:"outcome"`
		Diagnostic string `json:"diagnostic"`
		Mismatches int64  `json:"mismatches"`
		Samples    int64  `json:"samples"`
	}
	if err := json.Unmarshal([]byte(text[i:j+1]), &a); err != nil {
		return Observation{}, fmt.Errorf("answer JSON: %v", err)
	}
	a.Outcome = strings.ToUpper(strings.TrimSpace(a.Outcome))
	if !InVocabulary(domain, a.Outcome) {
		return Observation{}, fmt.Errorf("outcome %q is not in the %s vocabulary", a.Outcome, domain)
	}
	o := Observation{Outcome: a.Outcome, Diagnostic: bounded(strings.TrimSpace(a.Diagnostic), maxDiag), Mismatches: a.Mismatches, Samples: a.Samples}
	o.Status = engine.StatusFail
	if o.Passed() {
		o.Status = engine.StatusPass
	}
	return o, nil
}

func bounded(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return s[:n] + " [truncated]"
}
