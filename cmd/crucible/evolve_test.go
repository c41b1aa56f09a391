package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/gates"
)

// TestEvolveThenAdmit drives `crucible evolve` and `crucible admit` (their
// run functions) over two bundled seeds copied to a temp dir.
func TestEvolveThenAdmit(t *testing.T) {
	for _, tool := range []string{"iverilog", "yosys"} {
		if _, err := os.Stat("/usr/bin/" + tool); err != nil {
			if _, err2 := os.Stat("/usr/local/bin/" + tool); err2 != nil {
				t.Skipf("%s not installed", tool)
			}
		}
	}
	root := testenv.RepoRoot(t)
	seeds, tmp := t.TempDir(), t.TempDir()
	for _, s := range []string{"counter_updown4_arst_n", "barrel_shifter16"} {
		if err := os.CopyFS(filepath.Join(seeds, s), os.DirFS(filepath.Join(root, "examples", "seeds", "rtl", s))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ing := filepath.Join(tmp, "ingest")
	if err := runIngest(ctx, IngestOptions{Preset: ingest.PresetTaskDir, Out: ing, Paths: []string{seeds}, Writer: engine.DefaultWriterOptions(), Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	ecfg := evolve.DefaultStageConfig()
	ecfg.Operators = []string{"reset_sync_async", "shift_direction", "bus_width", "reformat"}
	var out bytes.Buffer
	evo := filepath.Join(tmp, "evolve")
	if err := runEvolve(ctx, EvolveOptions{Items: []string{ing}, Out: evo, Config: ecfg, Writer: engine.DefaultWriterOptions(), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "2 seeds → 8 candidates") {
		t.Errorf("evolve summary: %s", out.String())
	}
	out.Reset()
	adm := filepath.Join(tmp, "admit")
	acfg := gates.DefaultStageConfig()
	acfg.Strength.MaxMutants = 2
	if err := runAdmit(ctx, AdmitOptions{From: []string{evo}, Out: adm, Config: acfg, Writer: engine.DefaultWriterOptions(), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	m, err := engine.ReadManifest(filepath.Join(adm, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	// reformat ×2 is rejected at strength; everything else is admitted.
	if m.Counts["admitted"] != 6 || m.Counts["rejected.strength.parent_not_distinguished"] != 2 || m.Rows("items") != 2+6 {
		t.Errorf("admit counts %v, items %d", m.Counts, m.Rows("items"))
	}
	if !strings.Contains(out.String(), "candidates 8 → static 8") || !strings.Contains(out.String(), "reformat") {
		t.Errorf("admit output: %s", out.String())
	}
	// The cobra commands layer flags over the defaults.
	evo2, adm2 := filepath.Join(tmp, "evolve2"), filepath.Join(tmp, "admit2")
	ec := newEvolveCmd()
	ec.SetArgs([]string{"--items", ing, "--out", evo2, "--operators", "bus_width", "--no-solution-first", "--tb-cycles", "50"})
	ec.SetOut(&out)
	if err := ec.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	ac := newAdmitCmd()
	ac.SetArgs([]string{"--from", evo2, "--out", adm2, "--order", "static,strength", "--max-mutants", "1"})
	ac.SetOut(&out)
	if err := ac.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	m2, err := engine.ReadManifest(filepath.Join(adm2, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m2.Counts["candidates"] != 2 || m2.Counts["gate2.strength.in"] != 2 || m2.Counts["gate3.audit.in"] != 0 || m2.Counts["operator.bus_width.admitted"] != 2 {
		t.Errorf("flag-driven run counts %v", m2.Counts)
	}
	// Bad config is a usage error naming the field.
	bad := gates.DefaultStageConfig()
	bad.Order = []string{"static", "nope"}
	err = runAdmit(ctx, AdmitOptions{From: []string{evo}, Out: adm, Config: bad, Stdout: &out})
	if err == nil || exitCode(ctx, err) != exitUsage || !strings.Contains(err.Error(), "nope") {
		t.Errorf("bad order: %v (exit %d)", err, exitCode(ctx, err))
	}
}

// `crucible evolve` is the evolve stage run through the pipeline runner,
// over an ingest output directory or a file of item rows: a second
// identical run skips; a changed flag, a changed --config file, a changed
// seed file or --force runs it again.
func TestEvolveSkipsWhenCurrent(t *testing.T) {
	testenv.Tools(t, "iverilog")
	root := testenv.RepoRoot(t)
	seeds, tmp := t.TempDir(), t.TempDir()
	if err := os.CopyFS(filepath.Join(seeds, "s"), os.DirFS(filepath.Join(root, "examples", "seeds", "rtl", "counter_updown4_arst_n"))); err != nil {
		t.Fatal(err)
	}
	ing := filepath.Join(tmp, "ingest")
	if _, err := runCLI(t, "ingest", "--no-progress", "--preset", "taskdir", "--out", ing, seeds); err != nil {
		t.Fatal(err)
	}
	items := selReadKind[engine.Item](t, ing, "items")
	file := filepath.Join(tmp, "seeds.jsonl")
	writeJSONL(t, file, items[0])
	conf := filepath.Join(tmp, "evolve.yaml")
	os.WriteFile(conf, []byte("tb_cycles: 40\n"), 0o644)
	for _, in := range []string{ing, file} {
		out := filepath.Join(tmp, "evolve-"+filepath.Base(in))
		args := []string{"evolve", "--no-progress", "--items", in, "--out", out, "--operators", "bus_width", "--no-solution-first"}
		expectRun(t, out, "ran", "1 seeds → 1 candidates", args...)
		expectRun(t, out, "skipped", "seeds →", args...)
		expectRun(t, out, "ran", "1 seeds →", append(args, "--tb-cycles", "50")...)
		expectRun(t, out, "ran", "1 seeds →", append(args, "--config", conf)...)
		expectRun(t, out, "skipped", "seeds →", append(args, "--config", conf)...)
		os.WriteFile(conf, []byte("tb_cycles: 60\n"), 0o644)
		expectRun(t, out, "ran", "1 seeds →", append(args, "--config", conf)...)
		expectRun(t, out, "ran", "1 seeds →", append(args, "--config", conf, "--force")...)
		os.WriteFile(conf, []byte("tb_cycles: 40\n"), 0o644)
	}
	items[0].Instruction += " (revised)"
	writeJSONL(t, file, items[0])
	evo := filepath.Join(tmp, "evolve-seeds.jsonl")
	evolveArgs := []string{"evolve", "--no-progress", "--items", file, "--out", evo, "--operators", "bus_width", "--no-solution-first"}
	expectRun(t, evo, "ran", "1 seeds →", evolveArgs...)

	// admit reads the evolve output as its upstream: it skips while that is
	// unchanged (a forced evolve with the same content included), and runs
	// again for a changed flag or a changed upstream.
	adm := filepath.Join(tmp, "admit")
	admitArgs := []string{"admit", "--no-progress", "--from", evo, "--out", adm, "--order", "static,strength", "--max-mutants", "1"}
	expectRun(t, adm, "ran", "candidates 1 → static 1", admitArgs...)
	expectRun(t, adm, "skipped", "candidates", admitArgs...)
	expectRun(t, adm, "ran", "candidates 1", append(admitArgs, "--set", "strength.min_mutant_kill_rate=0.5")...)
	expectRun(t, evo, "ran", "1 seeds →", append(evolveArgs, "--force")...)
	expectRun(t, adm, "skipped", "candidates", append(admitArgs, "--set", "strength.min_mutant_kill_rate=0.5")...)
	expectRun(t, evo, "ran", "1 seeds →", append(evolveArgs, "--tb-cycles", "30")...)
	expectRun(t, adm, "ran", "candidates 1", append(admitArgs, "--set", "strength.min_mutant_kill_rate=0.5")...)
}
