package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/testenv"
)

// srcRow has arbitrary column names, to exercise the field mapping.
type srcRow struct {
	Key  string `json:"key" arrow:"key"`
	Body string `json:"body" arrow:"body"`
}

func TestDedupCommandParquetInput(t *testing.T) {
	dir := t.TempDir()
	syn := dedup.NewSynth(dedup.SynthConfig{N: 400, DocWords: 200, Vocab: 5000, DupFrac: 0.2, EditsMin: 1, EditsMax: 3, ExactFrac: 0.2, Seed: 9})
	var rows []srcRow
	syn.Scan(context.Background(), func(d dedup.Doc) error {
		rows = append(rows, srcRow{Key: d.ID, Body: d.Text})
		return nil
	})
	if _, err := engine.WriteAll(context.Background(), dir, "in", "rows", engine.DefaultWriterOptions(), rows); err != nil {
		t.Fatal(err)
	}
	in, _ := filepath.Glob(filepath.Join(dir, "in-*.parquet"))
	out := filepath.Join(dir, "out")
	var stdout strings.Builder
	o := DedupOptions{In: in, IDField: "key", TextFields: []string{"body"}, Out: out, Config: dedup.DefaultConfig(),
		Writer: engine.DefaultWriterOptions(), Stdout: &stdout, KeepSigs: true}
	if err := runDedup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "P(detect at threshold)") {
		t.Errorf("summary lacks the detection probability:\n%s", stdout.String())
	}
	kept, _ := filepath.Glob(filepath.Join(out, "kept-*.parquet"))
	rej, _ := filepath.Glob(filepath.Join(out, "removed-*.parquet"))
	k, err := engine.ReadAll[srcOut](kept...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.ReadAll[srcOut](rej...)
	if err != nil {
		t.Fatal(err)
	}
	if len(k)+len(r) != 400 || len(r) < 40 {
		t.Fatalf("kept %d removed %d", len(k), len(r))
	}
	keptIDs := map[string]bool{}
	for _, x := range k {
		keptIDs[x.Key] = true
		if x.Body != syn.Text(idIndex(t, x.Key)) {
			t.Fatalf("kept row %s: body is not the input's", x.Key)
		}
	}
	for _, x := range r {
		if x.ClusterID == "" || !keptIDs[x.SurvivorID] || (x.Reason != dedup.ReasonNearDuplicate && x.Reason != dedup.ReasonExactDuplicate) {
			t.Fatalf("bad removed row %+v", x)
		}
		if b := syn.Base(idIndex(t, x.Key)); b < 0 && syn.Base(idIndex(t, x.SurvivorID)) != idIndex(t, x.Key) {
			t.Errorf("%s removed but it is an original", x.Key)
		}
	}
	// Second run over the first run's output (kept + removed rows) reuses
	// the stored signatures and reaches the same clusters.
	first := map[string]string{}
	for _, x := range r {
		first[x.Key] = x.SurvivorID
		if len(x.Minhash) != 128 || x.TextHash == "" || x.MinhashParams == "" {
			t.Fatalf("removed row without stored signature: %+v", x)
		}
	}
	out2 := filepath.Join(dir, "out2")
	var stdout2 strings.Builder
	o2 := o
	o2.In, o2.Out, o2.Reuse, o2.Stdout = []string{filepath.Join(out, "kept-*.parquet"), filepath.Join(out, "removed-*.parquet")}, out2, true, &stdout2
	if err := runDedup(context.Background(), o2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout2.String(), "reused 400 stored signatures") {
		t.Errorf("second run did not reuse signatures:\n%s", stdout2.String())
	}
	rej2, _ := filepath.Glob(filepath.Join(out2, "removed-*.parquet"))
	r2, err := engine.ReadAll[srcOut](rej2...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r2) != len(r) {
		t.Errorf("second run removed %d, first %d", len(r2), len(r))
	}
	for _, x := range r2 {
		if _, ok := first[x.Key]; !ok {
			t.Errorf("second run removed %s, first kept it", x.Key)
		}
	}
	// The first run's _dedup_ columns were replaced, not doubled: the
	// second run's output has the input's two columns and its own.
	sch, err := dedup.OpenInput(context.Background(), rej2, "key")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := schemaNames(sch.Schema), "key,body,_dedup_cluster_id,_dedup_cluster_size,_dedup_survivor_id,_dedup_reason,_dedup_minhash,_dedup_text_hash,_dedup_minhash_params"; got != want {
		t.Errorf("second run's removed columns %s, want %s", got, want)
	}

	// Without --reuse-signatures the earlier run's _dedup_ columns are a
	// usage error naming the column and the file.
	o3 := o2
	o3.Reuse, o3.Out = false, filepath.Join(dir, "out3")
	err = runDedup(context.Background(), o3)
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), `"_dedup_cluster_id"`) || !strings.Contains(err.Error(), "kept-00000.parquet") {
		t.Errorf("reserved column: exit %d (%v), want %d naming _dedup_cluster_id and the file", code, err, exitUsage)
	}
	// --reuse-signatures on output written without --keep-signatures is a
	// usage error naming the file.
	o4 := o
	o4.KeepSigs, o4.Out = false, filepath.Join(dir, "nosig")
	if err := runDedup(context.Background(), o4); err != nil {
		t.Fatal(err)
	}
	nosig, _ := filepath.Glob(filepath.Join(o4.Out, "kept-*.parquet"))
	o5 := o
	o5.In, o5.Reuse, o5.Out = nosig, true, filepath.Join(dir, "out5")
	err = runDedup(context.Background(), o5)
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), nosig[0]) || !strings.Contains(err.Error(), "--keep-signatures") {
		t.Errorf("reuse without signatures: exit %d (%v), want %d naming %s", code, err, exitUsage, nosig[0])
	}

	// A row missing the text field is a clear input error naming the file and line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"key":"a","body":"x y z"}`+"\n"+`{"key":"b"}`+"\n"), 0o644)
	o.In = []string{bad}
	err = runDedup(context.Background(), o)
	if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("want input error naming bad.jsonl:2, got %v", err)
	}
}

// srcOut reads the columns of srcRow's dedup output the tests look at.
type srcOut struct {
	Key           string  `arrow:"key"`
	Body          string  `arrow:"body"`
	ClusterID     string  `arrow:"_dedup_cluster_id"`
	ClusterSize   int32   `arrow:"_dedup_cluster_size"`
	SurvivorID    string  `arrow:"_dedup_survivor_id"`
	Reason        string  `arrow:"_dedup_reason"`
	Minhash       []int64 `arrow:"_dedup_minhash"`
	TextHash      string  `arrow:"_dedup_text_hash"`
	MinhashParams string  `arrow:"_dedup_minhash_params"`
}

func schemaNames(s *arrow.Schema) string {
	var n []string
	for _, f := range s.Fields() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

func idIndex(t *testing.T, id string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(id, "doc-%d", &i); err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return i
}

func datasetsDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(filepath.Dir(testenv.Dataset(t, "verilog-eval/spec-to-rtl.jsonl")))
}

func TestDecontamCheckExitCodes(t *testing.T) {
	ds := datasetsDir(t)
	ve := filepath.Join(ds, "verilog-eval", "spec-to-rtl.jsonl")
	kb := filepath.Join(ds, "kernelbench", "level1.jsonl")
	dir := t.TempDir()
	opts := func(out string) DecontamCheckOptions {
		return DecontamCheckOptions{Benchmarks: []string{ve}, IDField: "id", Fields: []string{"prompt", "ref"}, Out: filepath.Join(dir, out),
			Workers: 2, Config: decontam.DefaultConfig(), Writer: engine.DefaultWriterOptions(), Stdout: &strings.Builder{},
			CorpusIDField: "item_id|id"}
	}
	// Contaminated corpus: the references themselves → exit code 6.
	o := opts("dirty")
	o.Corpus, o.CorpusFields = []string{ve}, []string{"ref"}
	err := runDecontamCheck(context.Background(), o)
	if code := exitCode(context.Background(), err); code != exitFindings {
		t.Fatalf("contaminated corpus: exit %d (%v), want %d", code, err, exitFindings)
	}
	files, _ := filepath.Glob(filepath.Join(o.Out, "matches-*.parquet"))
	ms, err := engine.ReadAll[decontam.Match](files...)
	if err != nil || len(ms) < 156 {
		t.Fatalf("%d matches (%v)", len(ms), err)
	}
	if !strings.Contains(o.Stdout.(*strings.Builder).String(), "contaminated corpus items: 156") {
		t.Errorf("summary:\n%s", o.Stdout)
	}
	// Clean corpus → exit 0.
	o = opts("clean")
	o.Corpus, o.CorpusFields = []string{kb}, []string{"code"}
	if err := runDecontamCheck(context.Background(), o); err != nil {
		t.Fatalf("clean corpus: %v", err)
	}
	// Reverse: persisted corpus index checked by the benchmark.
	idx := filepath.Join(dir, "corpus-index")
	io := DecontamIndexOptions{In: []string{ve}, Side: decontam.SideCorpus, IDField: "id", Fields: []string{"ref"}, Out: idx,
		Config: decontam.DefaultConfig(), Stdout: &strings.Builder{}}
	if err := runDecontamIndex(context.Background(), io); err != nil {
		t.Fatal(err)
	}
	o = opts("reverse")
	o.CorpusIndex = idx
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitFindings {
		t.Fatalf("reverse check: exit %d, want %d", code, exitFindings)
	}
	// Forward check against a persisted benchmark index directory.
	bidx := filepath.Join(dir, "bench-index")
	bio := DecontamIndexOptions{In: []string{ve}, Side: decontam.SideBenchmark, Fields: []string{"prompt", "ref"}, Out: bidx,
		Config: decontam.DefaultConfig(), Stdout: &strings.Builder{}}
	if err := runDecontamIndex(context.Background(), bio); err != nil {
		t.Fatal(err)
	}
	o = opts("via-index")
	o.Benchmarks, o.Corpus, o.CorpusFields = []string{bidx}, []string{ve}, []string{"ref"}
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitFindings {
		t.Fatalf("check via benchmark index: exit %d, want %d", code, exitFindings)
	}
	// An index built with other hashing parameters is refused, not misread.
	o = opts("mismatch")
	o.Benchmarks, o.Corpus, o.CorpusFields = []string{bidx}, []string{ve}, []string{"ref"}
	o.Config.NGram = 10
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitUsage {
		t.Fatalf("mismatched index: exit %d, want %d", code, exitUsage)
	}
	// Bad flags → usage.
	o = opts("bad")
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitUsage {
		t.Fatalf("no corpus: exit %d, want %d", code, exitUsage)
	}
}

// The summary prints the whole command's duration and a phase breakdown
// (read, sign, index, verify, write) that sums to it; the manifest records
// the same phases. No timing thresholds: only presence and the sum.
func TestDedupPhaseBreakdown(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeSynthCorpus(t, in, 600)
	out := filepath.Join(dir, "out")
	var stdout strings.Builder
	o := DedupOptions{In: []string{in}, IDField: "id", TextFields: []string{"text"}, Out: out, Config: dedup.DefaultConfig(),
		Writer: engine.DefaultWriterOptions(), Stdout: &stdout}
	if err := runDedup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var total float64
	var rows int
	var rate float64
	var ph [5]float64
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, "dedup: ") {
			if _, err := fmt.Sscanf(l, "dedup: %d rows (", &rows); err != nil {
				t.Fatalf("summary line %q: %v", l, err)
			}
			i := strings.Index(l, " in ")
			if i < 0 {
				t.Fatalf("summary line %q has no duration", l)
			}
			if _, err := fmt.Sscanf(l[i:], " in %fs (%f rows/s)", &total, &rate); err != nil {
				t.Fatalf("summary line %q: %v", l, err)
			}
		}
		if strings.HasPrefix(l, "  phases (wall s): ") {
			if _, err := fmt.Sscanf(l, "  phases (wall s): read %f, sign %f, index %f, verify %f, write %f", &ph[0], &ph[1], &ph[2], &ph[3], &ph[4]); err != nil {
				t.Fatalf("phase line %q: %v", l, err)
			}
		}
	}
	if rows != 600 || total <= 0 || rate <= 0 {
		t.Fatalf("summary: rows %d, total %v, rate %v:\n%s", rows, total, rate, stdout.String())
	}
	sum := 0.0
	for i, p := range ph {
		if p < 0 {
			t.Errorf("phase %d negative: %v", i, p)
		}
		sum += p
	}
	// Printed with 2 decimals each: 5 roundings of at most 0.005.
	if d := sum - total; d > 0.03 || d < -0.03 {
		t.Errorf("phases sum to %.3fs, total %.3fs:\n%s", sum, total, stdout.String())
	}
	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	msum := 0.0
	for _, k := range []string{"read", "sign", "index", "verify", "write"} {
		v, ok := m.Seconds[k]
		if !ok || v < 0 {
			t.Errorf("manifest seconds[%q] = %v, %v (want present, ≥ 0): %v", k, v, ok, m.Seconds)
		}
		msum += v
	}
	if tot := m.Seconds["total"]; tot <= 0 || msum-tot > 1e-6 || tot-msum > 1e-6 {
		t.Errorf("manifest phases sum to %v, total %v", msum, tot)
	}
	if m.Counts["rows"] != 600 {
		t.Errorf("manifest rows %d", m.Counts["rows"])
	}
}

// shardBytes totals the bytes of a committed output's shards.
func shardBytes(t *testing.T, dir string) int64 {
	t.Helper()
	m, err := engine.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range m.Shards {
		n += s.Bytes
	}
	return n
}

// `crucible dedup` runs through engine.Runner.RunOne: its manifest has a
// config hash and every --in file's sha256; a second identical run skips
// (manifest bytes and shards untouched, no summary of work); a changed
// input file, a changed flag (--threshold, --compression, --keep-signatures,
// --on-duplicate-id) or --force runs it again.
func TestDedupSkipsWhenCurrent(t *testing.T) {
	dir := t.TempDir()
	inDir := filepath.Join(dir, "in")
	os.MkdirAll(inDir, 0o755)
	a, b := filepath.Join(inDir, "a.jsonl"), filepath.Join(inDir, "b.jsonl")
	writeSynthCorpus(t, a, 150)
	os.WriteFile(b, []byte(`{"id":"extra-1","n":1,"lang":"l1","text":"a row of the second file that looks like no other row here"}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	args := []string{"dedup", "--no-progress", "--in", inDir, "--id-field", "id", "--text-field", "text", "--out", out}
	const work = "phases (wall s)" // printed only by a run that did the work
	expectRun(t, out, "ran", "dedup: 151 rows", args...)

	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.ConfigHash == "" || m.Type != "dedup" {
		t.Errorf("manifest: type %q, config hash %q; want dedup with a config hash", m.Type, m.ConfigHash)
	}
	if len(m.Inputs) != 2 {
		t.Fatalf("manifest inputs %+v, want a.jsonl and b.jsonl", m.Inputs)
	}
	for i, p := range []string{a, b} {
		sha, _ := engine.HashFile(p)
		if in := m.Inputs[i]; in.Kind != "file" || filepath.Base(in.Path) != filepath.Base(p) || in.SHA256 != sha {
			t.Errorf("manifest input %d is %+v, want %s with sha256 %s", i, in, p, sha)
		}
	}
	for _, k := range []string{"total", "read", "sign", "index", "verify", "write"} {
		if _, ok := m.Seconds[k]; !ok {
			t.Errorf("manifest seconds lack %q: %v", k, m.Seconds)
		}
	}
	if m.Counts["rows"] != 151 || m.Counts["kept"]+m.Counts["removed"] != 151 || m.Counts["removed"] == 0 {
		t.Errorf("manifest counts %v", m.Counts)
	}

	expectRun(t, out, "skipped", work, args...)
	expectRun(t, out, "ran", "dedup: 151 rows", append(args, "--force")...)
	expectRun(t, out, "skipped", work, args...)
	expectRun(t, out, "ran", "threshold 0.70", append(args, "--threshold", "0.7")...)
	expectRun(t, out, "skipped", work, append(args, "--threshold", "0.7")...)
	expectRun(t, out, "ran", "threshold 0.80", args...)
	// How many goroutines sign decides nothing in the output.
	expectRun(t, out, "skipped", work, append(args, "--workers", "1")...)
	zstd := shardBytes(t, out)
	expectRun(t, out, "ran", "dedup: 151 rows", append(args, "--compression", "none")...)
	if none := shardBytes(t, out); none <= zstd {
		t.Errorf("--compression none wrote %d bytes, zstd %d: the codec was not applied", none, zstd)
	}
	expectRun(t, out, "skipped", work, append(args, "--compression", "none")...)
	expectRun(t, out, "ran", "dedup: 151 rows", append(args, "--compression-level", "3")...)
	expectRun(t, out, "ran", "dedup: 151 rows", append(args, "--keep-signatures")...)
	expectRun(t, out, "ran", "dedup: 151 rows", append(args, "--on-duplicate-id", "keep-first")...)
	expectRun(t, out, "ran", "dedup: 151 rows", args...)
	expectRun(t, out, "skipped", work, args...)
	// A changed input file (the second one) runs it again.
	os.WriteFile(b, []byte(`{"id":"extra-1","n":1,"lang":"l1","text":"a row of the second file that looks like no other row here"}`+"\n"+
		`{"id":"extra-2","n":2,"lang":"l2","text":"and one more row, added after the first run"}`+"\n"), 0o644)
	expectRun(t, out, "ran", "dedup: 152 rows", args...)
	expectRun(t, out, "skipped", work, args...)
	// A committed shard altered: the output is not current.
	kept, _ := filepath.Glob(filepath.Join(out, "kept-*.parquet"))
	f, _ := os.OpenFile(kept[0], os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("x"))
	f.Close()
	expectRun(t, out, "ran", "dedup: 152 rows", args...)
}

// --keep-signatures output merged with --reuse-signatures into another
// directory: the merge reads the first run's kept shards as raw inputs
// (each hashed in its manifest), reuses their signatures, and skips when
// run again; the first run redone by --force writes the same shards, so
// the merge is still current.
func TestDedupReuseSignaturesAcrossOutputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	writeSynthCorpus(t, in, 200)
	d1, merged := filepath.Join(dir, "d1"), filepath.Join(dir, "merged")
	common := []string{"dedup", "--no-progress", "--id-field", "id", "--text-field", "text"}
	first := append(slices.Clone(common), "--in", in, "--keep-signatures", "--out", d1)
	expectRun(t, d1, "ran", "dedup: 200 rows", first...)
	m1, err := engine.ReadManifest(filepath.Join(d1, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	keptN := m1.Counts["kept"]
	merge := append(slices.Clone(common), "--in", filepath.Join(d1, "kept-*.parquet"), "--reuse-signatures", "--out", merged)
	expectRun(t, merged, "ran", fmt.Sprintf("reused %d stored signatures", keptN), merge...)
	m, err := engine.ReadManifest(filepath.Join(merged, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(d1, "kept-*.parquet"))
	if len(m.Inputs) != len(kept) || len(kept) == 0 {
		t.Fatalf("merge manifest inputs %+v, want the %d kept shards of d1", m.Inputs, len(kept))
	}
	for i, p := range kept {
		if sha, _ := engine.HashFile(p); m.Inputs[i].SHA256 != sha {
			t.Errorf("merge input %d: %+v, want %s hashed", i, m.Inputs[i], p)
		}
	}
	if m.Counts["removed"] != 0 || m.Counts["rows"] != keptN {
		t.Errorf("merge of one part's kept rows: counts %v, want %d rows, none removed", m.Counts, keptN)
	}
	expectRun(t, merged, "skipped", "phases (wall s)", merge...)
	expectRun(t, d1, "ran", "dedup: 200 rows", append(first, "--force")...)
	expectRun(t, merged, "skipped", "phases (wall s)", merge...)
}

// An input inside --out that the run would clear is refused (exit 2)
// before anything is cleared, with a message naming the file and the
// output directory; the earlier output stays committed.
func TestDedupRefusesInputInOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	writeSynthCorpus(t, in, 50)
	out := filepath.Join(dir, "out")
	args := []string{"dedup", "--no-progress", "--id-field", "id", "--text-field", "text", "--out", out}
	expectRun(t, out, "ran", "dedup: 50 rows", append(args, "--in", in)...)
	before := commitState(t, out)
	stdout, err := runCLI(t, append(args, "--in", filepath.Join(out, "kept-*.parquet"), "--reuse-signatures")...)
	kept := filepath.Join(out, "kept-00000.parquet")
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), kept) || !strings.Contains(err.Error(), "output directory") {
		t.Fatalf("dedup --in out/kept-* --out out: exit %d (%v), want %d naming %s and the output directory\n%s", code, err, exitUsage, kept, stdout)
	}
	if after := commitState(t, out); after != before {
		t.Error("the refused run changed the earlier output")
	}
}
