package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/crucible-data/crucible/engine/partlock"
)

// placedRegistry is testRegistry with its source and double declared the
// way product stages are (RunOne needs the output kinds to know its files).
func placedRegistry(runs map[string]int) *Registry {
	base := testRegistry(runs)
	reg := NewRegistry()
	for _, name := range []string{"source", "double"} {
		t, _ := base.Type(name)
		t.Outputs = []string{"nums"}
		reg.RegisterType(t)
	}
	return reg
}

func sourceSpec(t *testing.T, count int, inputs ...string) StageSpec {
	t.Helper()
	sc, err := NewStageConfig("src", fmt.Sprintf("count: %d", count))
	if err != nil {
		t.Fatal(err)
	}
	return StageSpec{Name: "src", Type: "source", Inputs: inputs, Config: *sc.node}
}

func runOne(t *testing.T, reg *Registry, one OneStage, force bool) (*StageResult, []byte) {
	t.Helper()
	res, err := (&Runner{Registry: reg}).RunOne(context.Background(), one, RunOptions{Force: force, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(one.Out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}

// A standalone command's stage commits in its --out DIR like a pipeline
// stage: a manifest with a config hash and every file of a directory input
// hashed; a second identical run skips without touching the manifest; a
// changed config, a changed input file or --force runs it again. Files in
// DIR that are not the stage's survive every run.
func TestRunOneSkipsCurrentAndRedoesStale(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.MkdirAll(filepath.Join(in, "sub"), 0o755)
	for i, f := range []string{"in0.txt", "in1.txt", "sub/in2.txt"} {
		os.WriteFile(filepath.Join(in, f), []byte(fmt.Sprintf("file %d", i)), 0o644)
	}
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	foreign := []string{filepath.Join(out, "notes.txt"), filepath.Join(out, "other-00000.parquet")}
	for _, f := range foreign {
		os.WriteFile(f, []byte("not the stage's"), 0o644)
	}
	runs := map[string]int{}
	reg := placedRegistry(runs)
	one := OneStage{Spec: sourceSpec(t, 2, in), Out: out}

	res, first := runOne(t, reg, one, false)
	m, err := ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ran" || runs["src"] != 1 || m.ConfigHash == "" || len(m.Inputs) != 3 || m.Rows("nums") != 6 {
		t.Fatalf("first run: status %s, runs %d, manifest %+v", res.Status, runs["src"], m)
	}
	for _, ref := range m.Inputs {
		if ref.Kind != "file" || len(ref.SHA256) != 64 {
			t.Errorf("input ref %+v: want a hashed file", ref)
		}
	}
	res, second := runOne(t, reg, one, false)
	if res.Status != "skipped" || runs["src"] != 1 || !bytes.Equal(first, second) {
		t.Fatalf("identical rerun: status %s, runs %d, manifest changed %v", res.Status, runs["src"], !bytes.Equal(first, second))
	}
	if res, _ := runOne(t, reg, OneStage{Spec: sourceSpec(t, 3, in), Out: out}, false); res.Status != "ran" || res.Rows["nums"] != 9 {
		t.Fatalf("changed config: %+v", res)
	}
	os.WriteFile(filepath.Join(in, "sub", "in2.txt"), []byte("changed"), 0o644)
	if res, _ := runOne(t, reg, OneStage{Spec: sourceSpec(t, 3, in), Out: out}, false); res.Status != "ran" {
		t.Fatalf("changed file under a directory input: %s", res.Status)
	}
	if res, _ := runOne(t, reg, OneStage{Spec: sourceSpec(t, 3, in), Out: out}, true); res.Status != "ran" || runs["src"] != 4 {
		t.Fatalf("--force: %s after %d runs", res.Status, runs["src"])
	}
	for _, f := range foreign {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a run removed %s, which is not its output: %v", f, err)
		}
	}
}

// An upstream given as a committed output directory is fingerprinted by its
// manifest: the downstream skips while the upstream is unchanged and runs
// again when it is redone differently; a directory without a manifest is
// ErrIncomplete.
func TestRunOneReadsUpstreamDirectories(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in0.txt"), []byte("x"), 0o644)
	runs := map[string]int{}
	reg := placedRegistry(runs)
	up, down := filepath.Join(dir, "up"), filepath.Join(dir, "down")
	runOne(t, reg, OneStage{Spec: sourceSpec(t, 2, filepath.Join(dir, "in0.txt")), Out: up}, false)
	dbl := OneStage{Spec: StageSpec{Name: "dbl", Type: "double"}, Out: down, From: []string{up}}
	res, _ := runOne(t, reg, dbl, false)
	m, _ := ReadManifest(filepath.Join(down, "manifest.json"))
	if res.Status != "ran" || res.Rows["nums"] != 2 || len(m.Inputs) != 1 || m.Inputs[0].Kind != "manifest" {
		t.Fatalf("downstream: %+v, inputs %+v", res, m.Inputs)
	}
	if res, _ := runOne(t, reg, dbl, false); res.Status != "skipped" {
		t.Fatalf("downstream rerun over the same upstream: %s", res.Status)
	}
	runOne(t, reg, OneStage{Spec: sourceSpec(t, 5, filepath.Join(dir, "in0.txt")), Out: up}, false)
	if res, _ := runOne(t, reg, dbl, false); res.Status != "ran" || res.Rows["nums"] != 5 {
		t.Fatalf("downstream after the upstream changed: %+v", res)
	}
	_, err := (&Runner{Registry: reg}).RunOne(context.Background(), OneStage{Spec: dbl.Spec, Out: down, From: []string{dir}}, RunOptions{Log: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrIncomplete) {
		t.Fatalf("upstream without a manifest: %v, want ErrIncomplete", err)
	}
}

// An input that the pre-run clear would delete (a shard of the stage's own
// kind in --out) is refused before anything is removed; so is a stage type
// that declares no outputs (nothing in DIR could be told apart as its).
func TestRunOneRefusesWhatItWouldClobber(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]int{}
	reg := placedRegistry(runs)
	own := filepath.Join(dir, "nums-00000.parquet")
	os.WriteFile(own, []byte("input"), 0o644)
	_, err := (&Runner{Registry: reg}).RunOne(context.Background(), OneStage{Spec: sourceSpec(t, 1, own), Out: dir}, RunOptions{})
	if !errors.Is(err, ErrConfig) || runs["src"] != 0 {
		t.Fatalf("input in the output directory: %v after %d runs, want ErrConfig before running", err, runs["src"])
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the refused run removed its input: %v", err)
	}
	undeclared := testRegistry(runs)
	_, err = (&Runner{Registry: undeclared}).RunOne(context.Background(), OneStage{Spec: sourceSpec(t, 1), Out: filepath.Join(dir, "o")}, RunOptions{})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("type without declared outputs: %v, want ErrConfig", err)
	}
}

// A named pipe cannot be hashed without being consumed: it is recorded as a
// stream and the run is never skipped (it read data that may differ).
func TestRunOneStreamInputNeverSkips(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in0.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	runs := map[string]int{}
	reg := placedRegistry(runs)
	one := OneStage{Spec: sourceSpec(t, 1, fifo), Out: filepath.Join(dir, "out")}
	for run := 1; run <= 2; run++ {
		go func() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Write([]byte("streamed"))
				w.Close()
			}
		}()
		res, _ := runOne(t, reg, one, false)
		m, _ := ReadManifest(filepath.Join(one.Out, "manifest.json"))
		if res.Status != "ran" || runs["src"] != run || len(m.Inputs) != 1 || m.Inputs[0].Kind != "stream" {
			t.Fatalf("run %d over a FIFO: status %s, runs %d, inputs %+v", run, res.Status, runs["src"], m.Inputs)
		}
	}
}

// Plain files handed to the stage as upstream shards of a kind are read
// like a stage's output and fingerprinted by their bytes: an identical
// rerun skips, a changed file runs again.
func TestRunOneReadsPlainFilesAsShards(t *testing.T) {
	dir := t.TempDir()
	writeNums := func(nums ...numRow) string {
		t.Helper()
		infos, err := WriteAll(context.Background(), dir, "in", "nums", DefaultWriterOptions(), nums)
		if err != nil || len(infos) != 1 {
			t.Fatalf("writing the input: %v, %v", infos, err)
		}
		return filepath.Join(dir, filepath.Base(infos[0].Path))
	}
	rows := writeNums(numRow{N: 1, Text: "a"}, numRow{N: 2, Text: "b"})
	runs := map[string]int{}
	reg := placedRegistry(runs)
	one := OneStage{Spec: StageSpec{Name: "dbl", Type: "double"}, Out: filepath.Join(dir, "out"), Shards: map[string][]string{"nums": {rows}}}
	res, _ := runOne(t, reg, one, false)
	m, _ := ReadManifest(filepath.Join(one.Out, "manifest.json"))
	if res.Status != "ran" || res.Rows["nums"] != 2 || len(m.Inputs) != 1 || m.Inputs[0].Kind != "file" || len(m.Inputs[0].SHA256) != 64 {
		t.Fatalf("first run: %+v, inputs %+v", res, m.Inputs)
	}
	got, err := ReadAll[numRow](filepath.Join(one.Out, m.Shards[0].Path))
	if err != nil || len(got) != 2 || got[1].N != 4 {
		t.Fatalf("doubled rows %+v, %v", got, err)
	}
	if res, _ := runOne(t, reg, one, false); res.Status != "skipped" || runs["dbl"] != 1 {
		t.Fatalf("identical rerun: %s after %d runs", res.Status, runs["dbl"])
	}
	writeNums(numRow{N: 5, Text: "c"})
	if res, _ := runOne(t, reg, one, false); res.Status != "ran" || res.Rows["nums"] != 1 {
		t.Fatalf("changed file: %+v", res)
	}
}

// RunOne takes DIR's part lock (DIR/.locks), so two commands writing one
// --out DIR never interleave their clears and commits: while another
// holder has it, RunOne waits (here until its context ends) and runs
// nothing.
func TestRunOneTakesTheOutputLock(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in0.txt"), []byte("x"), 0o644)
	out := filepath.Join(dir, "out")
	release, err := partlock.Lock(context.Background(), filepath.Join(out, ".locks"), "manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = (&Runner{Registry: placedRegistry(runs)}).RunOne(ctx, OneStage{Spec: sourceSpec(t, 1, filepath.Join(dir, "in0.txt")), Out: out},
		RunOptions{Log: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, context.DeadlineExceeded) || runs["src"] != 0 {
		t.Fatalf("RunOne while another holds the lock: %v after %d runs, want it to wait", err, runs["src"])
	}
	release()
	if res, _ := runOne(t, placedRegistry(runs), OneStage{Spec: sourceSpec(t, 1, filepath.Join(dir, "in0.txt")), Out: out}, false); res.Status != "ran" {
		t.Fatalf("after the lock was released: %s", res.Status)
	}
}

// A stage whose rows have no Go type writes Arrow records through
// StageRecordWriter: the runner commits them like typed shards (listed in
// the manifest, checked on a rerun, which skips), and its Timing phases land
// in the manifest's seconds without changing the content hash. A kind the
// type does not declare is refused.
func TestRunOneCommitsRecordShardsAndTimings(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("x"), 0o644)
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	runs := 0
	reg := NewRegistry()
	reg.RegisterType(StageType{Name: "records", Parallelism: PerPart, Outputs: []string{"rows"},
		Factory: func(StageConfig) (Stage, error) {
			return StageFunc(func(ctx context.Context, sc *StageContext) error {
				runs++
				if _, err := StageRecordWriter(sc, "other", schema); err == nil {
					return errors.New("an undeclared kind was accepted")
				}
				w, err := StageRecordWriter(sc, "rows", schema)
				if err != nil {
					return err
				}
				b := array.NewInt64Builder(memory.DefaultAllocator)
				defer b.Release()
				b.AppendValues([]int64{1, 2, 3}, nil)
				col := b.NewArray()
				defer col.Release()
				rec := array.NewRecordBatch(schema, []arrow.Array{col}, 3)
				defer rec.Release()
				sc.Timing("write", float64(runs))
				return w.WriteRecord(rec)
			}), nil
		}})
	out := filepath.Join(dir, "out")
	one := OneStage{Spec: StageSpec{Name: "records", Type: "records", Inputs: []string{in}}, Out: out}
	res, _ := runOne(t, reg, one, false)
	m, err := ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ran" || m.Rows("rows") != 3 || len(m.Shards) != 1 || m.Seconds["write"] != 1 {
		t.Fatalf("first run: %s, manifest %+v", res.Status, m)
	}
	if res, _ := runOne(t, reg, one, false); res.Status != "skipped" || runs != 1 {
		t.Fatalf("rerun: %s after %d runs, want skipped", res.Status, runs)
	}
	runOne(t, reg, one, true)
	m2, err := ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m2.Seconds["write"] != 2 || m2.ContentHash != m.ContentHash {
		t.Fatalf("forced run: seconds %v, content hash %s vs %s (timings must not change it)", m2.Seconds, m2.ContentHash, m.ContentHash)
	}
}
