package textgen

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

var iface = engine.Interface{Top: "TopModule", Clock: "clk", Reset: "rst", ResetPolarity: "low", ResetKind: "async",
	Ports: []engine.Port{{Name: "clk", Direction: "input", Width: 1}, {Name: "rst", Direction: "input", Width: 1}, {Name: "q", Direction: "output", Width: 4}}}

func TestTemplateRoles(t *testing.T) {
	g := Template{}
	ctx := context.Background()
	r, err := g.Generate(ctx, Request{Role: RoleProposal, ParentInstruction: "# Counter\nCounts.", Change: "The reset is now active-low.", Interface: iface, InterfaceChanged: true})
	if err != nil || !strings.Contains(r.Text, "# Counter") || !strings.Contains(r.Text, "active-low") || !strings.Contains(r.Text, "| `q` | output | 4 |") {
		t.Fatalf("proposal: %v\n%s", err, r.Text)
	}
	r, err = g.Generate(ctx, Request{Role: RoleSpecification, Family: "counter", ParentInstruction: "# Title\n| `q` | output | 4 |\n- `q` counts up.", Interface: iface})
	if err != nil || strings.Contains(r.Text, "# Title") || !strings.Contains(r.Text, "- `q` counts up.") || !strings.Contains(r.Text, "active-low asynchronous") {
		t.Fatalf("specification: %v\n%s", err, r.Text)
	}
	r, _ = g.Generate(ctx, Request{Role: RoleAudit, Instruction: "uses clk and rst only", Interface: iface})
	if AuditPassed(r.Text) || !strings.Contains(r.Text, "q") {
		t.Errorf("audit should fail on a missing port: %s", r.Text)
	}
	if _, err := g.Generate(ctx, Request{Role: RoleImplementation}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("implementation: %v", err)
	}
}

func okBody(text string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": text}}}})
	return string(b)
}

func testChat(t *testing.T, url string, mod func(*ChatConfig)) (*Chat, *[]ChatLog) {
	t.Helper()
	cfg := DefaultChatConfig()
	cfg.BaseURL, cfg.Model = url, "m-propose"
	cfg.RoleModels = map[string]string{RoleAudit: "m-audit"}
	cfg.Backoff, cfg.MaxBackoff, cfg.Timeout, cfg.Retries = 5*time.Millisecond, 50*time.Millisecond, 2*time.Second, 3
	cfg.APIKeyEnv = "CRUCIBLE_TEST_KEY"
	t.Setenv("CRUCIBLE_TEST_KEY", "sk-test")
	if mod != nil {
		mod(&cfg)
	}
	var logs []ChatLog
	var mu sync.Mutex
	c, err := NewChat(cfg, func(l ChatLog) error { mu.Lock(); logs = append(logs, l); mu.Unlock(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return c, &logs
}

func TestChatRetriesAndLogs(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad path or key", 401)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", 400)
			return
		}
		switch calls.Add(1) {
		case 1:
			http.Error(w, "overloaded", 503)
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", 429)
		default:
			w.Write([]byte(okBody("revised spec from " + req.Model)))
		}
	}))
	defer srv.Close()
	c, logs := testChat(t, srv.URL+"/v1", nil)
	r, err := c.Generate(context.Background(), Request{Role: RoleAudit, ItemID: "x", Instruction: "spec", Interface: iface})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "revised spec from m-audit" || r.Model != "m-audit" {
		t.Errorf("got %+v (audit must use its own model)", r)
	}
	if len(*logs) != 3 || (*logs)[0].Status != 503 || (*logs)[1].Status != 429 || (*logs)[2].Status != 200 || (*logs)[2].Attempt != 3 {
		t.Errorf("logs: %+v", *logs)
	}
	if !strings.Contains((*logs)[0].Request, `"model":"m-audit"`) {
		t.Errorf("request not logged: %s", (*logs)[0].Request)
	}
}

func TestChatSlowMalformedAndClientErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		var req chatRequest
		json.NewDecoder(r.Body).Decode(&req)
		switch {
		case strings.Contains(req.Messages[1].Content, "SLOW") && n == 1:
			// Answer only once the client has given up on this attempt: the
			// timeout is an event here, not a race between two sleeps.
			<-r.Context().Done()
			w.Write([]byte(okBody("late")))
		case strings.Contains(req.Messages[1].Content, "SLOW"):
			w.Write([]byte(okBody("on time")))
		case strings.Contains(req.Messages[1].Content, "MALFORMED"):
			w.Write([]byte(`{"choices": [`))
		case strings.Contains(req.Messages[1].Content, "EMPTY"):
			w.Write([]byte(`{"choices": []}`))
		default:
			http.Error(w, "bad request", 400)
		}
	}))
	defer srv.Close()
	// A 2 s attempt timeout is three orders of magnitude above a loopback
	// answer, so only the attempt that never answers can hit it, however
	// loaded the machine is.
	c, logs := testChat(t, srv.URL, func(cfg *ChatConfig) { cfg.Timeout = 2 * time.Second })
	ctx := context.Background()
	r, err := c.Generate(ctx, Request{Role: RoleProposal, ParentInstruction: "SLOW"})
	if err != nil || r.Text != "on time" {
		t.Fatalf("slow: %v %+v", err, r)
	}
	if (*logs)[0].Status != 0 || (*logs)[0].Error == "" {
		t.Errorf("timed-out attempt not logged as a transport error: %+v", (*logs)[0])
	}
	for _, p := range []string{"MALFORMED", "EMPTY", "other"} {
		before := calls.Load()
		_, err := c.Generate(ctx, Request{Role: RoleProposal, ParentInstruction: p})
		if !errors.Is(err, ErrGenerate) {
			t.Errorf("%s: err %v", p, err)
		}
		if calls.Load()-before != 1 {
			t.Errorf("%s: %d attempts, want 1 (not retryable)", p, calls.Load()-before)
		}
	}
}

func TestChatConcurrencyLimitAndGiveUp(t *testing.T) {
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		http.Error(w, "down", 502)
	}))
	defer srv.Close()
	c, logs := testChat(t, srv.URL, func(cfg *ChatConfig) { cfg.Concurrency, cfg.Retries = 2, 1 })
	var wg sync.WaitGroup
	var failures atomic.Int32
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Generate(context.Background(), Request{Role: RoleSpecification}); errors.Is(err, ErrGenerate) {
				failures.Add(1)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Errorf("peak concurrency %d > 2", peak.Load())
	}
	if failures.Load() != 6 || len(*logs) != 12 {
		t.Errorf("failures %d logs %d, want 6 and 12 (1 retry each)", failures.Load(), len(*logs))
	}
}

func TestChatConfigValidate(t *testing.T) {
	cfg := DefaultChatConfig()
	cfg.Concurrency, cfg.RoleModels = 0, map[string]string{"poet": "x"}
	err := cfg.Validate()
	for _, want := range []string{"base_url", "model is empty", "poet", "concurrency"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
}

// TestChatLogParquet: the audit log rows round-trip through a Parquet shard.
func TestChatLogParquet(t *testing.T) {
	dir := t.TempDir()
	rows := []ChatLog{{Time: time.Unix(1700000000, 0).UTC(), Role: RoleAudit, ItemID: "x", Model: "m", Attempt: 2, Status: 429,
		Request: `{"model":"m"}`, Response: "slow down", Error: "HTTP 429", LatencyMS: 12.5}}
	shards, err := engine.WriteAll(context.Background(), dir, "chat_log", "chat_log", engine.DefaultWriterOptions(), rows)
	if err != nil || len(shards) != 1 {
		t.Fatalf("write: %v %v", err, shards)
	}
	got, err := engine.ReadRows[ChatLog](filepath.Join(dir, filepath.Base(shards[0].Path)))
	if err != nil || len(got) != 1 || got[0] != rows[0] {
		t.Fatalf("read back %+v, %v", got, err)
	}
}
