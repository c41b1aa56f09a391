package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/crucible-data/crucible/internal/testenv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// testSeeds are bundled RTL seeds: combinational and sequential.
var testSeeds = []string{"mux4_8bit", "counter_up8_en", "priority_encoder8"}

func loadSeeds(t *testing.T, names ...string) []engine.Item {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join(testenv.RepoRoot(t), "examples/seeds/rtl", n, "task.json"))
	}
	var items []engine.Item
	g, err := ingest.New(ingest.PresetTaskDir, ingest.Sink{
		Item:   func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { return fmt.Errorf("seed rejected: %+v", r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.IngestPaths(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	if len(items) != len(names) {
		t.Fatalf("loaded %d seeds, want %d", len(items), len(names))
	}
	return items
}

var (
	verOnce sync.Once
	ver     *rtl.Verifier
	verErr  error
)

func rtlVerifier(t *testing.T) *rtl.Verifier {
	t.Helper()
	verOnce.Do(func() {
		cfg := rtl.DefaultConfig()
		cfg.Workers = 2
		ver, verErr = rtl.NewVerifier(cfg)
	})
	if verErr != nil {
		t.Fatal(verErr)
	}
	return ver
}

// scriptedCode is the scripted generator's answer for a round: a syntax
// error, then a module with every output tied to zero (a logic bug), then
// the reference renamed to TopModule.
func scriptedCode(t *testing.T, it engine.Item, round int) string {
	fixed, err := rtl.RenameModule(it.Reference, "RefModule", "TopModule")
	if err != nil {
		t.Fatalf("%s: %v", it.ItemID, err)
	}
	switch round {
	case 1:
		return strings.Replace(fixed, ";", "", 1)
	case 2:
		var ports, body []string
		for _, p := range it.Interface.Ports {
			ports = append(ports, fmt.Sprintf("    %s [%d:0] %s", p.Direction, p.Width-1, p.Name))
			if p.Direction == "output" {
				body = append(body, fmt.Sprintf("    assign %s = 0;", p.Name))
			}
		}
		return "module TopModule (\n" + strings.Join(ports, ",\n") + "\n);\n" + strings.Join(body, "\n") + "\nendmodule\n"
	}
	return fixed
}

type chatReq struct {
	Model    string            `json:"model"`
	Messages []textgen.Message `json:"messages"`
}

func reply(w http.ResponseWriter, content, reasoning string) {
	msg := map[string]string{"role": "assistant", "content": content}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": msg}}})
	w.Write(b)
}

// scriptedGenerator answers by round (assistant messages so far + 1) and
// by task (recognised from the port table in the task prompt).
type scriptedGenerator struct {
	t     *testing.T
	items []engine.Item
	calls atomic.Int64
	// fail, when set, decides an HTTP status to answer instead (0: answer).
	fail func(call int64) int
	// noCode, when set, makes the first answer of this item carry no code.
	noCode string
}

func (g *scriptedGenerator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := g.calls.Add(1)
	if g.fail != nil {
		if st := g.fail(n); st != 0 {
			if st == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "0")
			}
			w.WriteHeader(st)
			return
		}
	}
	var req chatReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	round := 1
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			round++
		}
		if strings.Contains(m.Content, OutcomeInfra) {
			g.t.Errorf("the generator was shown an infrastructure failure: %q", m.Content)
		}
	}
	var it *engine.Item
	for i := range g.items {
		if strings.Contains(req.Messages[1].Content, strings.TrimSpace(g.items[i].Instruction)) {
			it = &g.items[i]
		}
	}
	if it == nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if it.ItemID == g.noCode && round == 1 {
		reply(w, "I am not sure yet.", "")
		return
	}
	think := fmt.Sprintf("Round %d of %s: %s", round, it.ItemID, strings.Repeat("reasoning ", round*3))
	reply(w, "<think>"+think+"</think>\nHere is the design.\n```verilog\n"+scriptedCode(g.t, *it, round)+"```\n", "")
}

func chatConfig(url, model string) textgen.ChatConfig {
	c := textgen.DefaultChatConfig()
	c.BaseURL, c.Model, c.APIKeyEnv = url, model, ""
	c.Backoff, c.MaxBackoff, c.Timeout, c.Retries = time.Millisecond, 10*time.Millisecond, 5*time.Second, 3
	return c
}

func testConfig(genURL string) Config {
	cfg := DefaultConfig()
	cfg.Generator = chatConfig(genURL, "scripted")
	cfg.Concurrency, cfg.RealLimit = 3, 2
	return cfg
}

func realBackend(t *testing.T) *RealBackend {
	return &RealBackend{Judges: judgesOf(t, rtlVerifier(t)), MaxDiagnostic: 1500}
}

// judgesOf is the set of the given judges.
func judgesOf(t *testing.T, js ...engine.Judge) *engine.Judges {
	t.Helper()
	s, err := engine.NewJudges(2, js...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestRunner(t *testing.T, cfg Config, real, world Backend) *Runner {
	t.Helper()
	gen, err := textgen.NewChat(cfg.Generator, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(cfg, gen, real, world, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func startServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
