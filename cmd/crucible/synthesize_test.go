package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/crucible-data/crucible/internal/testenv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/ops/synth"
	"github.com/crucible-data/crucible/rtl"
)

// synthScript answers round 1 with the reference minus its first ';'
// (a syntax error), round 2 with every output tied to zero (a logic bug),
// round 3 with the reference renamed to TopModule.
func synthScript(t *testing.T, items []engine.Item) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []textgen.Message }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		round := 1
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				round++
			}
		}
		var it *engine.Item
		for i := range items {
			if strings.HasPrefix(req.Messages[1].Content, strings.TrimSpace(items[i].Instruction)+"\n") {
				it = &items[i]
			}
		}
		if it == nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fixed, err := rtl.RenameModule(it.Reference, "RefModule", "TopModule")
		if err != nil {
			t.Errorf("%s: %v", it.ItemID, err)
		}
		code := fixed
		switch round {
		case 1:
			code = strings.Replace(fixed, ";", "", 1)
		case 2:
			var ports, body []string
			for _, p := range it.Interface.Ports {
				ports = append(ports, fmt.Sprintf("    %s [%d:0] %s", p.Direction, p.Width-1, p.Name))
				if p.Direction == "output" {
					body = append(body, fmt.Sprintf("    assign %s = 0;", p.Name))
				}
			}
			code = "module TopModule (\n" + strings.Join(ports, ",\n") + "\n);\n" + strings.Join(body, "\n") + "\nendmodule\n"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant",
			"content": "```verilog\n" + code + "```", "reasoning_content": fmt.Sprintf("round %d of %s", round, it.ItemID)}}}})
		w.Write(b)
	})
}

// The acceptance run: `crucible synthesize` on the bundled RTL corpus with
// the scripted generator; every real-backend observation equals what
// `crucible verify rtl` says about the same code, and every trajectory
// passes at round 3 as scripted.
func TestSynthesizeOnTheBundledCorpusMatchesVerifyRTL(t *testing.T) {
	if _, err := exec.LookPath("iverilog"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("iverilog not installed (scripts/setup.sh installs it)")
		}
		t.Skip("iverilog not installed; run scripts/setup.sh")
	}
	root := testenv.RepoRoot(t)
	tmp := t.TempDir()
	ctx := context.Background()
	itemsDir, outDir, evDir := filepath.Join(tmp, "items"), filepath.Join(tmp, "synth"), filepath.Join(tmp, "verify")
	if err := runIngest(ctx, IngestOptions{Preset: "taskdir", Out: itemsDir, Paths: []string{filepath.Join(root, "examples/seeds/rtl")},
		Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	paths, _ := shardInputs([]string{itemsDir}, "items")
	items, err := engine.ReadAll[engine.Item](paths...)
	if err != nil || len(items) < 20 {
		t.Fatalf("%d items: %v", len(items), err)
	}
	srv := httptest.NewServer(synthScript(t, items))
	defer srv.Close()
	cfg := synth.DefaultStageConfig()
	cfg.Generator.BaseURL, cfg.Generator.Model, cfg.Generator.APIKeyEnv, cfg.Generator.Timeout = srv.URL, "scripted", "", 10*time.Second
	cfg.RealLimit = 2
	var out bytes.Buffer
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	o := SynthesizeOptions{Items: itemsDir, Preset: "items", Out: outDir, Config: cfg, Writer: engine.DefaultWriterOptions(), Stdout: &out, Log: quiet}
	if err := runSynthesize(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "world-model fidelity") || !strings.Contains(out.String(), fmt.Sprintf("3:%d", len(items))) {
		t.Fatalf("summary:\n%s", out.String())
	}
	for _, png := range []string{"synth-rounds-to-pass-rtl.png", "synth-thinking-rtl.png"} {
		if st, err := os.Stat(filepath.Join(outDir, png)); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", png, err)
		}
	}
	recs := selReadKind[synth.TrajectoryRecord](t, outDir, synth.KindRecords)
	if len(recs) != len(items) {
		t.Fatalf("%d trajectories for %d items", len(recs), len(items))
	}
	var cands []engine.Candidate
	turns := map[string]synth.Turn{}
	for _, rec := range recs {
		if rec.FinalVerdict != synth.VerdictPass || rec.Rounds != 3 {
			t.Errorf("%s: %s after %d rounds, want pass after 3", rec.ItemID, rec.FinalVerdict, rec.Rounds)
		}
		for _, tu := range rec.Turns {
			id := fmt.Sprintf("%s/%d", rec.TrajectoryID, tu.Round)
			cands = append(cands, engine.Candidate{ItemID: rec.ItemID, CandidateID: id, Code: tu.Code})
			turns[id] = tu
		}
	}
	var jl bytes.Buffer
	for _, c := range cands {
		b, _ := json.Marshal(c)
		jl.Write(append(b, '\n'))
	}
	candPath := filepath.Join(tmp, "cands.jsonl")
	os.WriteFile(candPath, jl.Bytes(), 0o644)
	vc := rtl.DefaultStageConfig()
	vc.Workers = 2
	if err := runVerifyRTL(ctx, VerifyRTLOptions{Items: itemsDir, Candidates: candPath, Out: evDir, Preset: "items", Config: vc,
		Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	evs := selReadKind[engine.Evidence](t, evDir, "evidence")
	if len(evs) != len(cands) {
		t.Fatalf("%d evidence rows for %d candidates", len(evs), len(cands))
	}
	for _, ev := range evs {
		want := synth.ObservationFromEvidence(engine.DomainRTL, ev, cfg.MaxDiagnostic)
		if got := turns[ev.CandidateID].Observation; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: synthesize observed %+v, verify rtl says %+v", ev.CandidateID, got, want)
		}
	}
	if pk := selReadKind[struct {
		ID string `arrow:"id"`
	}](t, outDir, synth.KindPack); len(pk) != len(items) {
		t.Fatalf("%d pack rows", len(pk))
	}
}

// Flags override --config, which overrides the defaults; a bad value is a
// usage error naming the field.
func TestSynthesizeFlagLayering(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "synth.yaml")
	os.WriteFile(cfgPath, []byte("rounds: 6\naudit_fraction: 2\ngenerator: {base_url: \"http://x/v1\", model: from-file}\n"), 0o644)
	run := func(args ...string) error {
		cmd := newSynthesizeCmd()
		cmd.SetArgs(append([]string{"--items", filepath.Join(dir, "missing"), "--out", dir, "--config", cfgPath}, args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return cmd.Execute()
	}
	// The file's bad audit_fraction is read; --rounds 0 overrides its 6.
	if err := run("--rounds", "0"); err == nil || !strings.Contains(err.Error(), "rounds: 0 < 1") || !strings.Contains(err.Error(), "audit_fraction: 2") {
		t.Fatalf("want both field errors: %v", err)
	}
	// A flag fixes the file's value: the run gets as far as reading --items.
	if err := run("--audit-fraction", "0.5"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("want an --items error, got %v", err)
	}
}
