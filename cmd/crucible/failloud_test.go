package main

// Regression tests for issue 16 ("fail loudly, never silently wrong"):
// exit codes, interrupts and the consistency of what the CLI prints.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/pack"
)

// runCLI runs a command line in-process the way main does.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := executeRoot(context.Background(), root)
	return out.String(), err
}

// Issue 16.5: a bad command line is exit 2, as the README says, whatever
// part of cobra rejects it.
func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"build"},                          // --config missing
		{"ingest", "--out", dir},           // no path
		{"inspect", "a", "b"},              // too many arguments
		{"no-such-command"},                // unknown command
		{"pack", "--in", "x", "--bogus=1"}, // unknown flag
	} {
		_, err := runCLI(t, args...)
		if code := exitCode(context.Background(), err); code != exitUsage {
			t.Errorf("crucible %s: exit %d (%v), want %d", strings.Join(args, " "), code, err, exitUsage)
		}
	}
	// An error from a command that ran keeps its own category.
	_, err := runCLI(t, "inspect", filepath.Join(dir, "missing"))
	if code := exitCode(context.Background(), err); code == exitUsage || code == exitOK {
		t.Errorf("inspect of a missing path: exit %d (%v)", code, err)
	}
}

func writeIngestPipeline(t *testing.T, dir string) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	cfg := filepath.Join(dir, "p.yaml")
	err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: typo
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: verify-rtl
    type: filter
    from: [ingest]
    config: {domains: [rtl]}
`, filepath.Join(root, "examples", "seeds"))), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Issue 16.5: `build --stage verfy-rtl` (a typo) is exit 2 naming the known
// stages; it runs nothing and writes no summary, report or history row.
func TestBuildUnknownStageExit2(t *testing.T) {
	dir := t.TempDir()
	cfg := writeIngestPipeline(t, dir)
	_, err := runCLI(t, "build", "--config", cfg, "--stage", "verfy-rtl", "--no-progress")
	if code := exitCode(context.Background(), err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
	}
	for _, want := range []string{`"verfy-rtl"`, "ingest, verify-rtl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, p := range []string{"history", filepath.Join("work", "run-summary.json"), filepath.Join("work", "report.json")} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a build that ran nothing", p)
		}
	}
}

// Issue 16.5: ingest stops on SIGINT with exit 130 instead of reading on.
// The input is a FIFO the test keeps feeding, so an ingest that ignores the
// interrupt never ends (the guard below fails the test), and the moment to
// signal is an event: a write into the FIFO returned, so ingest is reading.
func TestIngestStopsOnSIGINT(t *testing.T) {
	bin := crucibleBinary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "items.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cmd := exec.Command(bin, "ingest", "--no-progress", "--out", filepath.Join(dir, "out"), fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once ingest opened it
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	line := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"item_id":"i%d","domain":"rtl","family":"counter","instruction":"Count up on every clock.","reference":"module m; endmodule","verifier":{"kind":"differential","top":"tb"}}`+"\n", i))
	}
	// 256 KiB is more than a pipe holds: these writes return only once
	// ingest has consumed most of them.
	i := 0
	for n := 0; n < 256<<10; i++ {
		b := line(i)
		if _, err := w.Write(b); err != nil {
			t.Fatalf("ingest stopped reading before the interrupt: %v\n%s", err, stderr.String())
		}
		n += len(b)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// Keep feeding until ingest goes away (the write fails with EPIPE).
	go func() {
		for j := i; ; j++ {
			if _, err := w.Write(line(j)); err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // a guard against hanging, not a timing assertion
		cmd.Process.Kill()
		t.Fatalf("ingest still running after SIGINT\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitSignal {
		t.Fatalf("ingest after SIGINT: %v, want exit %d\n%s", err, exitSignal, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "manifest.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted ingest committed a manifest")
	}
}

// Issue 16.9: under --log-format json every stderr line is a JSON object,
// the fatal error included, and numbers are JSON numbers.
func TestJSONLogsOnly(t *testing.T) {
	bin := crucibleBinary(t)
	dir := t.TempDir()
	cfg := writeIngestPipeline(t, dir)
	for _, args := range [][]string{
		{"--log-format", "json", "build", "--no-progress", "--config", cfg},
		{"--log-format", "json", "inspect", filepath.Join(dir, "missing")}, // fails
		{"--log-format=json", "no-such-command"},                           // fails before flags are parsed
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr, cmd.Stdout = &stderr, &bytes.Buffer{}
		runErr := cmd.Run()
		sawSeconds, sawFatal := false, false
		sc := bufio.NewScanner(&stderr)
		for sc.Scan() {
			var rec map[string]any
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("crucible %v: stderr line is not JSON: %q", args, sc.Text())
				continue
			}
			if s, ok := rec["seconds"]; ok {
				sawSeconds = true
				if _, isNum := s.(float64); !isNum {
					t.Errorf("seconds is %T %v, want a number: %s", s, s, sc.Text())
				}
			}
			if rec["msg"] == "crucible failed" {
				sawFatal = true
				if _, isNum := rec["exit_code"].(float64); !isNum || rec["error"] == "" {
					t.Errorf("fatal line lacks exit_code/error: %s", sc.Text())
				}
			}
		}
		if runErr == nil && !sawSeconds {
			t.Errorf("crucible %v: no stage-committed line with seconds", args)
		}
		if runErr != nil && !sawFatal {
			t.Errorf("crucible %v failed (%v) without a JSON fatal line", args, runErr)
		}
	}
}

// Issue 16.5: `pack audit` on a truncated or corrupted shard is a
// discrepancy (exit 6), not an unreadable input.
func TestPackAuditBrokenShardExit6(t *testing.T) {
	dir := t.TempDir()
	in := writePackInput(t, dir)
	out := filepath.Join(dir, "packed")
	if err := runPack(context.Background(), PackOptions{In: []string{in}, Out: out, Stdout: &bytes.Buffer{}, Config: pack.DefaultConfig()}); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(out, "packed-00000.parquet")
	orig, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), orig...)
	flipped[len(flipped)/2] ^= 0xff
	for name, data := range map[string][]byte{"truncated": orig[:len(orig)/2], "byte flipped": flipped, "missing": nil} {
		if data == nil {
			os.Remove(shard)
		} else if err := os.WriteFile(shard, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		err := runPackAudit(context.Background(), PackAuditOptions{In: []string{in}, Packed: out, Stdout: &stdout})
		if code := exitCode(context.Background(), err); code != exitFindings || !strings.Contains(stdout.String(), shard) {
			t.Errorf("%s shard: exit %d (%v), want %d naming the shard\n%s", name, code, err, exitFindings, stdout.String())
		}
	}
}

// Issue 16.9: decontam's errors say decontam, not dedup.
func TestDecontamErrorPrefix(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	bench := filepath.Join(dir, "bench.jsonl")
	os.WriteFile(corpus, []byte(`{"item_id":"a","instruction":"x"}`+"\nnot json\n"), 0o644)
	os.WriteFile(bench, []byte(`{"id":"b","prompt":"some benchmark prompt text here"}`+"\n"), 0o644)
	_, err := runCLI(t, "decontam", "check", "--corpus", corpus, "--benchmark", bench, "--out", filepath.Join(dir, "out"), "--no-progress")
	if err == nil {
		t.Fatal("a corpus with a non-JSON line was accepted")
	}
	if msg := err.Error(); strings.Contains(msg, "dedup") || !strings.Contains(msg, "decontam") || !strings.Contains(msg, "corpus.jsonl") {
		t.Errorf("error %q: want it to name decontam and the file, not dedup", msg)
	}
}

// Issue 16.9: the README's `crucible plan --executor k8s --config
// examples/nightly.yaml --out DIR` works without an executor config: the
// Jobs run the documented default image, and --image overrides it.
func TestPlanK8sNightlyDefaults(t *testing.T) {
	root := testenv.RepoRoot(t)
	out := t.TempDir()
	testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl") // the nightly pipeline names the benchmark files
	var buf bytes.Buffer
	err := runPlan(context.Background(), PlanOptions{Config: filepath.Join(root, "examples", "nightly.yaml"), Executor: "k8s", OutDir: out, Out: &buf})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	jobs, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	if len(jobs) == 0 {
		t.Fatal("no Job manifests written")
	}
	data, _ := os.ReadFile(jobs[0])
	if !strings.Contains(string(data), "image: crucible:latest") || !strings.Contains(buf.String(), "image crucible:latest") {
		t.Errorf("default image not used or not said:\n%s\n%s", data, buf.String())
	}
	err = runPlan(context.Background(), PlanOptions{Config: filepath.Join(root, "examples", "nightly.yaml"), Executor: "k8s", OutDir: out, Out: &buf, Image: "reg.example/crucible:v2"})
	data, _ = os.ReadFile(jobs[0])
	if err != nil || !strings.Contains(string(data), "image: reg.example/crucible:v2") {
		t.Errorf("--image not used: %v\n%s", err, data)
	}
}

// Issue 16.9: one naming scheme for packed files, whatever the input size
// (parallel writers used to leave packed-PP-NNNNN.parquet).
func TestPackedFileNamesOneScheme(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, `{"id":"t%d","messages":[{"role":"user","content":"task %d"},{"role":"assistant","content":%q}]}`+"\n",
			i, i, strings.Repeat("assign y = a & b; ", 20+i%13))
	}
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "packed")
	cfg := pack.DefaultConfig()
	cfg.SeqLen, cfg.Workers = 512, 4
	cfg.ShardBytes, cfg.RowGroupBytes = 8<<10, 4<<10 // several files (cut at row groups)
	if err := runPack(context.Background(), PackOptions{In: []string{in}, Out: out, Stdout: &bytes.Buffer{}, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var packed []string
	for _, s := range m.Shards {
		if s.Kind == pack.KindPacked {
			packed = append(packed, s.Path)
		}
	}
	if m.Counts["rows"] < 64 || len(packed) < 2 {
		t.Fatalf("fixture too small for several files: %d rows, %d files", m.Counts["rows"], len(packed))
	}
	for i, p := range packed {
		if want := fmt.Sprintf("packed-%05d.parquet", i); p != want {
			t.Errorf("packed file %d is %s, want %s", i, p, want)
		}
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	if err := runPackAudit(context.Background(), PackAuditOptions{In: []string{in}, Packed: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatalf("audit after renaming: %v", err)
	}
}

func writeYieldFixture(t *testing.T, dir string, good, bad int, stageExtra, filterDomains string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < good; i++ {
		fmt.Fprintf(&b, `{"item_id":"ok%d","domain":"rtl","family":"counter","instruction":"Count up on every clock edge.","reference":"module m(input clk); endmodule","verifier":{"kind":"differential","top":"tb","harness":"module tb; endmodule"}}`+"\n", i)
	}
	for i := 0; i < bad; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"item_id":"bad%d","domain":"rtl"}`+"\n", i)
		} else {
			b.WriteString("not json\n")
		}
	}
	in := filepath.Join(dir, "items.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "p.yaml")
	err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: yield
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [items.jsonl]
%s
  - name: keep
    type: filter
    from: [ingest]
    config: {domains: [%s]}
`, stageExtra, filterDomains)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Issue 16.2: a stage that rejects more than its max_reject_fraction
// (default 0.5 for ingest) or passes nothing on fails the build with exit 6
// naming the stage, the counts and the top reasons, on every run (a skipped
// stage is checked too); the limit is set per stage and the report shows it.
func TestBuildFailsOnRejectFraction(t *testing.T) {
	dir := t.TempDir()
	cfg := writeYieldFixture(t, dir, 2, 8, "", "rtl")
	for run := 0; run < 2; run++ { // the second run skips ingest as up to date
		out, err := runCLI(t, "build", "--config", cfg, "--no-progress")
		if code := exitCode(context.Background(), err); code != exitFindings {
			t.Fatalf("run %d: exit %d (%v), want %d\n%s", run, code, err, exitFindings, out)
		}
		for _, want := range []string{"stage ingest", "8 of 10 rows rejected", "max_reject_fraction 0.5", "schema/missing_field 4", "schema/invalid_json 4"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("run %d: error %q lacks %q", run, err, want)
			}
		}
		if strings.Contains(out, "  keep ") {
			t.Errorf("run %d: the stage after the failed one ran:\n%s", run, out)
		}
	}
	// The report of the failed build shows the check.
	var r struct {
		Stages []struct {
			Name  string             `json:"name"`
			Yield *engine.StageYield `json:"yield"`
		} `json:"stages"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "work", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(data, &r)
	if len(r.Stages) == 0 || r.Stages[0].Yield == nil || r.Stages[0].Yield.Failure == "" || r.Stages[0].Yield.RejectFraction != 0.8 {
		t.Fatalf("report.json does not show the failed check: %s", data)
	}

	// Raising the limit on the stage lets the same output pass, without redoing it.
	cfg = writeYieldFixture(t, dir, 2, 8, "    max_reject_fraction: 0.9", "rtl")
	out, err := runCLI(t, "build", "--config", cfg, "--no-progress")
	if err != nil {
		t.Fatalf("with max_reject_fraction 0.9: %v\n%s", err, out)
	}
	if !strings.Contains(out, "max_reject_fraction 0.9") || !strings.Contains(out, "ingest         skipped") {
		t.Errorf("summary does not show the limit or redid ingest:\n%s", out)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "work", "report.json"))
	r.Stages = nil
	json.Unmarshal(data, &r)
	if y := r.Stages[0].Yield; y == nil || y.MaxRejectFraction == nil || *y.MaxRejectFraction != 0.9 || y.Failure != "" {
		t.Errorf("report.json stage yield %+v", y)
	}

	// Non-empty input, empty output fails whatever the limit.
	cfg = writeYieldFixture(t, dir, 2, 0, "", "kernel")
	_, err = runCLI(t, "build", "--config", cfg, "--no-progress")
	if code := exitCode(context.Background(), err); code != exitFindings || !strings.Contains(err.Error(), "stage keep: 2 input rows, nothing passed on") {
		t.Errorf("a filter keeping nothing: exit %d (%v)", code, err)
	}

	// A limit outside [0, 1] is a config error.
	cfg = writeYieldFixture(t, dir, 2, 0, "    max_reject_fraction: 1.5", "rtl")
	_, err = runCLI(t, "build", "--config", cfg, "--no-progress")
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), "max_reject_fraction") {
		t.Errorf("max_reject_fraction 1.5: exit %d (%v)", code, err)
	}
}

// Issue 16.8: after `build --stage admit` the printed funnel starts from
// the admit stage's own seeds, not from the first stage of the run (admit's
// 205 items, parents included, used to read as "seeds 205").
func TestPrintedFunnelAfterStageAdmit(t *testing.T) {
	sum := &engine.RunSummary{Pipeline: "nightly", WorkDir: "/w", Stages: []engine.StageResult{{
		Name: "admit", Type: "admit", Status: "ran", Rows: map[string]int64{"items": 205, "rejections": 13},
		Counts: map[string]int64{"seeds": 35, "candidates": 183, "gate1.static.passed": 183, "gate2.strength.passed": 170, "admitted": 170},
	}}}
	var buf bytes.Buffer
	printRunSummary(&buf, sum, engine.Shard{})
	if want := "funnel: seeds 35 → candidates 183 → static 183 → strength 170 → admitted 170"; !strings.Contains(buf.String(), want) {
		t.Errorf("printed summary lacks %q:\n%s", want, buf.String())
	}
}

type rowsBytes struct{ rows, bytes atomic.Int64 }

func (r *rowsBytes) Add(rows, b int64) { r.rows.Add(rows); r.bytes.Add(b) }

// Issue 16.9: the standalone pack, dedup and decontam check meter what
// they read in rows and bytes (their terminal bars draw that), so one big
// file moves the bar as it is read instead of showing "0/1". (ingest runs
// as the pipeline's ingest stage, whose bar counts the bytes it reads
// through the stage's Progress, as under crucible build.)
func TestStandaloneCommandsMeterRowsAndBytes(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, `{"item_id":"i%d","domain":"rtl","family":"counter","instruction":"Count up on every rising clock edge, variant %d of many.","reference":"module m(input clk); endmodule","verifier":{"kind":"differential","top":"tb","harness":"module tb; endmodule"}}`+"\n", i, i%7)
	}
	items := filepath.Join(dir, "items.jsonl")
	os.WriteFile(items, []byte(b.String()), 0o644)
	bench := filepath.Join(dir, "bench.jsonl")
	os.WriteFile(bench, []byte(`{"id":"b1","prompt":"an unrelated benchmark prompt about adders"}`+"\n"), 0o644)
	traj := writePackInput(t, dir)
	size := func(p string) int64 { st, _ := os.Stat(p); return st.Size() }
	for _, tc := range []struct {
		args        []string
		rows, bytes int64
	}{
		{[]string{"ingest", "--out", filepath.Join(dir, "in"), items}, 300, size(items)},
		{[]string{"pack", "--in", traj, "--out", filepath.Join(dir, "pk")}, 41, size(traj)},
		{[]string{"dedup", "--in", items, "--id-field", "item_id", "--text-field", "instruction", "--out", filepath.Join(dir, "dd")}, 300, size(items)},
		{[]string{"decontam", "check", "--corpus", items, "--benchmark", bench, "--out", filepath.Join(dir, "dc")}, 301, size(items) + size(bench)},
	} {
		m := &rowsBytes{}
		root := newRootCmd()
		root.SetArgs(tc.args)
		root.SetOut(&bytes.Buffer{})
		err := executeRoot(engine.WithReadMeter(context.Background(), m), root)
		if code := exitCode(context.Background(), err); code != exitOK && code != exitFindings {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if m.rows.Load() != tc.rows || m.bytes.Load() != tc.bytes {
			t.Errorf("%s: metered %d rows, %d bytes; input has %d rows, %d bytes", tc.args[0], m.rows.Load(), m.bytes.Load(), tc.rows, tc.bytes)
		}
	}
}
