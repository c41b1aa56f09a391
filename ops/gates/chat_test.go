package gates

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// TestInstructionFirstWithChatGenerator: a specification-only seed is
// evolved through a chat-completions server (proposal + implementation,
// with one 503 on the way), and the admitted item's model-written
// reference passes the seed's own harness under the audit gate.
func TestInstructionFirstWithChatGenerator(t *testing.T) {
	requireTools(t)
	root := testenv.RepoRoot(t)
	seeds := loadItems(t, ingest.PresetTaskDir, filepath.Join(root, "examples", "seeds", "rtl", "counter_mod10_tc"))
	ref, err := os.ReadFile(filepath.Join(root, "examples", "seeds", "rtl", "counter_mod10_tc", "reference.sv"))
	if err != nil {
		t.Fatal(err)
	}
	seed := seeds[0]
	seed.Reference, seed.ReferenceStatus = "", engine.RefUnverified // specification only
	var mu sync.Mutex
	failed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string                     `json:"model"`
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		first := !failed
		failed = true
		mu.Unlock()
		if first {
			http.Error(w, "warming up", 503)
			return
		}
		text := "# Decade counter\n\nImplement `TopModule` with ports `clk`, `rst`, `en`, `q` (4 bits) and `carry`: a modulo-10 counter with synchronous active-high reset; carry is 1 when q is 9 and en is 1."
		if strings.Contains(req.Messages[1].Content, "Write a synthesizable Verilog module") {
			text = "Here you go:\n```verilog\n" + string(ref) + "```\n"
		}
		if strings.Contains(req.Messages[1].Content, "Answer PASS or FAIL") {
			text = "PASS: the interface is fully determined."
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": text}}}})
		w.Write(b)
	}))
	defer srv.Close()
	cc := textgen.DefaultChatConfig()
	cc.BaseURL, cc.Model, cc.Backoff, cc.MaxBackoff, cc.Timeout = srv.URL, "test-model", time.Millisecond, 10*time.Millisecond, 5*time.Second
	var logs []textgen.ChatLog
	var lmu sync.Mutex
	chat, err := textgen.NewChat(cc, func(l textgen.ChatLog) error { lmu.Lock(); logs = append(logs, l); lmu.Unlock(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	v := testVerifier(t)
	e, err := evolve.New(evolve.DefaultConfig(), chat, judgesOf(t, v), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	er, err := e.Evolve(ctx, []engine.Item{seed})
	if err != nil || len(er.Candidates) != 1 {
		t.Fatalf("evolve: %v %+v", err, er)
	}
	c := er.Candidates[0]
	if c.Route != engine.RouteInstructionFirst || c.Operator != evolve.OpReword || !strings.Contains(c.Reference, "module RefModule") || strings.Contains(c.Reference, "```") {
		t.Fatalf("candidate: route %s op %s reference %q", c.Route, c.Operator, c.Reference)
	}
	a, err := New(DefaultConfig(), Env{Judges: judgesOf(t, v), Generator: chat})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Admit(ctx, []engine.Item{seed}, er.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Admitted) != 1 {
		t.Fatalf("not admitted: %+v", res.Rejections)
	}
	checkInvariant(t, res)
	if len(logs) != 4 || logs[0].Status != 503 { // 503 + proposal + implementation + audit
		t.Errorf("chat log: %d entries, first status %d", len(logs), logs[0].Status)
	}
}
