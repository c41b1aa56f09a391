package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/crucible-data/crucible/internal/testenv"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/kernels"
)

var numbers = regexp.MustCompile(`[-+]?[0-9][0-9.e+-]*`)

// The loop on a kernel seed with the CPU kernel backend (gcc): a syntax
// error, then a wrong operator, then the reference; every observation
// equals a direct kernel verification of the same code.
func TestKernelTrajectoryOnTheCPUBackend(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (cpu kernel backend)")
	}
	var items []engine.Item
	g, _ := ingest.New(ingest.PresetTaskDir, ingest.Sink{Item: func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { return fmt.Errorf("%+v", r) }})
	if err := g.IngestPaths(context.Background(), []string{filepath.Join(testenv.RepoRoot(t), "examples/seeds/kernel/vector_add_f32/task.json")}); err != nil {
		t.Fatal(err)
	}
	it := items[0]
	script := func(round int) string {
		switch round {
		case 1:
			return strings.Replace(it.Reference, ";", "", 1)
		case 2:
			return strings.Replace(it.Reference, "a[i] + b[i]", "a[i] - b[i]", 1)
		}
		return it.Reference
	}
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		json.NewDecoder(r.Body).Decode(&req)
		round := 1
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				round++
			}
		}
		if !strings.Contains(req.Messages[0].Content, "GPU kernel engineer") || !strings.Contains(req.Messages[0].Content, "launch configuration") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		reply(w, "```c\n"+script(round)+"```", fmt.Sprintf("round %d", round))
	}))
	kc := kernels.DefaultConfig()
	kc.Trials, kc.Warmup, kc.Reps, kc.BootstrapRounds, kc.TempDir = 2, 0, 1, 20, t.TempDir()
	kv, err := kernels.NewVerifier(kc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	real := &RealBackend{Judges: judgesOf(t, kv), MaxDiagnostic: 1500}
	res, err := newTestRunner(t, testConfig(srv.URL), real, nil).Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "kernel/cpu")
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trajectories[0]
	want := []string{OutcomeCompilationError, OutcomeNumericMismatch, OutcomePass}
	if tr.Rounds != 3 || tr.FinalVerdict != VerdictPass || tr.Tag != "kernel/kernel" {
		for k, tu := range tr.Turns {
			t.Logf("turn %d: %+v", k+1, tu.Observation)
		}
		t.Fatalf("%s after %d rounds (%s)", tr.FinalVerdict, tr.Rounds, tr.Tag)
	}
	for k, tu := range tr.Turns {
		direct, _ := kv.Judge(context.Background(), it, engine.Candidate{ItemID: it.ItemID, CandidateID: "d", Code: tu.Code})
		// Every verification draws fresh inputs (issue 15), so the numbers
		// in a mismatch's diagnostic differ between runs; the rest must not.
		d, o := ObservationFromEvidence(engine.DomainKernel, direct, 1500), tu.Observation
		d.Diagnostic, o.Diagnostic = numbers.ReplaceAllString(d.Diagnostic, "#"), numbers.ReplaceAllString(o.Diagnostic, "#")
		if tu.Observation.Outcome != want[k] || !reflect.DeepEqual(d, o) {
			t.Errorf("round %d: %+v\ndirect %+v", tu.Round, tu.Observation, d)
		}
	}
}
