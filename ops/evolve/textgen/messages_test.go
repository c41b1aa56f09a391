package textgen

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestCompleteSendsConversationAndReadsReasoning(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 3 || req.Messages[2].Content != "again" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{
			"role": "assistant", "content": "answer", "reasoning_content": "thinking"}}}})
		w.Write(b)
	}))
	defer srv.Close()
	c, logs := testChat(t, srv.URL, nil)
	rep, err := c.Complete(context.Background(), "synth_generator", "it1", []Message{
		{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "user", Content: "again"}})
	if err != nil || rep.Content != "answer" || rep.Reasoning != "thinking" || rep.Model != "m-propose" {
		t.Fatalf("reply %+v err %v", rep, err)
	}
	if calls.Load() != 2 || len(*logs) != 2 || (*logs)[0].Status != 503 || (*logs)[1].Role != "synth_generator" {
		t.Fatalf("calls %d logs %+v", calls.Load(), *logs)
	}
	if _, err := c.Complete(context.Background(), "r", "x", nil); err == nil {
		t.Fatal("empty conversation accepted")
	}
}
