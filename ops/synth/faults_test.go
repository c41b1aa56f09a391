package synth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// flakyVerifier returns infrastructure verdicts: `transient` times for the
// first call of each item in transientItems, always for brokenItem.
type flakyVerifier struct {
	real       func(ctx context.Context, it engine.Item, c engine.Candidate) (engine.Evidence, error)
	mu         sync.Mutex
	seen       map[string]int
	transient  map[string]int
	brokenItem string
}

func (f *flakyVerifier) verify(ctx context.Context, it engine.Item, c engine.Candidate) (engine.Evidence, error) {
	f.mu.Lock()
	f.seen[it.ItemID]++
	n := f.seen[it.ItemID]
	f.mu.Unlock()
	if it.ItemID == f.brokenItem {
		return engine.Evidence{ItemID: it.ItemID, Status: engine.StatusUnjudged, FailureStage: engine.StageToolchainMissing, Cause: "iverilog not found"}, nil
	}
	if n <= f.transient[it.ItemID] {
		return engine.Evidence{ItemID: it.ItemID, Status: engine.StatusUnjudged, FailureStage: engine.StageWorkerCrash, Cause: "worker crashed"}, nil
	}
	return f.real(ctx, it, c)
}

// Infrastructure failures are re-executed, never shown to the generator
// (the scripted generator fails the test if it sees INFRA_ERROR), and an
// unresolved one ends the trajectory unjudged: not packed, no training pair.
func TestInfraFailuresAreRetriedThenUnjudged(t *testing.T) {
	items := loadSeeds(t, "mux4_8bit", "counter_up8_en")
	srv := startServer(t, &scriptedGenerator{t: t, items: items})
	fv := &flakyVerifier{real: rtlVerifier(t).VerifyOne, seen: map[string]int{}, transient: map[string]int{"mux4_8bit": 1}, brokenItem: "counter_up8_en"}
	cfg := testConfig(srv.URL)
	r := newTestRunner(t, cfg, &RealBackend{Judges: judgesOf(t, engine.JudgeFunc(engine.DomainRTL, fv.verify)), MaxDiagnostic: 1500}, nil)
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	mux, ctr := res.Trajectories[0], res.Trajectories[1]
	if mux.FinalVerdict != VerdictPass || mux.Rounds != 3 || mux.Turns[0].InfraRetries != 1 || mux.Turns[0].Observation.Outcome != OutcomeCompilationError {
		t.Fatalf("transient failure: %+v", mux.Turns[0])
	}
	if ctr.FinalVerdict != VerdictUnjudged || ctr.Rounds != 1 || ctr.Turns[0].InfraRetries != int32(cfg.InfraRetries) || ctr.Admitted ||
		ctr.Turns[0].Observation.FailureStage != engine.StageToolchainMissing {
		t.Fatalf("persistent failure: %+v", ctr)
	}
	if len(res.Pack) != 1 || len(res.Pairs) != 3 || res.Summary.Domains[0].Unjudged != 1 {
		t.Fatalf("%d pack rows, %d pairs, summary %+v", len(res.Pack), len(res.Pairs), res.Summary.Domains[0])
	}
}

// 500 and 429 answers are retried by the client and change nothing.
func TestFailingGeneratorServerIsRetried(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	want := uninterrupted(t, startServer(t, &scriptedGenerator{t: t, items: items}).URL)
	gen := &scriptedGenerator{t: t, items: items, fail: func(n int64) int {
		switch n { // at most 3 failures in a row: within the client's 4 attempts
		case 1, 5:
			return http.StatusInternalServerError
		case 2:
			return http.StatusTooManyRequests
		}
		return 0
	}}
	srv := startServer(t, gen)
	res, err := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil).Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Trajectories, want.Trajectories) || gen.calls.Load() != 12 {
		t.Fatalf("retried run differs (calls %d)", gen.calls.Load())
	}
}

// A slow server past the timeout and a malformed body leave trajectories
// incomplete (not failed); a re-run against a healthy server resumes them.
func TestSlowAndMalformedGeneratorLeaveTrajectoriesIncomplete(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	good := &scriptedGenerator{t: t, items: items}
	want := uninterrupted(t, startServer(t, good).URL)
	var calls atomic.Int64
	bad := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"role":"assistant"`)) { // round 1 of every task succeeds, then the server degrades
			good.ServeHTTP(w, r)
			return
		}
		if calls.Add(1)%2 == 0 {
			<-r.Context().Done() // answer only after the client timed out
		}
		w.Write([]byte(`{"choices": [`))
	}))
	cfg := testConfig(bad.URL)
	// 2 s: orders of magnitude above a loopback answer, so only the
	// attempts that never answer time out, however loaded the machine is.
	cfg.Generator.Timeout, cfg.Generator.Retries = 2*time.Second, 1
	path := filepath.Join(t.TempDir(), "j.jsonl")
	res, err := newTestRunner(t, cfg, realBackend(t), nil).Run(context.Background(), items, path, "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range res.Trajectories {
		if tr.FinalVerdict != VerdictIncomplete || tr.Rounds != 1 || tr.Admitted {
			t.Fatalf("%s: %s after %d rounds", tr.ItemID, tr.FinalVerdict, tr.Rounds)
		}
	}
	if res.Counts["generator_failed"] != 3 || res.Summary.Domains[0].Incomplete != 3 {
		t.Fatalf("counts %v", res.Counts)
	}
	cfg.Generator = chatConfig(startServer(t, good).URL, "scripted")
	res, err = newTestRunner(t, cfg, realBackend(t), nil).Run(context.Background(), items, path, "rtl/icarus")
	if err != nil || !reflect.DeepEqual(res.Trajectories, want.Trajectories) {
		t.Fatalf("resume after a bad server: %v", err)
	}
}

// A world model that never answers in the schema: each turn is retried,
// counted, and falls back to the real backend.
func TestMalformedWorldModelFallsBackToReal(t *testing.T) {
	items := loadSeeds(t, "mux4_8bit")
	gsrv := startServer(t, &scriptedGenerator{t: t, items: items})
	wsrv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply(w, `{"outcome": "LOOKS_FINE"}`, "")
	}))
	cfg := testConfig(gsrv.URL)
	wcfg := chatConfig(wsrv.URL, "world")
	cfg.WorldModel, cfg.WorldFraction = &wcfg, 1
	chat, _ := textgen.NewChat(wcfg, nil)
	r := newTestRunner(t, cfg, realBackend(t), &WorldModel{Chat: chat, Retries: cfg.WMRetries, MaxDiagnostic: 1500})
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trajectories[0]
	if tr.Plan != BackendWorldModel || tr.FinalVerdict != VerdictPass || tr.Rounds != 3 {
		t.Fatalf("%+v", tr)
	}
	for _, tu := range tr.Turns {
		if tu.Backend != BackendReal || tu.Malformed != int32(cfg.WMRetries+1) {
			t.Fatalf("round %d: backend %s malformed %d", tu.Round, tu.Backend, tu.Malformed)
		}
	}
	if res.Counts["world_model_malformed_fallback"] != 3 || res.Summary.Domains[0].Malformed != 9 {
		t.Fatalf("counts %v summary %+v", res.Counts, res.Summary.Domains[0])
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Rounds, cfg.AuditFraction, cfg.WorldFraction, cfg.MaxDiagnostic = 0, 2, 0.5, 1
	err := cfg.Validate()
	for _, want := range []string{"rounds", "audit_fraction", "world_fraction", "max_diagnostic", "generator"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %s in %v", want, err)
		}
	}
}
