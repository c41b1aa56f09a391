package textgen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one message of a multi-turn conversation (system, user or
// assistant, as the chat-completions protocol has them).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Reply is one multi-turn completion. Reasoning is the separate reasoning
// channel some servers return (reasoning_content, as vLLM and DeepSeek do);
// empty when the server puts its thinking inline.
type Reply struct {
	Content   string
	Reasoning string
	Model     string
}

// Complete sends a whole conversation and returns the next assistant message.
// It shares Generate's concurrency limit, retry policy (429, 5xx and
// transport errors; backoff with jitter; Retry-After) and log sink; role and
// itemID only label the log entries and pick a role model when configured.
func (c *Chat) Complete(ctx context.Context, role, itemID string, msgs []Message) (Reply, error) {
	if len(msgs) == 0 {
		return Reply{}, fmt.Errorf("%w: %s for %s: no messages", ErrGenerate, role, itemID)
	}
	cm := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		cm[i] = chatMessage{Role: m.Role, Content: m.Content}
	}
	text, raw, model, err := c.exchange(ctx, role, itemID, cm)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Content: text, Reasoning: reasoningOf(raw), Model: model}, nil
}

// reasoningOf reads the first choice's reasoning_content, if any.
func reasoningOf(raw string) string {
	var r struct {
		Choices []struct {
			Message struct {
				ReasoningContent string `json:"reasoning_content"`
				Reasoning        string `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal([]byte(raw), &r) != nil || len(r.Choices) == 0 {
		return ""
	}
	m := r.Choices[0].Message
	if m.ReasoningContent != "" {
		return strings.TrimSpace(m.ReasoningContent)
	}
	return strings.TrimSpace(m.Reasoning)
}
