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
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
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
	testenv.Tools(t, "iverilog")
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

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// `crucible synthesize` commits through the runner: a run whose generator
// endpoint failed is committed unfinished, so the same command runs again
// (and resumes) instead of skipping; a finished run's identical rerun skips
// (manifest unchanged, no request sent); a changed flag, a changed task
// file or --force runs again; the manifest has a config hash and every file
// of the task folders hashed.
func TestSynthesizeRerunSkipsUnlessUnfinished(t *testing.T) {
	testenv.Tools(t, "iverilog")
	root := testenv.RepoRoot(t)
	tmp := t.TempDir()
	ctx := context.Background()
	tasks, all := filepath.Join(tmp, "tasks"), filepath.Join(tmp, "all")
	for i, name := range []string{"counter_gray4", "arbiter_fixed4", "counter_mod10_tc"} {
		if i < 2 {
			copyTree(t, filepath.Join(root, "examples/seeds/rtl", name), filepath.Join(tasks, name))
		}
		copyTree(t, filepath.Join(root, "examples/seeds/rtl", name), filepath.Join(all, name))
	}
	items, _, _, err := loadRTLItems(ctx, all, "taskdir")
	if err != nil || len(items) != 3 {
		t.Fatalf("%d items: %v", len(items), err)
	}
	script := synthScript(t, items)
	var failing, requests atomic.Int64
	failing.Store(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if failing.Load() == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		script.ServeHTTP(w, r)
	}))
	defer srv.Close()
	out := filepath.Join(tmp, "synth")
	cfg := synth.DefaultStageConfig()
	cfg.Generator.BaseURL, cfg.Generator.Model, cfg.Generator.APIKeyEnv, cfg.Generator.Timeout = srv.URL, "scripted", "", 10*time.Second
	cfg.Generator.Retries, cfg.Generator.Backoff = 0, time.Millisecond
	cfg.RealLimit = 2
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(what string, o SynthesizeOptions) (string, []byte) {
		t.Helper()
		var stdout bytes.Buffer
		o.Items, o.Preset, o.Out, o.Writer, o.Stdout, o.Log = tasks, "taskdir", out, engine.DefaultWriterOptions(), &stdout, quiet
		if o.Config.Generator.BaseURL == "" {
			o.Config = cfg
		}
		if err := runSynthesize(ctx, o); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, stdout.String())
		}
		m, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), m
	}
	ran := func(what, stdout string) {
		t.Helper()
		if !strings.Contains(stdout, "synthesized ") || strings.Contains(stdout, "up to date") {
			t.Fatalf("%s: want a run, got:\n%s", what, stdout)
		}
	}
	manifest := func() *engine.Manifest {
		t.Helper()
		m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	// The generator fails: committed, but unfinished.
	s, _ := run("failing endpoint", SynthesizeOptions{})
	ran("failing endpoint", s)
	if !strings.Contains(s, "re-run the same command to resume") || manifest().Counts[engine.CountUnfinished] != 1 {
		t.Fatalf("a failed endpoint left no unfinished mark: counts %v\n%s", manifest().Counts, s)
	}
	for _, f := range []string{synth.SummaryFile, "synth-journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	// The same command again resumes rather than skipping.
	failing.Store(0)
	s, finished := run("rerun after failures", SynthesizeOptions{})
	ran("rerun after failures", s)
	m := manifest()
	if _, ok := m.Counts[engine.CountUnfinished]; ok || m.Counts["generator_failed"] != 0 || strings.Contains(s, "trajectories incomplete") {
		t.Fatalf("the resumed run is still unfinished: counts %v\n%s", m.Counts, s)
	}
	if recs := selReadKind[synth.TrajectoryRecord](t, out, synth.KindRecords); len(recs) != 2 || recs[0].FinalVerdict != synth.VerdictPass || recs[1].FinalVerdict != synth.VerdictPass {
		t.Fatalf("resumed trajectories: %+v", recs)
	}
	// The summary and plots are there, older than the manifest that commits them.
	mst, _ := os.Stat(filepath.Join(out, "manifest.json"))
	for _, f := range []string{synth.SummaryFile, "synth-rounds-to-pass-rtl.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.ModTime().After(mst.ModTime()) {
			t.Fatalf("%s: %v (written after the manifest: %v)", f, err, err == nil && st.ModTime().After(mst.ModTime()))
		}
	}
	if m.ConfigHash == "" {
		t.Fatal("manifest without a config hash")
	}
	cwd, _ := os.Getwd()
	hashed := map[string]string{}
	for _, in := range m.Inputs {
		p := in.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		hashed[filepath.Clean(p)] = in.SHA256
	}
	var files int
	filepath.WalkDir(tasks, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			abs, _ := filepath.Abs(p)
			sha, _ := engine.HashFile(p)
			if hashed[abs] != sha {
				t.Errorf("input %s not hashed in the manifest (inputs %v)", p, m.Inputs)
			}
		}
		return nil
	})
	if files != 8 || len(m.Inputs) != files {
		t.Fatalf("%d task files, %d manifest inputs", files, len(m.Inputs))
	}

	// Finished: an identical rerun skips without a request.
	before := requests.Load()
	s, again := run("identical rerun", SynthesizeOptions{})
	if !strings.Contains(s, "up to date") || strings.Contains(s, "synthesized ") || !bytes.Equal(again, finished) || requests.Load() != before {
		t.Fatalf("identical rerun: %d requests, manifest changed %v:\n%s", requests.Load()-before, !bytes.Equal(again, finished), s)
	}
	s, _ = run("--force", SynthesizeOptions{Force: true})
	ran("--force", s)
	changed := cfg
	changed.Concurrency = 3
	s, _ = run("changed --concurrency", SynthesizeOptions{Config: changed})
	ran("changed --concurrency", s)
	s, _ = run("back to the first flags", SynthesizeOptions{})
	ran("back to the first flags", s)
	// Changed inputs (another task folder) run again: the journal resumes
	// the two finished trajectories and the new task gets its own.
	copyTree(t, filepath.Join(all, "counter_mod10_tc"), filepath.Join(tasks, "counter_mod10_tc"))
	before = requests.Load()
	s, _ = run("changed inputs", SynthesizeOptions{})
	ran("changed inputs", s)
	if !strings.Contains(s, "synthesized 3 trajectories from 3 items") || requests.Load()-before != 3 {
		t.Fatalf("changed inputs: %d requests (want the new task's 3 rounds only):\n%s", requests.Load()-before, s)
	}
}
