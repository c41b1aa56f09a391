package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{ctx, nil, exitOK},
		{ctx, errors.New("x"), exitInternal},
		{ctx, fmt.Errorf("load: %w", engine.ErrConfig), exitUsage},
		{ctx, fmt.Errorf("%w: flag", errUsage), exitUsage},
		{ctx, fmt.Errorf("f.parquet: %w", engine.ErrInput), exitInput},
		{ctx, fmt.Errorf("col: %w", engine.ErrSchema), exitInput},
		{ctx, fmt.Errorf("disk: %w", engine.ErrIO), exitIO},
		{ctx, fmt.Errorf("from x: %w", engine.ErrIncomplete), exitIncomplete},
		{ctx, withCode(exitFindings, errors.New("contaminated")), exitFindings},
		{canceled, context.Canceled, exitSignal},
	} {
		if got := exitCode(tc.ctx, tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestRootRejectsBadFlags(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"build", "--no-such-flag"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err := root.ExecuteContext(context.Background())
	if exitCode(context.Background(), err) != exitUsage {
		t.Fatalf("bad flag: %v -> %d", err, exitCode(context.Background(), err))
	}
	root = newRootCmd()
	root.SetArgs([]string{"doctor", "--log-format", "xml"})
	err = root.ExecuteContext(context.Background())
	if exitCode(context.Background(), err) != exitUsage {
		t.Fatalf("bad log format: %v", err)
	}
}

func TestIngestAndInspect(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"item_id":"x1","domain":"rtl","instruction":"do it","verifier":{"kind":"differential","harness":"module tb; endmodule"}}
{"item_id":"x2","domain":"rtl"}
`), 0o644)
	out := filepath.Join(dir, "out")
	var buf bytes.Buffer
	if err := runIngest(context.Background(), IngestOptions{Out: out, Paths: []string{in}, Writer: engine.DefaultWriterOptions(), Stdout: &buf}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "1 items, 1 rejected") {
		t.Fatalf("summary: %s", buf.String())
	}
	so, err := engine.LoadStageOutput(out)
	if err != nil || so.Rows("items") != 1 || so.Rows("rejections") != 1 {
		t.Fatalf("manifest: %v %+v", err, so)
	}
	buf.Reset()
	if err := runInspect(context.Background(), InspectOptions{Path: out, Samples: 1, MaxText: 40, Out: &buf}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== items: 1 rows", "== rejections: 1 rows", "item_id", "reason", "missing_field", "sample 0"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, buf.String())
		}
	}
	// An unreadable input is an error naming the file, with the input exit code.
	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, []byte("PAR1 not really"), 0o644)
	err = runIngest(context.Background(), IngestOptions{Out: filepath.Join(dir, "o2"), Paths: []string{bad}, Writer: engine.DefaultWriterOptions(), Stdout: &buf})
	if exitCode(context.Background(), err) != exitInput || !strings.Contains(err.Error(), bad) {
		t.Fatalf("bad parquet: %v", err)
	}
}

func TestBuildBundledSeedsIngest(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`name: seeds
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: rtl
    type: filter
    from: [ingest]
    config: {domains: [rtl]}
`, filepath.Join(root, "examples", "seeds"))), 0o644)
	var buf bytes.Buffer
	if err := runBuild(context.Background(), BuildOptions{Config: cfg, Out: &buf}); err != nil {
		t.Fatal(err)
	}
	so, err := engine.LoadStageOutput(filepath.Join(dir, "work", "rtl"))
	if err != nil {
		t.Fatal(err)
	}
	if so.Rows("items") < 20 || so.Rows("rejections") == 0 {
		t.Fatalf("want >= 20 rtl seeds kept and the kernel seeds filtered, got %d/%d", so.Rows("items"), so.Rows("rejections"))
	}
	buf.Reset()
	if err := runBuild(context.Background(), BuildOptions{Config: cfg, Out: &buf}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "skipped") != 2 {
		t.Fatalf("second build should skip both stages:\n%s", buf.String())
	}
}

func TestDoctorListsEveryToolchain(t *testing.T) {
	var buf bytes.Buffer
	if err := runDoctor(context.Background(), DoctorOptions{Out: &buf}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"iverilog", "vvp", "yosys", "verilator", "cc", "python3", "torch", "triton", "cuda driver", "nvml", "kernel backend cpu", "kernel backend cuda"} {
		if !strings.Contains(buf.String(), "\n"+want+" ") {
			t.Errorf("doctor does not list %q:\n%s", want, buf.String())
		}
	}
	// Where the RTL toolchain is installed (make test installs it), doctor says so with a version.
	if !strings.Contains(buf.String(), "Icarus Verilog") {
		t.Errorf("doctor shows no iverilog version:\n%s", buf.String())
	}
}

func TestGateFunnel(t *testing.T) {
	counts := map[string]int64{"seeds": 4, "candidates": 10, "gate2.strength.passed": 7, "gate1.static.passed": 9, "gate2.strength.in": 9, "admitted": 7}
	if got, want := gateFunnel(counts), "seeds 4 → candidates 10 → static 9 → strength 7 → admitted 7"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if got := gateFunnel(map[string]int64{"kept": 3}); got != "" {
		t.Fatalf("a stage without gates has no funnel, got %q", got)
	}
}
