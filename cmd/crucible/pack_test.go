package main

import (
	"bytes"
	"context"
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
