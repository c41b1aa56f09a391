package textgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ChatConfig configures the OpenAI-compatible client.
type ChatConfig struct {
	BaseURL     string            `yaml:"base_url"`    // e.g. https://api.openai.com/v1
	Model       string            `yaml:"model"`       // default model for every role
	RoleModels  map[string]string `yaml:"role_models"` // per-role override, e.g. audit: a different model
	APIKeyEnv   string            `yaml:"api_key_env"` // environment variable holding the key
	Concurrency int               `yaml:"concurrency"` // requests in flight at most
	Retries     int               `yaml:"retries"`     // extra attempts on 429 / 5xx / transport errors
	Backoff     time.Duration     `yaml:"backoff"`     // first backoff; doubles per attempt, with jitter
	MaxBackoff  time.Duration     `yaml:"max_backoff"` // cap (Retry-After is honoured up to it)
	Timeout     time.Duration     `yaml:"timeout"`     // per attempt
	Temperature float64           `yaml:"temperature"` // 0 for reproducible runs
	MaxTokens   int               `yaml:"max_tokens"`  // 0 = server default
}

// DefaultChatConfig returns the defaults.
func DefaultChatConfig() ChatConfig {
	return ChatConfig{APIKeyEnv: "OPENAI_API_KEY", Concurrency: 4, Retries: 4, Backoff: 500 * time.Millisecond,
		MaxBackoff: 30 * time.Second, Timeout: 120 * time.Second}
}

// Validate reports every bad field.
func (c ChatConfig) Validate() error {
	var bad []string
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		bad = append(bad, fmt.Sprintf("base_url %q is not an http(s) URL", c.BaseURL))
	}
	if c.Model == "" {
		bad = append(bad, "model is empty")
	}
	for r := range c.RoleModels {
		switch r {
		case RoleProposal, RoleImplementation, RoleSpecification, RoleAudit:
		default:
			bad = append(bad, fmt.Sprintf("role_models: unknown role %q", r))
		}
	}
	if c.Concurrency < 1 {
		bad = append(bad, "concurrency must be >= 1")
	}
	if c.Retries < 0 {
		bad = append(bad, "retries must be >= 0")
	}
	if c.Backoff < 0 || c.MaxBackoff < c.Backoff {
		bad = append(bad, "backoff must be >= 0 and <= max_backoff")
	}
	if c.Timeout <= 0 {
		bad = append(bad, "timeout must be > 0")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// ChatLog is one request/response exchange, logged for audit.
type ChatLog struct {
	Time      time.Time `arrow:"time" json:"time"`
	Role      string    `arrow:"role" json:"role"`
	ItemID    string    `arrow:"item_id" json:"item_id"`
	Model     string    `arrow:"model" json:"model"`
	Attempt   int32     `arrow:"attempt" json:"attempt"`
	Status    int32     `arrow:"status" json:"status"` // HTTP status, 0 on a transport error
	Request   string    `arrow:"request" json:"request"`
	Response  string    `arrow:"response" json:"response"`
	Error     string    `arrow:"error" json:"error"`
	LatencyMS float64   `arrow:"latency_ms" json:"latency_ms"`
}

// WithoutTimings drops the exchange's clock time and latency (see
// engine.TimedRow): the content hash of a chat log covers what was said.
func (l ChatLog) WithoutTimings() ChatLog {
	l.Time, l.LatencyMS = time.Time{}, 0
	return l
}

// LogSink receives every exchange (e.g. an engine.ShardWriter[ChatLog]'s Write).
type LogSink func(ChatLog) error

// Chat is the chat-completions generator.
type Chat struct {
	cfg  ChatConfig
	key  string
	http *http.Client
	sem  chan struct{}
	log  LogSink
	mu   sync.Mutex // serialises the sink
	now  func() time.Time
}

// NewChat validates cfg and reads the API key from the environment.
func NewChat(cfg ChatConfig, sink LogSink) (*Chat, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key := ""
	if cfg.APIKeyEnv != "" {
		key = os.Getenv(cfg.APIKeyEnv)
	}
	if sink == nil {
		sink = func(ChatLog) error { return nil }
	}
	return &Chat{cfg: cfg, key: key, http: &http.Client{}, sem: make(chan struct{}, cfg.Concurrency), log: sink, now: time.Now}, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

// Prompt renders the messages of a request (exported for tests and logs).
func Prompt(req Request) (system, user string) {
	system = "You write and review hardware design tasks (Verilog). Answer with the requested text only."
	switch req.Role {
	case RoleProposal:
		user = "Rewrite this task specification so that it describes the revised design. Keep the module name TopModule and every unchanged detail. Do not include any Verilog code.\n\nOriginal specification:\n" +
			req.ParentInstruction + "\n\nDeclared change:\n" + req.Change + "\n\nRevised interface:\n" + PortTable(req.Interface)
	case RoleSpecification:
		user = "Write a complete task specification for a Verilog module named TopModule with this interface and clock/reset contract, describing the behaviour given below. Do not include any Verilog code.\n\n" +
			PortTable(req.Interface) + "\n" + ClockResetText(req.Interface) + "\n\nBehaviour:\n" + req.ParentInstruction
	case RoleImplementation:
		user = "Write a synthesizable Verilog module named RefModule that implements this specification. Answer with the code only.\n\n" + req.ParentInstruction
	case RoleAudit:
		user = "Does this specification fully and unambiguously determine the interface below? Answer PASS or FAIL, then one sentence.\n\nSpecification:\n" +
			req.Instruction + "\n\nInterface:\n" + PortTable(req.Interface) + "\n" + ClockResetText(req.Interface)
	}
	return system, user
}

func (c *Chat) model(role string) string {
	if m := c.cfg.RoleModels[role]; m != "" {
		return m
	}
	return c.cfg.Model
}

// Generate implements Generator: one chat completion, retried on 429, 5xx
// and transport errors with exponential backoff; 4xx answers and malformed
// bodies are not retried (retrying cannot fix them).
func (c *Chat) Generate(ctx context.Context, req Request) (Response, error) {
	switch req.Role {
	case RoleProposal, RoleImplementation, RoleSpecification, RoleAudit:
	default:
		return Response{}, fmt.Errorf("%w: unknown role %q", ErrUnsupported, req.Role)
	}
	sys, user := Prompt(req)
	text, _, model, err := c.exchange(ctx, req.Role, req.ItemID, []chatMessage{{Role: "system", Content: sys}, {Role: "user", Content: user}})
	if err != nil {
		return Response{}, err
	}
	return Response{Text: text, Model: model}, nil
}

// exchange sends one conversation under the concurrency limit, retrying
// 429, 5xx and transport errors with exponential backoff and jitter
// (Retry-After honoured); 4xx answers and malformed bodies are not retried.
// It returns the reply text, the raw response body and the model asked.
func (c *Chat) exchange(ctx context.Context, role, itemID string, msgs []chatMessage) (text, raw, model string, err error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", "", "", ctx.Err()
	}
	defer func() { <-c.sem }()
	model = c.model(role)
	body, _ := json.Marshal(chatRequest{Model: model, Temperature: c.cfg.Temperature, MaxTokens: c.cfg.MaxTokens, Messages: msgs})
	var last error
	for attempt := 0; attempt <= c.cfg.Retries; attempt++ {
		text, raw, status, retryAfter, err := c.once(ctx, role, itemID, model, body, attempt)
		if err == nil {
			return text, raw, model, nil
		}
		last = err
		if ctx.Err() != nil {
			return "", "", "", ctx.Err()
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
			return "", "", "", ctx.Err()
		}
	}
	return "", "", "", fmt.Errorf("%w: %s for %s: %w", ErrGenerate, role, itemID, last)
}

// once makes one attempt and logs it; a log that cannot be written stops the
// run (status 400: not retried), since every exchange must be auditable.
func (c *Chat) once(ctx context.Context, role, itemID, model string, body []byte, attempt int) (text, raw string, status int, retryAfter time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := c.now()
	entry := ChatLog{Time: start.UTC(), Role: role, ItemID: itemID, Model: model, Attempt: int32(attempt + 1), Request: string(body)}
	text, status, retryAfter, raw, err = c.post(actx, body)
	entry.Status, entry.Response = int32(status), raw
	entry.LatencyMS = float64(c.now().Sub(start).Microseconds()) / 1000
	if err != nil {
		entry.Error = err.Error()
	}
	c.mu.Lock()
	lerr := c.log(entry)
	c.mu.Unlock()
	if lerr != nil {
		return "", "", 400, 0, fmt.Errorf("chat log: %w", lerr)
	}
	return text, raw, status, retryAfter, err
}

func (c *Chat) post(ctx context.Context, body []byte) (text string, status int, retryAfter time.Duration, raw string, err error) {
	url := strings.TrimRight(c.cfg.BaseURL, "/") + "/chat/completions"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", 400, 0, "", err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return "", 0, 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	raw = string(b)
	if err != nil {
		return "", 0, 0, raw, fmt.Errorf("reading response: %w", err)
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, perr := strconv.Atoi(s); perr == nil {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, retryAfter, raw, fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(raw, 200))
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return "", resp.StatusCode, 0, raw, fmt.Errorf("malformed response body: %v", err)
	}
	if len(cr.Choices) == 0 || strings.TrimSpace(cr.Choices[0].Message.Content) == "" {
		return "", resp.StatusCode, 0, raw, errors.New("malformed response: no choice with content")
	}
	return cr.Choices[0].Message.Content, resp.StatusCode, 0, raw, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
