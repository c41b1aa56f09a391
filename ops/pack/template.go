package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Roles of a trajectory message.
const (
	RoleSystem      = "system"
	RoleUser        = "user"
	RoleAssistant   = "assistant"
	RoleEnvironment = "environment"
)

// KnownRoles lists the roles a trajectory may use.
var KnownRoles = []string{RoleSystem, RoleUser, RoleAssistant, RoleEnvironment}

// Template is a chat template: how messages become text and which parts are
// trained. A message renders as
//
//	Header[role] [ReasoningOpen reasoning ReasoningClose] content Footer[role] MessageEnd Separator
//
// with the reasoning block only when the message has reasoning. For roles in
// TrainRoles everything from the reasoning block through MessageEnd is
// trained; headers, footers and separators are always masked, as is every
// token of the other roles. Any occurrence of a SpecialTokens string in the
// template's own text becomes that token's id, never its text; message
// content is always tokenised as ordinary text, so a literal "<|im_end|>"
// written by a user cannot forge a turn boundary.
type Template struct {
	Name           string            `yaml:"name" json:"name"`
	Header         map[string]string `yaml:"header" json:"header"`
	Footer         map[string]string `yaml:"footer,omitempty" json:"footer,omitempty"`
	MessageEnd     string            `yaml:"message_end" json:"message_end"`
	Separator      string            `yaml:"separator" json:"separator"`
	ReasoningOpen  string            `yaml:"reasoning_open" json:"reasoning_open"`
	ReasoningClose string            `yaml:"reasoning_close" json:"reasoning_close"`
	SpecialTokens  []string          `yaml:"special_tokens" json:"special_tokens"`
	TrainRoles     []string          `yaml:"train_roles" json:"train_roles"`
}

// DefaultTemplate is ChatML with <think>…</think> around reasoning, the
// layout Qwen3 uses; with a Qwen tokenizer.json every special token maps to
// the vocabulary's own id.
func DefaultTemplate() Template {
	h := map[string]string{}
	for _, r := range KnownRoles {
		h[r] = "<|im_start|>" + r + "\n"
	}
	return Template{
		Name:           "chatml-think",
		Header:         h,
		MessageEnd:     "<|im_end|>",
		Separator:      "\n",
		ReasoningOpen:  "<think>\n",
		ReasoningClose: "\n</think>\n\n",
		SpecialTokens:  []string{"<|im_start|>", "<|im_end|>", "<think>", "</think>"},
		TrainRoles:     []string{RoleAssistant},
	}
}

// Validate reports every problem with the template at once.
func (t Template) Validate() error {
	var errs []error
	for _, r := range KnownRoles {
		if _, ok := t.Header[r]; !ok {
			errs = append(errs, fmt.Errorf("template.header: no entry for role %q", r))
		}
	}
	for r := range t.Header {
		if !isKnownRole(r) {
			errs = append(errs, fmt.Errorf("template.header: unknown role %q (known: %s)", r, strings.Join(KnownRoles, ", ")))
		}
	}
	for r := range t.Footer {
		if !isKnownRole(r) {
			errs = append(errs, fmt.Errorf("template.footer: unknown role %q", r))
		}
	}
	for _, r := range t.TrainRoles {
		if !isKnownRole(r) {
			errs = append(errs, fmt.Errorf("template.train_roles: unknown role %q", r))
		}
	}
	if len(t.TrainRoles) == 0 {
		errs = append(errs, errors.New("template.train_roles: empty, nothing would be trained"))
	}
	seen := map[string]bool{}
	for i, s := range t.SpecialTokens {
		if s == "" {
			errs = append(errs, fmt.Errorf("template.special_tokens[%d]: empty", i))
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("template.special_tokens[%d]: %q listed twice", i, s))
		}
		seen[s] = true
	}
	return errors.Join(errs...)
}

func isKnownRole(r string) bool {
	for _, k := range KnownRoles {
		if k == r {
			return true
		}
	}
	return false
}

// Hash is the sha256 of the template's canonical JSON (map keys sorted), so
// a manifest pins exactly which template produced the masks.
func (t Template) Hash() string {
	c := t
	c.TrainRoles = append([]string(nil), t.TrainRoles...)
	sort.Strings(c.TrainRoles)
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// templatePiece is a part of template text: a special token or plain text.
type templatePiece struct {
	special string
	text    string
}

// splitSpecials cuts template text at occurrences of the special tokens,
// preferring the longest token at each position.
func splitSpecials(s string, specials []string) []templatePiece {
	sorted := append([]string(nil), specials...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	var out []templatePiece
	start := 0
	for i := 0; i < len(s); {
		matched := ""
		for _, sp := range sorted {
			if strings.HasPrefix(s[i:], sp) {
				matched = sp
				break
			}
		}
		if matched == "" {
			i++
			continue
		}
		if i > start {
			out = append(out, templatePiece{text: s[start:i]})
		}
		out = append(out, templatePiece{special: matched})
		i += len(matched)
		start = i
	}
	if start < len(s) {
		out = append(out, templatePiece{text: s[start:]})
	}
	return out
}
