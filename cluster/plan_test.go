package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

func TestArraySpec(t *testing.T) {
	for _, c := range []struct {
		parts []int
		max   int
		want  string
	}{
		{[]int{0, 1, 2, 3}, 0, "0-3"},
		{[]int{3, 0, 1, 7, 9, 10}, 0, "0-1,3,7,9-10"},
		{[]int{2}, 0, "2"},
		{[]int{0, 1, 2}, 2, "0-2%2"},
	} {
		if got := arraySpec(c.parts, c.max); got != c.want {
			t.Errorf("arraySpec(%v, %d) = %q, want %q", c.parts, c.max, got, c.want)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	got, err := parseSqueue("5|2-3%2|PENDING|JobArrayTaskLimit\n5|0|RUNNING|None\n8|0-1|PENDING|DependencyNeverSatisfied\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []queueEntry{{"5", "2-3%2", "PENDING", "JobArrayTaskLimit"}, {"5", "0", "RUNNING", "None"}, {"8", "0-1", "PENDING", "DependencyNeverSatisfied"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	if _, err := parseSqueue("5|0|RUNNING\n"); !errors.Is(err, ErrScheduler) {
		t.Fatalf("a short line must be ErrScheduler, got %v", err)
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := DefaultConfig()
	c.Shards = 0
	c.Resources.Memory = "4GB"
	c.Stages = map[string]StagePolicy{"nope": {Shards: -1, Resources: Resources{CPUs: -2}}}
	err := c.Validate(&engine.PipelineConfig{Stages: []engine.StageSpec{{Name: "ingest"}}})
	if !errors.Is(err, engine.ErrConfig) {
		t.Fatalf("want ErrConfig, got %v", err)
	}
	for _, want := range []string{"shards: 0", "resources.memory", "stages.nope: the pipeline has no stage", "stages.nope.shards", "stages.nope.cpus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestLoadConfigFileAndPipelineBlock(t *testing.T) {
	dir := t.TempDir()
	ex := filepath.Join(dir, "executor.yaml")
	os.WriteFile(ex, []byte("shards: 8\nresources: {cpus: 2, memory: 4G, time: 90m}\nstages:\n  dedup: {shards: 1, memory: 64G}\n"), 0o644)
	c, err := LoadConfig("", ex)
	if err != nil {
		t.Fatal(err)
	}
	if c.Shards != 8 || c.Resources.CPUs != 2 || c.Resources.Time != 90*time.Minute || c.Stages["dedup"].Memory != "64G" || c.Poll != 2*time.Second {
		t.Fatalf("decoded %+v", c)
	}
	os.WriteFile(ex, []byte("shard: 8\n"), 0o644)
	if _, err := LoadConfig("", ex); !errors.Is(err, engine.ErrConfig) || !strings.Contains(err.Error(), "shard") {
		t.Fatalf("an unknown key must be a config error naming it, got %v", err)
	}
	pipe := filepath.Join(dir, "p.yaml")
	os.WriteFile(pipe, []byte("name: p\nwork_dir: w\nstages: []\nexecutor:\n  shards: 3\n"), 0o644)
	if c, err := LoadConfig(pipe, ""); err != nil || c.Shards != 3 {
		t.Fatalf("executor: block: %+v %v", c, err)
	}
	os.WriteFile(pipe, []byte("name: p\nwork_dir: w\nstages: []\n"), 0o644)
	if c, err := LoadConfig(pipe, ""); err != nil || c.Shards != DefaultConfig().Shards {
		t.Fatalf("no executor block means defaults: %+v %v", c, err)
	}
}

func TestPlanShardsAndResources(t *testing.T) {
	cfg := &engine.PipelineConfig{Name: "p", WorkDir: "/shared/work", Stages: []engine.StageSpec{
		{Name: "ingest", Type: "ingest"},
		{Name: "verify", Type: "verify_kernel", From: []string{"ingest"}},
		{Name: "dedup", Type: "dedup", From: []string{"verify"}},
		{Name: "pack", Type: "pack", From: []string{"dedup"}},
		{Name: "filter", Type: "filter", From: []string{"dedup"}},
		{Name: "sign", Type: "dedup_sign", From: []string{"filter"}},
		{Name: "merge", Type: "dedup_merge", From: []string{"sign"}},
		{Name: "keep", Type: "dedup_filter", From: []string{"filter", "merge"}},
		{Name: "lengths", Type: "pack_lengths", From: []string{"keep"}},
		{Name: "plan", Type: "pack_plan", From: []string{"lengths"}},
		{Name: "write", Type: "pack_write", From: []string{"plan"}},
	}}
	ec := DefaultConfig()
	ec.Shards = 16
	ec.Resources = Resources{CPUs: 2, Memory: "4G", SbatchArgs: []string{"--account=data"}}
	ec.Stages = map[string]StagePolicy{
		"verify": {Resources: Resources{GPUs: 1, Partition: "gpu", SbatchArgs: []string{"--qos=high"}}},
		"filter": {Shards: 4},
	}
	p, err := NewPlan(testRegistry(), cfg, "/shared/p.yaml", ec, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range p.Stages {
		got[s.Name] = s.Shards
	}
	// Parallelism is the stage types' own declaration: every global type
	// (dedup, pack, and the merge and plan steps of the cross-shard forms)
	// runs as one task, whatever the default split.
	want := map[string]int{"ingest": 16, "verify": 16, "dedup": 1, "pack": 1, "filter": 4,
		"sign": 16, "merge": 1, "keep": 16, "lengths": 16, "plan": 1, "write": 16}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shards %v, want %v", got, want)
	}
	// A policy may not split a global stage: that would deduplicate or
	// plan within a part, silently.
	for _, name := range []string{"dedup", "merge", "plan"} {
		bad := ec
		bad.Stages = map[string]StagePolicy{name: {Shards: 4}}
		if _, err := NewPlan(testRegistry(), cfg, "/shared/p.yaml", bad, nil); !errors.Is(err, engine.ErrConfig) || !strings.Contains(err.Error(), "global") {
			t.Errorf("%s split by policy: err = %v, want a config error saying the type is global", name, err)
		}
	}
	v, _ := p.Stage("verify")
	if v.Resources.GPUs != 1 || v.Resources.CPUs != 2 || v.Resources.Partition != "gpu" || !reflect.DeepEqual(v.Resources.SbatchArgs, []string{"--account=data", "--qos=high"}) {
		t.Fatalf("verify resources %+v", v.Resources)
	}
	args := sbatchArgs(p, v, []int{0, 1, 2, 5}, []string{"41"}, "/shared/work/logs/verify", "/shared/work/logs/verify/job.sbatch")
	wantArgs := []string{"--job-name=crucible.p.verify", "--array=0-2,5", "--output=/shared/work/logs/verify/%A_%4a.log",
		"--chdir=/shared/work", "--dependency=afterok:41", "--kill-on-invalid-dep=yes", "--cpus-per-task=2", "--mem=4G",
		"--partition=gpu", "--gres=gpu:1", "--account=data", "--qos=high", "/shared/work/logs/verify/job.sbatch"}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Fatalf("sbatch args\n got %q\nwant %q", args, wantArgs)
	}
	if p.LogDir != "/shared/work/logs" {
		t.Fatalf("log dir %s", p.LogDir)
	}
	if _, err := NewPlan(testRegistry(), cfg, "/shared/p.yaml", ec, []string{"nope"}); !errors.Is(err, engine.ErrConfig) {
		t.Fatalf("--stage of an unknown stage: %v", err)
	}
}

func TestBatchScriptQuotesAndShardsByTaskID(t *testing.T) {
	cfg := &engine.PipelineConfig{Name: "p", WorkDir: "/w it's", Stages: []engine.StageSpec{{Name: "ingest", Type: "ingest"}, {Name: "dedup", Type: "dedup"}}}
	p, err := NewPlan(testRegistry(), cfg, "/c/p.yaml", DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The "binary" prints its arguments one per line, so running the
	// script through sh shows exactly what crucible would receive.
	echo := filepath.Join(t.TempDir(), "args")
	os.WriteFile(echo, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755)
	r := &SlurmRun{Plan: p, opts: SlurmOptions{Binary: echo}}
	s, _ := p.Stage("ingest")
	script := filepath.Join(t.TempDir(), "job.sbatch")
	os.WriteFile(script, []byte(r.batchScript(s)), 0o644)
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=3")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "build\n--config\n/c/p.yaml\n--stage\ningest\n--work-dir\n/w it's\n--no-progress\n--log-format\njson\n--shard\n3/4\n"
	if string(out) != want {
		t.Fatalf("task 3 ran with\n%s\nwant\n%s\nscript:\n%s", out, want, r.batchScript(s))
	}
	d, _ := p.Stage("dedup")
	if strings.Contains(r.batchScript(d), "--shard") {
		t.Errorf("a one-part stage must run unsharded:\n%s", r.batchScript(d))
	}
}

// TestPartStatesAgreeWithRunner runs a two-stage pipeline split in 4 with
// the real runner, then checks that PartStates calls every part committed,
// and that it notices each kind of change the runner would redo a part for.
func TestPartStatesAgreeWithRunner(t *testing.T) {
	dir := t.TempDir()
	items := writeItemsFixture(t, dir, 4, 50)
	text := fmt.Sprintf(`name: states
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
  - name: rtl
    type: filter
    from: [ingest]
    config: {domains: [rtl]}
`, items)
	pipe := writePipeline(t, dir, text)
	load := func() *engine.PipelineConfig {
		cfg, err := engine.LoadPipeline(pipe, testRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	runAll := func(cfg *engine.PipelineConfig) {
		for i := 0; i < 4; i++ {
			r := &engine.Runner{Registry: testRegistry()}
			if _, err := r.Run(context.Background(), cfg, engine.RunOptions{Shard: engine.Shard{Index: i, Count: 4},
				Writer: cfg.WriterOptions(), Log: slog.New(slog.DiscardHandler)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stale := func(cfg *engine.PipelineConfig, stage string) map[int]string {
		p, err := NewPlan(testRegistry(), cfg, pipe, DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := p.Stage(stage)
		states, err := PartStates(context.Background(), p.Registry, cfg, s, cfg.WriterOptions())
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]string{}
		for _, st := range states {
			if !st.Committed {
				out[st.Shard.Index] = st.Reason
			}
		}
		return out
	}
	cfg := load()
	if got := stale(cfg, "ingest"); len(got) != 4 {
		t.Fatalf("before any run every part must be stale, got %v", got)
	}
	runAll(cfg)
	for _, st := range []string{"ingest", "rtl"} {
		if got := stale(cfg, st); len(got) != 0 {
			t.Fatalf("after a full run, stage %s parts %v are judged stale (PartStatus disagrees with the runner)", st, got)
		}
	}

	// A changed input file: ingest parts are byte ranges balanced over all
	// inputs, so a file that grows moves the boundaries after it; the part
	// reading it is stale for its content, the others for their ranges.
	f := filepath.Join(items, "items-02.jsonl")
	data, _ := os.ReadFile(f)
	os.WriteFile(f, append(data, data[:strings.IndexByte(string(data), '\n')+1]...), 0o644)
	got := stale(cfg, "ingest")
	if len(got) == 0 {
		t.Fatal("changed items-02: no ingest part is stale")
	}
	for k, why := range got {
		if !strings.Contains(why, "input") {
			t.Fatalf("changed items-02: part %d stale for %q, want an input change", k, why)
		}
	}
	runAll(cfg)
	if got := stale(cfg, "rtl"); len(got) != 0 {
		t.Fatalf("after rerunning, rtl stale %v", got)
	}

	// A deleted shard.
	m, _ := engine.ReadManifest(filepath.Join(dir, "work", "rtl", engine.ManifestName(engine.Shard{Index: 1, Count: 4})))
	os.Remove(filepath.Join(dir, "work", "rtl", m.Shards[0].Path))
	if got := stale(cfg, "rtl"); len(got) != 1 || !strings.Contains(got[1], "shard missing") {
		t.Fatalf("deleted shard: %v", got)
	}
	runAll(cfg)

	// A new input file changes which files every part owns.
	os.WriteFile(filepath.Join(items, "items-09.jsonl"), data[:strings.IndexByte(string(data), '\n')+1], 0o644)
	if got := stale(cfg, "ingest"); len(got) == 0 {
		t.Fatal("a new input file must make some ingest part stale")
	}
	os.Remove(filepath.Join(items, "items-09.jsonl"))

	// A changed config.
	os.WriteFile(pipe, []byte(strings.Replace(text, "domains: [rtl]", "domains: [rtl, kernel]", 1)), 0o644)
	cfg = load()
	if got := stale(cfg, "rtl"); len(got) != 4 || !strings.Contains(got[0], "config changed") {
		t.Fatalf("changed filter config: %v", got)
	}
	if got := stale(cfg, "ingest"); len(got) != 0 {
		t.Fatalf("ingest config did not change but parts %v are stale", got)
	}
}
