package synth

import (
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// SystemPrompt states the generator's job and the router's instruction set.
func SystemPrompt(b *Bundle) string {
	lang, what := "verilog", "hardware design engineer writing synthesizable Verilog"
	if b.Domain == engine.DomainKernel {
		lang, what = "cuda", "GPU kernel engineer"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "You are a %s. Think the task through, then answer with the complete solution in one ```%s fenced code block. "+
		"After each attempt the toolchain reports an outcome and diagnostics; diagnose the cause and answer with a corrected complete solution.\n\nWhat to reason about:\n", what, lang)
	for _, g := range b.Guidance {
		s.WriteString("- " + g + "\n")
	}
	return strings.TrimRight(s.String(), "\n")
}

// TaskPrompt is the first user message.
func TaskPrompt(b *Bundle) string {
	return strings.TrimSpace(b.Instruction) + "\n\nInterface:\n" + interfaceText(b)
}

// FeedbackPrompt is the environment message after a turn: the observation
// and, unless it passed, the request to revise.
func FeedbackPrompt(o Observation, round, rounds int) string {
	if o.Passed() {
		return o.Text()
	}
	if round >= rounds {
		return o.Text()
	}
	return o.Text() + fmt.Sprintf("\n\nRevise the solution (attempt %d of %d): explain the cause, then give the complete corrected code.", round+1, rounds)
}

// Conversation rebuilds the chat sent before round len(turns)+1. It is a
// pure function of the bundle and the completed turns, which is what lets
// a resumed run continue a trajectory exactly where it stopped.
func Conversation(b *Bundle, turns []Turn, rounds int) []textgen.Message {
	msgs := []textgen.Message{{Role: "system", Content: SystemPrompt(b)}, {Role: "user", Content: TaskPrompt(b)}}
	for _, t := range turns {
		msgs = append(msgs, textgen.Message{Role: "assistant", Content: t.Response},
			textgen.Message{Role: "user", Content: FeedbackPrompt(t.Observation, int(t.Round), rounds)})
	}
	return msgs
}

// splitReasoning separates a reply's reasoning from its answer: the
// server's reasoning channel when it has one, else a leading <think> block.
func splitReasoning(rep textgen.Reply) (reasoning, answer string) {
	answer = rep.Content
	reasoning = rep.Reasoning
	if i := strings.Index(answer, "<think>"); i >= 0 {
		if j := strings.Index(answer[i:], "</think>"); j >= 0 {
			inline := strings.TrimSpace(answer[i+len("<think>") : i+j])
			answer = answer[:i] + answer[i+j+len("</think>"):]
			if reasoning == "" {
				reasoning = inline
			}
		}
	}
	return strings.TrimSpace(reasoning), strings.TrimSpace(answer)
}
