package textgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
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
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	defer func() { <-c.sem }()
	model := c.model(role)
	cm := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		cm[i] = chatMessage{Role: m.Role, Content: m.Content}
	}
	body, _ := json.Marshal(chatRequest{Model: model, Temperature: c.cfg.Temperature, MaxTokens: c.cfg.MaxTokens, Messages: cm})
	var last error
	for attempt := 0; attempt <= c.cfg.Retries; attempt++ {
		rep, status, retryAfter, err := c.completeOnce(ctx, role, itemID, model, body, attempt)
		if err == nil {
			return rep, nil
		}
		last = err
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		if !(status == 0 || status == http.StatusTooManyRequests || status >= 500) || attempt == c.cfg.Retries {
			break
		}
		wait := c.cfg.Backoff << attempt
		if wait > c.cfg.MaxBackoff || wait <= 0 {
			wait = c.cfg.MaxBackoff
		}
		wait = wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		if retryAfter > 0 {
			wait = min(retryAfter, c.cfg.MaxBackoff)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return Reply{}, ctx.Err()
		}
	}
	return Reply{}, fmt.Errorf("%w: %s for %s: %w", ErrGenerate, role, itemID, last)
}

func (c *Chat) completeOnce(ctx context.Context, role, itemID, model string, body []byte, attempt int) (Reply, int, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := c.now()
	entry := ChatLog{Time: start.UTC(), Role: role, ItemID: itemID, Model: model, Attempt: int32(attempt + 1), Request: string(body)}
	text, status, retryAfter, raw, err := c.post(actx, body)
	entry.Status, entry.Response = int32(status), raw
	entry.LatencyMS = float64(c.now().Sub(start).Microseconds()) / 1000
	if err != nil {
		entry.Error = err.Error()
	}
	c.mu.Lock()
	lerr := c.log(entry)
	c.mu.Unlock()
	if lerr != nil {
		return Reply{}, 400, 0, fmt.Errorf("chat log: %w", lerr)
	}
	if err != nil {
		return Reply{}, status, retryAfter, err
	}
	return Reply{Content: text, Reasoning: reasoningOf(raw), Model: model}, status, 0, nil
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
