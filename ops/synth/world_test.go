package synth

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// fakeWorldModel predicts from the code: the renamed reference passes, a
// module tying outputs to zero mismatches, anything else fails to compile.
// It is wrong on purpose for the mux's zero module (says PASS), and its
// first answer about the counter is malformed (no JSON).
type fakeWorldModel struct {
	t         *testing.T
	items     []engine.Item
	calls     atomic.Int64
	malformed atomic.Bool
}

func (m *fakeWorldModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	var req chatReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	u := req.Messages[1].Content
	i := strings.Index(u, "### Candidate\n```\n")
	if i < 0 || !strings.Contains(req.Messages[0].Content, "SIMULATION_MISMATCH") {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	code := strings.TrimSuffix(strings.TrimSpace(u[i+len("### Candidate\n```\n"):]), "```")
	outcome := OutcomeCompilationError
	for _, it := range m.items {
		fixed, _ := rtl.RenameModule(it.Reference, "RefModule", "TopModule")
		if strings.TrimSpace(fixed) == strings.TrimSpace(code) {
			outcome = OutcomePass
		}
	}
	if strings.Contains(code, "= 0;") && !strings.Contains(code, "always") { // the scripted zero module
		outcome = OutcomeSimulationMismatch
		if strings.Contains(code, "d3") {
			outcome = OutcomePass // wrong on purpose
		}
	}
	if strings.Contains(code, "count") && !m.malformed.Swap(true) {
		reply(w, "It probably compiles.", "")
		return
	}
	reply(w, "```json\n{\"outcome\": \""+outcome+"\", \"diagnostic\": \"predicted\"}\n```", "")
}

func worldRunner(t *testing.T, items []engine.Item, mod func(*Config)) (*Runner, *fakeWorldModel) {
	t.Helper()
	gen := &scriptedGenerator{t: t, items: items}
	gsrv := startServer(t, gen)
	wm := &fakeWorldModel{t: t, items: items}
	wsrv := startServer(t, wm)
	cfg := testConfig(gsrv.URL)
	wcfg := chatConfig(wsrv.URL, "world")
	cfg.WorldModel = &wcfg
	cfg.WorldFraction, cfg.AuditFraction, cfg.ReplayFraction = 1, 1, 1
	cfg.Concurrency = 1 // trajectories in item order: the gate's decisions are hand-countable
	if mod != nil {
		mod(&cfg)
	}
	chat, err := textgen.NewChat(wcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	world := &WorldModel{Chat: chat, Retries: cfg.WMRetries, MaxDiagnostic: cfg.MaxDiagnostic}
	return newTestRunner(t, cfg, realBackend(t), world), wm
}

// Hand count on the fixture (every world-model turn audited, every
// trajectory replayed, gate open throughout):
//
//	mux:      COMPILATION_ERROR (right), PASS for the zero module (wrong: real says mismatch) -> ends at round 2
//	counter:  malformed once, then right x3
//	priority: right x3
//
// audited 8, agree 7 (0.875); replayed 3, final verdicts agree 2 (mux's
// world-model pass is a real mismatch); 1 correction; 1 malformed answer.
func TestWorldModelAuditAndFidelityHandCount(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	r, wm := worldRunner(t, items, func(c *Config) { c.MinAudits, c.FidelityFloor = 8, 0.8 })
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	d := res.Summary.Domains[0]
	if d.AuditedTurns != 8 || d.AuditAgree != 7 || d.TurnAccuracy != 0.875 || d.Replayed != 3 || d.ReplayAgree != 2 ||
		d.Corrections != 1 || d.Malformed != 1 || d.WorldTurns != 8 || d.RealTurns != 0 || !d.WorldAdmitted {
		t.Fatalf("fidelity %+v", d)
	}
	if len(res.Corrections) != 1 || res.Corrections[0].ItemID != "mux4_8bit" || res.Corrections[0].Round != 2 ||
		res.Corrections[0].Predicted.Outcome != OutcomePass || res.Corrections[0].Actual.Outcome != OutcomeSimulationMismatch {
		t.Fatalf("corrections %+v", res.Corrections)
	}
	mux := res.Trajectories[0]
	if mux.Rounds != 2 || mux.FinalVerdict != VerdictPass || mux.ReplayAgrees || !mux.Admitted || mux.Plan != BackendWorldModel {
		t.Fatalf("mux %+v", mux)
	}
	if !res.Trajectories[1].ReplayAgrees || res.Trajectories[1].Rounds != 3 {
		t.Fatalf("counter %+v", res.Trajectories[1])
	}
	// Every audit is a real observation: a training pair.
	if len(res.Pairs) != 8 || res.Pairs[0].Source != "audit" {
		t.Fatalf("%d pairs", len(res.Pairs))
	}
	// 8 turns + 1 malformed retry.
	if wm.calls.Load() != 9 {
		t.Fatalf("%d world-model calls", wm.calls.Load())
	}
	// Every audit equals a direct verification of the same code.
	for i, tr := range res.Trajectories {
		for _, tu := range tr.Turns {
			ev, err := rtlVerifier(t).VerifyOne(context.Background(), items[i], engine.Candidate{ItemID: items[i].ItemID, Code: tu.Code})
			if err != nil {
				t.Fatal(err)
			}
			if !tu.Audited || !reflect.DeepEqual(tu.Audit, ObservationFromEvidence(engine.DomainRTL, ev, 1500)) {
				t.Fatalf("%s round %d: audit %+v differs from direct verification", tr.ItemID, tu.Round, tu.Audit)
			}
		}
	}
}

// With the gate at 2 audits, the mux's 1-of-2 accuracy closes it: the
// other tasks run on the real backend, and the mux's world-model
// trajectory is not admitted.
func TestFidelityGateStopsAdmittingWorldModelTrajectories(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	r, _ := worldRunner(t, items, func(c *Config) { c.MinAudits, c.FidelityFloor = 2, 0.8 })
	res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	d := res.Summary.Domains[0]
	if d.AuditedTurns != 2 || d.AuditAgree != 1 || d.WorldAdmitted || d.RealTurns != 6 || d.WorldTurns != 2 || res.Counts["world_model_gated"] != 2 {
		t.Fatalf("gate: %+v counts %v", d, res.Counts)
	}
	if res.Trajectories[0].Admitted || !res.Trajectories[1].Admitted || res.Trajectories[1].Plan != BackendReal || len(res.Pack) != 2 {
		t.Fatalf("admission: %v %v %s, %d pack rows", res.Trajectories[0].Admitted, res.Trajectories[1].Admitted, res.Trajectories[1].Plan, len(res.Pack))
	}
}

// Audit sampling is seeded: the same seed audits the same turns, and about
// the configured fraction of them.
func TestAuditSamplingIsSeededAndDeterministic(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	audited := func(seed uint64) []bool {
		r, _ := worldRunner(t, items, func(c *Config) { c.AuditFraction, c.ReplayFraction, c.Seed, c.MinAudits = 0.5, 0, seed, 100 })
		res, err := r.Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
		if err != nil {
			t.Fatal(err)
		}
		var out []bool
		for _, tr := range res.Trajectories {
			for _, tu := range tr.Turns {
				out = append(out, tu.Audited)
				if tu.Audited != (r.draw("audit", tr.TrajectoryID, itoa(tu.Round)) < 0.5) {
					t.Errorf("%s round %d: audited %v disagrees with the sampler", tr.TrajectoryID, tu.Round, tu.Audited)
				}
			}
		}
		return out
	}
	a, b := audited(7), audited(7)
	if len(a) != len(b) {
		t.Fatalf("%v vs %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different audits: %v vs %v", a, b)
		}
	}
}

func itoa(n int32) string { b, _ := json.Marshal(n); return string(b) }
