package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// flipByte changes one byte in the middle of a file, keeping its size and
// mtime-independent: the corruption a size check cannot see.
func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func stageShards(t *testing.T, dir, stage string) map[string]string {
	t.Helper()
	out, err := LoadStageOutput(filepath.Join(dir, "work", stage))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, part := range out.Parts {
		for _, s := range part.Shards {
			h, err := HashFile(filepath.Join(out.Dir, s.Path))
			if err != nil {
				t.Fatal(err)
			}
			if h != s.SHA256 {
				t.Fatalf("%s/%s: file sha256 %s, manifest %s", stage, s.Path, h, s.SHA256)
			}
			m[s.Path] = h
		}
	}
	return m
}

func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), &buf
}

// TestFlippedByteInCommittedShardIsRedone: one byte flipped in a committed
// shard (same size) makes its stage stale — redone with a warning naming the
// file — and the redone output equals the clean run's, byte for byte.
func TestFlippedByteInCommittedShardIsRedone(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]int{}
	reg := testRegistry(runs)
	p := writePipeline(t, dir, "50", "")
	if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	clean := stageShards(t, dir, "dbl")
	out, _ := LoadStageOutput(filepath.Join(dir, "work", "dbl"))
	victim := out.Shards("nums")[0]
	flipByte(t, victim)
	cfg, _ := LoadPipeline(p, reg)
	if why, err := PartStatus(reg, cfg, "dbl", Shard{0, 1}, DefaultWriterOptions()); err != nil || !strings.Contains(why, "sha256") || !strings.Contains(why, victim) {
		t.Fatalf("PartStatus after the flip: %q, %v; want a sha256 mismatch naming %s", why, err, victim)
	}
	log, buf := logBuffer()
	sum, err := runPipeline(t, p, reg, RunOptions{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(sum); got != "src=skipped,dbl=ran" {
		t.Fatalf("after the flip: %s, want src=skipped,dbl=ran", got)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), victim) {
		t.Fatalf("no warning naming %s:\n%s", victim, buf.String())
	}
	if got := stageShards(t, dir, "dbl"); fmt.Sprint(got) != fmt.Sprint(clean) {
		t.Fatalf("redone output %v differs from the clean run %v", got, clean)
	}
}

// TestCorruptUpstreamIsRedoneFirst: `--stage dbl --force` over a corrupt
// upstream shard redoes the upstream first (no manual force), and a stage is
// never handed an input shard that does not match its manifest.
func TestCorruptUpstreamIsRedoneFirst(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]int{}
	reg := testRegistry(runs)
	p := writePipeline(t, dir, "50", "")
	if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanSrc, cleanDbl := stageShards(t, dir, "src"), stageShards(t, dir, "dbl")
	out, _ := LoadStageOutput(filepath.Join(dir, "work", "src"))
	flipByte(t, out.Shards("nums")[0])
	log, buf := logBuffer()
	if _, err := runPipeline(t, p, reg, RunOptions{Only: []string{"dbl"}, Force: true, Log: log}); err != nil {
		t.Fatalf("forced downstream over a corrupt upstream: %v", err)
	}
	if runs["src"] != 2 || runs["dbl"] != 2 {
		t.Fatalf("runs %v: want src redone once before dbl", runs)
	}
	if !strings.Contains(buf.String(), "upstream") || !strings.Contains(buf.String(), out.Shards("nums")[0]) {
		t.Fatalf("no warning naming the corrupt upstream shard:\n%s", buf.String())
	}
	if fmt.Sprint(stageShards(t, dir, "src")) != fmt.Sprint(cleanSrc) || fmt.Sprint(stageShards(t, dir, "dbl")) != fmt.Sprint(cleanDbl) {
		t.Fatal("outputs after the repair differ from the clean run")
	}
	// A full run over a corrupt upstream redoes it too; the downstream, whose
	// input content is unchanged, stays current.
	flipByte(t, out.Shards("nums")[0])
	sum, err := runPipeline(t, p, reg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(sum); got != "src=ran,dbl=skipped" {
		t.Fatalf("full run over a corrupt upstream: %s, want src=ran,dbl=skipped", got)
	}
}

// verdictRegistry has a verifier stage whose evidence carries a verdict per
// row and a wall time that differs on every run, and a downstream stage that
// counts passes.
func verdictRegistry(runs map[string]int, clock *atomic.Int64, status *atomic.Value) *Registry {
	reg := NewRegistry()
	reg.Register("verify", func(c StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			runs[sc.Name]++
			w, err := StageWriter[Evidence](sc, "evidence")
			if err != nil {
				return err
			}
			for i := 0; i < 20; i++ {
				ev := Evidence{ItemID: fmt.Sprintf("item-%02d", i), CandidateID: "ref", Status: status.Load().(string),
					Measurements: []Measurement{IntM("mismatches", 0), FloatM("wall_time_ms", float64(clock.Add(1))*1.25),
						FloatM("run_wall_s", float64(clock.Add(1))), IntM("samples", int64(100+i))}}
				if err := w.Write(ev); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test verifier")
	reg.Register("tally", func(c StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			runs[sc.Name]++
			evs, err := ReadInputs[Evidence](sc, "evidence")
			if err != nil {
				return err
			}
			w, err := StageWriter[numRow](sc, "tally")
			if err != nil {
				return err
			}
			var pass int64
			for _, ev := range evs {
				if ev.Status == StatusPass {
					pass++
				}
			}
			return w.Write(numRow{N: pass, Text: "passes"})
		}), nil
	}, "test tally")
	return reg
}

func writeVerdictPipeline(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "pipeline.yaml")
	cfg := "name: v\nwork_dir: work\nstages:\n  - name: verify\n    type: verify\n  - name: tally\n    type: tally\n    from: [verify]\n  - name: tally2\n    type: tally\n    from: [verify]\n"
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func contentHashes(t *testing.T, dir string, stages ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range stages {
		m, err := ReadManifest(filepath.Join(dir, "work", s, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if m.ContentHash == "" || m.ContentHash != m.ComputeContentHash() {
			t.Fatalf("%s: content hash %q does not match its shards and counts", s, m.ContentHash)
		}
		out[s] = m.ContentHash
	}
	return out
}

// TestTimingsDoNotCascadeReruns: two clean runs of the same build give the
// same content hash per stage although their evidence files differ (new wall
// times); forcing the verifier with identical verdicts leaves downstream
// stages current; a changed verdict does not.
func TestTimingsDoNotCascadeReruns(t *testing.T) {
	runs := map[string]int{}
	var clock atomic.Int64
	var status atomic.Value
	status.Store(StatusPass)
	reg := verdictRegistry(runs, &clock, &status)
	a, b := t.TempDir(), t.TempDir()
	pa, pb := writeVerdictPipeline(t, a), writeVerdictPipeline(t, b)
	for _, p := range []string{pa, pb} {
		if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ha, hb := contentHashes(t, a, "verify", "tally", "tally2"), contentHashes(t, b, "verify", "tally", "tally2")
	if fmt.Sprint(ha) != fmt.Sprint(hb) {
		t.Fatalf("content hashes differ between two clean runs:\n%v\n%v", ha, hb)
	}
	if fmt.Sprint(stageShards(t, a, "verify")) == fmt.Sprint(stageShards(t, b, "verify")) {
		t.Fatal("the evidence files are identical: the test's timings did not vary")
	}
	if _, err := runPipeline(t, pa, reg, RunOptions{Only: []string{"verify"}, Force: true}); err != nil {
		t.Fatal(err)
	}
	sum, err := runPipeline(t, pa, reg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(sum); got != "verify=skipped,tally=skipped,tally2=skipped" {
		t.Fatalf("after forcing verify with identical verdicts: %s, want every stage skipped", got)
	}
	status.Store(StatusFail)
	if _, err := runPipeline(t, pa, reg, RunOptions{Only: []string{"verify"}, Force: true}); err != nil {
		t.Fatal(err)
	}
	sum, err = runPipeline(t, pa, reg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(sum); got != "verify=skipped,tally=ran,tally2=ran" {
		t.Fatalf("after a verdict changed: %s, want the downstream stages redone", got)
	}
}

// TestTimingMeasurementsAreExcludedFromContent: the content hash of an
// evidence shard ignores exactly the listed timing measurements.
func TestTimingMeasurementsAreExcludedFromContent(t *testing.T) {
	ev := Evidence{ItemID: "a", Status: StatusPass, Measurements: []Measurement{IntM("mismatches", 0), FloatM("wall_time_ms", 3), FloatM("cand_ms_median", 1), FloatM("worker_kernel_ms", 2), FloatM("max_abs_err", 0.5)}}
	var names []string
	for _, m := range ev.WithoutTimings().Measurements {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "mismatches,max_abs_err" {
		t.Fatalf("kept %s, want mismatches,max_abs_err", got)
	}
	if len(ev.Measurements) != 5 {
		t.Fatal("WithoutTimings changed its receiver's measurements")
	}
}

// failingWriter fails every write with ENOSPC after n bytes.
type failingWriter struct {
	w io.Writer
	n int64
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, &os.PathError{Op: "write", Path: "shard", Err: syscall.ENOSPC}
	}
	f.n -= int64(len(p))
	return f.w.Write(p)
}

// TestStageOnFullDiskLeavesNoTempFile: a stage whose shard write hits a full
// disk fails with ErrIO, leaves no temp file and no manifest; a temp file of
// a run that died harder is swept by the next run of that part (even one
// that finds the part current), holding the part lock.
func TestStageOnFullDiskLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(map[string]int{})
	p := writePipeline(t, dir, "2000", "")
	for _, rowGroup := range []int64{2 << 10, DefaultWriterOptions().RowGroupBytes} {
		w := WriterOptions{RowGroupBytes: rowGroup, ShardBytes: 1 << 20,
			WrapFile: func(x io.Writer) io.Writer { return &failingWriter{w: x, n: 3000} }}
		_, err := runPipeline(t, p, reg, RunOptions{Writer: w})
		if !errors.Is(err, ErrIO) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("row groups of %d on a full disk: want ErrIO wrapping ENOSPC, got %v", rowGroup, err)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, "work", "src"))
		for _, e := range ents {
			t.Errorf("row groups of %d: the failed stage left %s", rowGroup, e.Name())
		}
	}
	if _, err := runPipeline(t, p, reg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "work", "src", ".nums-00000.parquet.tmp-0123456789ab")
	os.WriteFile(stale, []byte("left by a killed run"), 0o644)
	sum, err := runPipeline(t, p, reg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(sum); got != "src=skipped,dbl=skipped" {
		t.Fatalf("%s, want both current", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temp file survived the next run: %v", err)
	}
}
