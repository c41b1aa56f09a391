package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack"
)

func writePackInput(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < 40; i++ {
		body := strings.Repeat("always @(posedge clk) q <= q + 1; ", 1+i%7)
		if i%10 == 0 {
			body = strings.Repeat("very long environment transcript line\n", 200) // over B
		}
		fmt.Fprintf(&b, `{"id":"t%d","domain":"rtl","family":"f%d","messages":[{"role":"user","content":"task %d"},{"role":"assistant","reasoning":"think","content":%q},{"role":"environment","content":"ok"}]}`+"\n", i, i%3, i, body)
	}
	b.WriteString(`{"id":"bad","messages":[{"role":"robot","content":"x"}]}` + "\n")
	p := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPackAndAuditCommands(t *testing.T) {
	dir := t.TempDir()
	in := writePackInput(t, dir)
	out := filepath.Join(dir, "packed")
	for _, layout := range []string{"megatron", "trl"} {
		var stdout bytes.Buffer
		cmd := newPackCmd()
		cmd.SetOut(&stdout)
		cmd.SetArgs([]string{"--in", in, "--out", out + layout, "--tokenizer", "o200k_base", "--seq-len", "1024", "--layout", layout})
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"rows of B=1024", "dropped  domain=rtl", "rejected unknown_role", "<|im_start|>="} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout.String())
			}
		}
		stdout.Reset()
		audit := newPackCmd()
		audit.SetOut(&stdout)
		audit.SetArgs([]string{"audit", "--in", dir, "--packed", out + layout})
		if err := audit.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("audit: %v\n%s", err, stdout.String())
		}
		if !strings.Contains(stdout.String(), "0 problems") {
			t.Errorf("audit output: %s", stdout.String())
		}
		// the output directory carries an engine manifest, so inspect groups it by kind
		var insp bytes.Buffer
		if err := runInspect(context.Background(), InspectOptions{Path: out + layout, Samples: 1, MaxText: 40, Out: &insp}); err != nil {
			t.Fatalf("inspect: %v", err)
		}
		if !strings.Contains(insp.String(), "input_ids") || !strings.Contains(insp.String(), "stage pack") {
			t.Errorf("inspect output:\n%s", insp.String())
		}
	}
	// a discrepancy exits with the findings code: drop the first packed row
	m, err := engine.ReadRows[pack.MegatronRow](filepath.Join(out+"megatron", "packed-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(out+"megatron", "packed-00000.parquet"))
	if _, err := engine.WriteAll(context.Background(), out+"megatron", "packed", "packed", engine.DefaultWriterOptions(), m[1:]); err != nil {
		t.Fatal(err)
	}
	err = runPackAudit(context.Background(), PackAuditOptions{In: []string{in}, Packed: out + "megatron", Stdout: &bytes.Buffer{}})
	if code := exitCode(context.Background(), err); code != exitFindings {
		t.Fatalf("exit code %d for a tampered pack (%v), want %d", code, err, exitFindings)
	}
}

func TestPackBadFlags(t *testing.T) {
	dir := t.TempDir()
	in := writePackInput(t, dir)
	err := runPack(context.Background(), PackOptions{In: []string{in}, Out: dir, Config: pack.Config{Tokenizer: "cl100k_base", SeqLen: 4, Layout: "csv", Algorithm: "bfd"}})
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), "layout") || !strings.Contains(err.Error(), "seq_len") {
		t.Fatalf("got %v (exit %d)", err, code)
	}
	err = runPack(context.Background(), PackOptions{In: []string{filepath.Join(dir, "missing.jsonl")}, Out: dir, Config: pack.DefaultConfig()})
	if code := exitCode(context.Background(), err); code != exitInput {
		t.Fatalf("missing input: %v (exit %d)", err, code)
	}
}

func TestPackWithTemplateFile(t *testing.T) {
	dir := t.TempDir()
	in := writePackInput(t, dir)
	var stdout bytes.Buffer
	err := runPack(context.Background(), PackOptions{In: []string{in}, Out: filepath.Join(dir, "o"), Stdout: &stdout,
		Template: "../../ops/pack/testdata/qwen3-tools.yaml", Config: pack.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<tool_response>=", "</tool_response>="} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("cl100k lacks %s, so it must get a new id; summary:\n%s", want, stdout.String())
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("header: {robot: x}\nmesage_end: y\n"), 0o644)
	err = runPack(context.Background(), PackOptions{In: []string{in}, Out: filepath.Join(dir, "o2"), Template: bad, Config: pack.DefaultConfig()})
	if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), "mesage_end") {
		t.Fatalf("typo in template: %v (exit %d)", err, code)
	}
}

// byteLevelTokenizer writes a minimal byte-level BPE tokenizer.json (the
// 256 byte tokens, plus merges "a b" -> "ab" when merge is set).
func byteLevelTokenizer(t *testing.T, path string, merge bool) {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	merges := []string{}
	if merge {
		vocab["ab"] = 256
		merges = append(merges, "a b")
	}
	data, err := json.Marshal(map[string]any{
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// `crucible pack` runs its stage through the runner: a second identical
// run skips (manifest and pack manifest unchanged, no summary of work it
// did not do); a changed input file, flag, --template file or tokenizer
// file, or --force, runs it again; the manifest carries a config hash and
// the input file's sha256; `pack audit` passes on every output.
func TestPackRerunSkipsAndRedoesStale(t *testing.T) {
	dir := t.TempDir()
	in := writePackInput(t, dir)
	out := filepath.Join(dir, "out")
	tmpl := filepath.Join(dir, "tmpl.yaml")
	os.WriteFile(tmpl, []byte("reasoning_open: \"<think>\\n\"\n"), 0o644)
	tok := filepath.Join(dir, "tok", "tokenizer.json")
	os.MkdirAll(filepath.Dir(tok), 0o755)
	byteLevelTokenizer(t, tok, false)
	run := func(extra ...string) (string, []byte, []byte) {
		t.Helper()
		var stdout bytes.Buffer
		cmd := newPackCmd()
		cmd.SetOut(&stdout)
		cmd.SetArgs(append([]string{"--in", in, "--out", out, "--seq-len", "1024", "--template", tmpl, "--tokenizer", tok}, extra...))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("pack %v: %v\n%s", extra, err, stdout.String())
		}
		m, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		pm, err := os.ReadFile(filepath.Join(out, pack.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		var audit bytes.Buffer
		if err := runPackAudit(context.Background(), PackAuditOptions{In: []string{in}, Packed: out, Stdout: &audit}); err != nil {
			t.Fatalf("audit after pack %v: %v\n%s", extra, err, audit.String())
		}
		return stdout.String(), m, pm
	}
	ran := func(what, stdout string) {
		t.Helper()
		if !strings.Contains(stdout, "packed ") || strings.Contains(stdout, "up to date") {
			t.Fatalf("%s: want a run, got:\n%s", what, stdout)
		}
	}
	skipped := func(what, stdout string) {
		t.Helper()
		if !strings.Contains(stdout, "up to date") || strings.Contains(stdout, "packed ") {
			t.Fatalf("%s: want a skip, got:\n%s", what, stdout)
		}
	}

	s, m1, pm1 := run()
	ran("first run", s)
	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.ConfigHash == "" || m.Stage != "pack" || m.Type != "pack" {
		t.Fatalf("manifest lacks its stage or config hash: %+v", m)
	}
	sha, _ := engine.HashFile(in)
	if len(m.Inputs) != 1 || m.Inputs[0].SHA256 != sha {
		t.Fatalf("manifest inputs %+v, want %s hashed (%s)", m.Inputs, in, sha)
	}
	s, m2, pm2 := run()
	skipped("identical rerun", s)
	if !bytes.Equal(m1, m2) || !bytes.Equal(pm1, pm2) {
		t.Fatal("a skipped rerun rewrote the manifests")
	}
	s, _, _ = run("--force")
	ran("--force", s)
	s, _, _ = run("--seq-len", "2048")
	ran("changed --seq-len", s)
	skipped("same flags again", func() string { s, _, _ := run("--seq-len", "2048"); return s }())
	s, _, _ = run()
	ran("--seq-len back", s)

	// The template file's content is part of the config.
	os.WriteFile(tmpl, []byte("reasoning_open: \"<reasoning>\\n\"\n"), 0o644)
	s, _, _ = run()
	ran("changed --template file", s)
	if pm, err := readPackManifest(out); err != nil || pm.Template.ReasoningOpen != "<reasoning>\n" {
		t.Fatalf("the pack manifest does not record the new template (%v): %+v", err, pm)
	}
	// The tokenizer file's content is fingerprinted.
	byteLevelTokenizer(t, tok, true)
	s, _, _ = run()
	ran("changed tokenizer file", s)
	skipped("unchanged again", func() string { s, _, _ := run(); return s }())

	// A changed input file runs again.
	data, _ := os.ReadFile(in)
	os.WriteFile(in, append(data, []byte(`{"id":"extra","messages":[{"role":"user","content":"one more"},{"role":"assistant","content":"ok"}]}`+"\n")...), 0o644)
	s, _, _ = run()
	ran("changed input", s)
	if !strings.Contains(s, "samples: 42 in") {
		t.Fatalf("the rerun did not read the changed input:\n%s", s)
	}
}
