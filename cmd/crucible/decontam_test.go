package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/engine"
)

// outputState is what a run leaves in a command's output directory: the
// manifest's bytes and each Parquet file's modification time (a run that
// commits again rewrites them, one that skips leaves them).
type outputState struct {
	manifest []byte
	files    map[string]time.Time
}

func stateOf(t *testing.T, dir string) outputState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := outputState{manifest: b, files: map[string]time.Time{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		s.files[filepath.Base(f)] = st.ModTime()
	}
	if len(s.files) == 0 {
		t.Fatalf("%s holds no Parquet file", dir)
	}
	return s
}

// untouched reports whether dir is as s says: the same manifest bytes and
// the same files, none rewritten.
func (s outputState) untouched(t *testing.T, dir string) bool {
	t.Helper()
	now := stateOf(t, dir)
	if !bytes.Equal(now.manifest, s.manifest) || len(now.files) != len(s.files) {
		return false
	}
	for f, m := range s.files {
		if !now.files[f].Equal(m) {
			return false
		}
	}
	return true
}

func readManifest(t *testing.T, dir string) *engine.Manifest {
	t.Helper()
	m, err := engine.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// requireFingerprint: the manifest in dir has a config hash, hashes each
// of files (by its current content) among its file inputs, and names each
// of upstreams as a manifest input.
func requireFingerprint(t *testing.T, dir string, files, upstreams []string) {
	t.Helper()
	m := readManifest(t, dir)
	if m.ConfigHash == "" {
		t.Errorf("%s: manifest has no config_hash", dir)
	}
	hashed := map[string]string{}
	var ups []string
	for _, in := range m.Inputs {
		switch in.Kind {
		case "file":
			abs, _ := filepath.Abs(in.Path)
			hashed[abs] = in.SHA256
		case "manifest":
			ups = append(ups, filepath.Dir(in.Path))
		}
	}
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		want, err := engine.HashFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if hashed[abs] != want {
			t.Errorf("%s: manifest input %s has sha256 %q, want %q (inputs %+v)", dir, f, hashed[abs], want, m.Inputs)
		}
	}
	for _, u := range upstreams {
		if !slices.Contains(ups, filepath.Clean(u)) {
			t.Errorf("%s: manifest names upstreams %v, want %s among them", dir, ups, u)
		}
	}
}

func purifiedIDs(t *testing.T, dir, kind string) []int64 {
	t.Helper()
	so, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[struct {
		ID int64 `arrow:"id"`
	}](so.Shards(kind)...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// Issue 17.3: decontam check and its --purify run through the runner. A
// second identical run skips both (manifests byte for byte, no shard
// rewritten, the skip said instead of the summary) and still exits 6; a
// changed corpus file, benchmark file or flag runs the check again, and
// --purify again when the check's verdicts changed; --force runs both; a
// purified corpus whose manifest is gone is rewritten from the check's
// committed contaminated rows without matching again; both manifests have
// a config hash and every input file hashed.
func TestDecontamCheckResume(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	out, pur := filepath.Join(dir, "m"), filepath.Join(dir, "p")
	run := func(mod func(o *DecontamCheckOptions)) (string, int) {
		t.Helper()
		o := purifyOpts(f, []string{f.corpus}, out, pur)
		if mod != nil {
			mod(&o)
		}
		err := runDecontamCheck(context.Background(), o)
		return o.Stdout.(*bytes.Buffer).String(), exitCode(context.Background(), err)
	}
	const checkSkip, purifySkip = "decontam: up to date", "decontam_purify: up to date"
	stdout, code := run(nil)
	if code != exitFindings || !strings.Contains(stdout, "matches: "+out) || !strings.Contains(stdout, "purified corpus: "+pur) {
		t.Fatalf("first run: exit %d\n%s", code, stdout)
	}
	wantKept, wantRemoved := purifiedIDs(t, pur, purifyKept), purifiedIDs(t, pur, purifyRemoved)
	if len(wantRemoved) != len(f.want) {
		t.Fatalf("removed %v, want the %d contaminated rows", wantRemoved, len(f.want))
	}
	requireFingerprint(t, out, []string{f.corpus, f.bench}, nil)
	requireFingerprint(t, pur, []string{f.corpus}, []string{out})
	if c := readManifest(t, out).Counts; contaminatedCount(c) == 0 || c["contaminated.bench"] == 0 {
		t.Errorf("check manifest counts %v: no contaminated.* count", c)
	}
	m0, p0 := stateOf(t, out), stateOf(t, pur)

	// (a) The same run again: both skip, the exit code stays 6.
	stdout, code = run(nil)
	if code != exitFindings || !strings.Contains(stdout, checkSkip) || !strings.Contains(stdout, purifySkip) ||
		strings.Contains(stdout, "matches: ") || strings.Contains(stdout, "purified corpus: ") {
		t.Errorf("identical rerun: exit %d, want %d, both skipped and no summary:\n%s", code, exitFindings, stdout)
	}
	if !m0.untouched(t, out) || !p0.untouched(t, pur) {
		t.Errorf("identical rerun rewrote an output")
	}

	// The purified corpus alone gone: the check skips, the purify reads
	// its committed contaminated rows and writes the same rows again.
	os.Remove(filepath.Join(pur, "manifest.json"))
	stdout, code = run(nil)
	if code != exitFindings || !strings.Contains(stdout, checkSkip) || !strings.Contains(stdout, "purified corpus: "+pur) {
		t.Errorf("purify manifest removed: exit %d, want the check skipped and the purify run:\n%s", code, stdout)
	}
	if !m0.untouched(t, out) {
		t.Errorf("purify manifest removed: the check ran again")
	}
	if !slices.Equal(purifiedIDs(t, pur, purifyKept), wantKept) || !slices.Equal(purifiedIDs(t, pur, purifyRemoved), wantRemoved) {
		t.Errorf("purify from the committed check: kept/removed differ from the first run's")
	}
	if !bytes.Equal(stateOf(t, pur).manifest, p0.manifest) {
		t.Errorf("purify from the committed check: manifest differs from the first run's")
	}

	// (c) --force runs both again, through the command line too.
	args := []string{"decontam", "check", "--corpus", f.corpus, "--corpus-id-field", "id", "--corpus-field", "text", "--benchmark", f.bench,
		"--id-field", "id", "--field", "prompt", "--field", "ref", "--out", out, "--purify", pur, "--no-progress", "--method", "lexical"}
	m1, p1 := stateOf(t, out), stateOf(t, pur)
	stdout, err := runCLI(t, append(args, "--force")...)
	if exitCode(context.Background(), err) != exitFindings || strings.Contains(stdout, "up to date") || m1.untouched(t, out) || p1.untouched(t, pur) {
		t.Errorf("--force: %v, want both run again:\n%s", err, stdout)
	}
	// The command line's writer options differ from purifyOpts's small
	// shards: its first run without --force ran; the second skips.
	runCLI(t, args...)
	m2, p2 := stateOf(t, out), stateOf(t, pur)
	if stdout, err := runCLI(t, args...); exitCode(context.Background(), err) != exitFindings || !strings.Contains(stdout, checkSkip) || !m2.untouched(t, out) || !p2.untouched(t, pur) {
		t.Errorf("CLI rerun: %v, want both skipped:\n%s", err, stdout)
	}

	// (b) A changed flag: --threshold runs the check again; the purify
	// follows the check's content (its shards and counts), not its config.
	run(nil)
	m3, p3 := stateOf(t, out), stateOf(t, pur)
	stdout, code = run(func(o *DecontamCheckOptions) { o.Config.Threshold = 0.95 })
	if code != exitFindings || strings.Contains(stdout, checkSkip) || m3.untouched(t, out) {
		t.Errorf("--threshold 0.95: exit %d, want the check run again:\n%s", code, stdout)
	}
	var before engine.Manifest
	json.Unmarshal(m3.manifest, &before)
	if readManifest(t, out).ConfigHash == before.ConfigHash {
		t.Errorf("--threshold 0.95: config hash unchanged")
	}
	sameVerdicts := readManifest(t, out).ContentHash == before.ContentHash
	if skipped := strings.Contains(stdout, purifySkip); skipped != sameVerdicts || p3.untouched(t, pur) != sameVerdicts {
		t.Errorf("--threshold 0.95: check content unchanged %v, purify skipped %v (want the same)", sameVerdicts, skipped)
	}

	// (b) A changed benchmark file: a new item that a clean corpus row
	// copies makes that row contaminated.
	run(nil)
	clean := wantKept[0]
	var text string
	for _, l := range strings.Split(strings.TrimSpace(mustRead(t, f.corpus)), "\n") {
		var r struct {
			ID   int64  `json:"id"`
			Text string `json:"text"`
		}
		json.Unmarshal([]byte(l), &r)
		if r.ID == clean {
			text = r.Text
		}
	}
	bj, _ := json.Marshal(map[string]string{"id": "bench-new", "ref": text})
	orig := []byte(mustRead(t, f.bench))
	os.WriteFile(f.bench, append(slices.Clone(orig), append(bj, '\n')...), 0o644)
	stdout, code = run(nil)
	if code != exitFindings || strings.Contains(stdout, "up to date") || !slices.Contains(purifiedIDs(t, pur, purifyRemoved), clean) {
		t.Errorf("changed benchmark: exit %d, want both run and row %d removed:\n%s", code, clean, stdout)
	}
	requireFingerprint(t, out, []string{f.corpus, f.bench}, nil)
	os.WriteFile(f.bench, orig, 0o644)
	run(nil)

	// (b) A changed corpus file: a row appended that copies a benchmark
	// text is removed too.
	m4, p4 := stateOf(t, out), stateOf(t, pur)
	corpus := []byte(mustRead(t, f.corpus))
	var b0 struct {
		Ref string `json:"ref"`
	}
	json.Unmarshal(bytes.SplitN([]byte(mustRead(t, f.bench)), []byte("\n"), 2)[0], &b0)
	row, _ := json.Marshal(map[string]any{"id": 99999, "text": b0.Ref})
	os.WriteFile(f.corpus, append(slices.Clone(corpus), append(row, '\n')...), 0o644)
	stdout, code = run(nil)
	if code != exitFindings || strings.Contains(stdout, "up to date") || m4.untouched(t, out) || p4.untouched(t, pur) ||
		!slices.Contains(purifiedIDs(t, pur, purifyRemoved), 99999) {
		t.Errorf("changed corpus: exit %d, want both run and row 99999 removed:\n%s", code, stdout)
	}
	requireFingerprint(t, out, []string{f.corpus, f.bench}, nil)
	requireFingerprint(t, pur, []string{f.corpus}, []string{out})
	os.WriteFile(f.corpus, corpus, 0o644)

	// A clean corpus: the skipped check exits 0, as the check did.
	cleanCorpus := filepath.Join(dir, "clean.jsonl")
	os.WriteFile(cleanCorpus, []byte(`{"id":1,"text":"nothing here resembles any benchmark item at all"}`+"\n"), 0o644)
	co := filepath.Join(dir, "clean-m")
	for i := range 2 {
		o := purifyOpts(f, []string{cleanCorpus}, co, "")
		err := runDecontamCheck(context.Background(), o)
		if err != nil || (i == 1) != strings.Contains(o.Stdout.(*bytes.Buffer).String(), checkSkip) {
			t.Errorf("clean check, run %d: %v\n%s", i+1, err, o.Stdout)
		}
	}
}

// Issue 17.3: rescore --out runs through the runner: a second identical
// rescore skips (manifest bytes unchanged, no shard rewritten) with the
// exit code it had; another --threshold, a changed match set (the check
// rerun on a changed corpus) or --force rescores again; the manifest has
// a config hash, the match set's manifest and decontam.json hashed.
func TestDecontamRescoreResume(t *testing.T) {
	f, check, out, rescore := newRescoreRun(t)
	const skip = "decontam_rescore: up to date"
	stdout, code := rescore("--threshold", "0.9")
	if code != exitFindings || !strings.Contains(stdout, "matches ≥ 0.90: "+out) {
		t.Fatalf("rescore: exit %d\n%s", code, stdout)
	}
	requireFingerprint(t, out, []string{filepath.Join(check, decontam.RunFile)}, []string{check})
	if readManifest(t, out).Type != rescoreManifestTy {
		t.Errorf("rescore manifest type %q", readManifest(t, out).Type)
	}
	r0 := stateOf(t, out)
	if stdout, code := rescore("--threshold", "0.9"); code != exitFindings || !strings.Contains(stdout, skip) || strings.Contains(stdout, "matches ≥") || !r0.untouched(t, out) {
		t.Errorf("identical rescore: exit %d, want %d and skipped, output untouched:\n%s", code, exitFindings, stdout)
	}
	if stdout, code := rescore("--threshold", "0.9", "--force"); code != exitFindings || strings.Contains(stdout, skip) || r0.untouched(t, out) {
		t.Errorf("--force: exit %d, want rescored:\n%s", code, stdout)
	}
	r1 := stateOf(t, out)
	if stdout, code := rescore("--threshold", "0.95"); code != exitFindings || strings.Contains(stdout, skip) || r1.untouched(t, out) {
		t.Errorf("--threshold 0.95: exit %d, want rescored:\n%s", code, stdout)
	}
	// The rescored set itself rescores (its type is decontam_rescore).
	if _, err := runCLI(t, "decontam", "rescore", out, "--threshold", "0.99"); exitCode(context.Background(), err) != exitFindings {
		t.Errorf("rescore of a rescored set: %v", err)
	}
	// A changed match set: the check rerun on a corpus with one more
	// contaminated row.
	rescore("--threshold", "0.95")
	r2 := stateOf(t, out)
	var b0 struct {
		Ref string `json:"ref"`
	}
	json.Unmarshal(bytes.SplitN([]byte(mustRead(t, f.bench)), []byte("\n"), 2)[0], &b0)
	row, _ := json.Marshal(map[string]any{"id": 99999, "text": b0.Ref})
	os.WriteFile(f.corpus, append([]byte(mustRead(t, f.corpus)), append(row, '\n')...), 0o644)
	runDecontamCheck(context.Background(), purifyOpts(f, []string{f.corpus}, check, ""))
	stdout, code = rescore("--threshold", "0.95")
	if code != exitFindings || strings.Contains(stdout, skip) || r2.untouched(t, out) {
		t.Errorf("changed match set: exit %d, want rescored:\n%s", code, stdout)
	}
	set, _ := contaminatedSet(t, out)
	if !slices.ContainsFunc(set, func(k string) bool { return strings.HasPrefix(k, fmt.Sprint(99999)+"|") }) {
		t.Errorf("rescored set %v lacks the new row 99999", set)
	}
	requireFingerprint(t, out, []string{filepath.Join(check, decontam.RunFile)}, []string{check})
	// A clean rescore that skips exits 0.
	for i := range 2 {
		if stdout, code := rescore("--threshold", "1"); (code == exitFindings) != (contaminatedCount(readManifest(t, out).Counts) > 0) || (i == 1) != strings.Contains(stdout, skip) {
			t.Errorf("rescore at 1, run %d: exit %d\n%s", i+1, code, stdout)
		}
	}
}

// `decontam index` runs as a one-stage pipeline too: its manifest
// fingerprints the inputs and the settings; an identical rerun skips
// without touching the index; a changed setting, a changed input or
// --force rebuilds it in place (the old index replaced, never refused); a
// check through the index skips on its second run (the index directory's
// .locks bookkeeping is not part of its fingerprint); an input that is one
// of the index's own files is refused.
func TestDecontamIndexResume(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	idx := filepath.Join(dir, "idx")
	build := func(mod func(o *DecontamIndexOptions)) string {
		t.Helper()
		o := DecontamIndexOptions{In: []string{f.bench}, Side: decontam.SideBenchmark, Fields: []string{"prompt", "ref"}, Out: idx,
			Config: decontam.DefaultConfig(), Methods: []string{"lexical"}, Workers: 1, Stdout: &strings.Builder{}}
		if mod != nil {
			mod(&o)
		}
		if err := runDecontamIndex(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return o.Stdout.(*strings.Builder).String()
	}
	meta := func() ([]byte, time.Time) {
		t.Helper()
		p := filepath.Join(idx, "meta.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		return b, st.ModTime()
	}
	const skip = "decontam_index: up to date"
	if out := build(nil); !strings.Contains(out, "written to") {
		t.Fatalf("first build:\n%s", out)
	}
	requireFingerprint(t, idx, []string{f.bench}, nil)
	m0, t0 := meta()
	man0, _ := os.ReadFile(filepath.Join(idx, "manifest.json"))
	if out := build(nil); !strings.Contains(out, skip) {
		t.Fatalf("identical rerun did not skip:\n%s", out)
	}
	if m, tm := meta(); !bytes.Equal(m, m0) || !tm.Equal(t0) {
		t.Errorf("identical rerun rewrote meta.json")
	}
	if man, _ := os.ReadFile(filepath.Join(idx, "manifest.json")); !bytes.Equal(man, man0) {
		t.Errorf("identical rerun rewrote the manifest")
	}
	// A check through the index skips on its second run.
	check := func() string {
		t.Helper()
		o := purifyOpts(f, []string{f.corpus}, filepath.Join(dir, "m"), "")
		o.Benchmarks = []string{idx}
		o.Methods = []string{"lexical"}
		runDecontamCheck(context.Background(), o)
		return o.Stdout.(*bytes.Buffer).String()
	}
	if out := check(); strings.Contains(out, "up to date") {
		t.Fatalf("first check through the index skipped:\n%s", out)
	}
	if out := check(); !strings.Contains(out, "decontam: up to date") {
		t.Errorf("second check through an unchanged index ran again:\n%s", out)
	}
	if out := build(func(o *DecontamIndexOptions) { o.Config.NGram = 9 }); strings.Contains(out, skip) {
		t.Fatalf("--ngram 9 skipped:\n%s", out)
	}
	if m, _ := meta(); !bytes.Contains(m, []byte(`"ngram": 9`)) {
		t.Errorf("rebuilt index does not record ngram 9:\n%s", m)
	}
	if out := build(func(o *DecontamIndexOptions) { o.Config.NGram = 9; o.Force = true }); strings.Contains(out, skip) {
		t.Errorf("--force skipped:\n%s", out)
	}
	data, _ := os.ReadFile(f.bench)
	os.WriteFile(f.bench, append(data, []byte(`{"id":"bench-extra","prompt":"a new problem text","ref":"module x; endmodule"}`+"\n")...), 0o644)
	if out := build(func(o *DecontamIndexOptions) { o.Config.NGram = 9 }); strings.Contains(out, skip) {
		t.Errorf("a changed input skipped:\n%s", out)
	}
	requireFingerprint(t, idx, []string{f.bench}, nil)
	if ix, err := decontam.Open(idx); err != nil {
		t.Fatalf("the rebuilt index does not open: %v", err)
	} else {
		ix.Close()
	}
	// An input that is a file of the index is refused before anything.
	o := DecontamIndexOptions{In: []string{filepath.Join(idx, "entries.jsonl")}, Side: decontam.SideBenchmark, Out: idx,
		Config: decontam.DefaultConfig(), Methods: []string{"lexical"}, Stdout: &strings.Builder{}}
	if code := exitCode(context.Background(), runDecontamIndex(context.Background(), o)); code != exitUsage {
		t.Errorf("an input inside the index: exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(idx, "meta.json")); err != nil {
		t.Errorf("the refused build removed the index: %v", err)
	}
}

// newRescoreRun runs a check of the purify fixture (it finds contamination)
// and returns the fixture, the check's directory, a rescore output
// directory and a function running `decontam rescore CHECK --out OUT ARGS`
// through the CLI (its stdout and exit code).
func newRescoreRun(t *testing.T) (f purifyFixture, check, out string, rescore func(args ...string) (string, int)) {
	t.Helper()
	dir := t.TempDir()
	f = newPurifyFixture(t, dir)
	check = filepath.Join(dir, "m")
	if code := exitCode(context.Background(), runDecontamCheck(context.Background(), purifyOpts(f, []string{f.corpus}, check, ""))); code != exitFindings {
		t.Fatalf("check: exit %d", code)
	}
	out = filepath.Join(dir, "r")
	rescore = func(args ...string) (string, int) {
		t.Helper()
		stdout, err := runCLI(t, append([]string{"decontam", "rescore", check, "--out", out}, args...)...)
		return stdout, exitCode(context.Background(), err)
	}
	return f, check, out, rescore
}
