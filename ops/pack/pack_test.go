package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// writeTestCorpus writes n trajectories of varied length (a few longer than
// 512 tokens) plus bad rows, as JSONL, and returns the path.
func writeTestCorpus(t *testing.T, dir string, n int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 22))
	words := []string{"module", "counter", "always", "@(posedge", "clk)", "begin", "end", "error:", "line", "42", "é", "中文", "\n", "    ", "x <= x + 1;", "__global__", "void", "ok"}
	text := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	var lines []string
	for i := 0; i < n; i++ {
		fam := []string{"counter", "fsm", "gemm"}[i%3]
		dom := map[string]string{"counter": "rtl", "fsm": "rtl", "gemm": "kernels"}[fam]
		size := 5 + r.IntN(40)
		if fam == "gemm" && i%2 == 0 {
			size = 400 // gemm trajectories are long: some exceed B
		}
		msgs := []Message{{Role: "system", Content: "be terse"}, {Role: "user", Content: text(size)}}
		for k := 0; k < 1+r.IntN(3); k++ {
			msgs = append(msgs, Message{Role: "assistant", Reasoning: text(r.IntN(size)), Content: text(size / 2)},
				Message{Role: "environment", Content: text(r.IntN(20))})
		}
		b, _ := json.Marshal(Trajectory{ID: fmt.Sprintf("traj-%04d", i), Domain: dom, Family: fam, Messages: msgs})
		lines = append(lines, string(b))
	}
	lines = append(lines,
		`{"id": "bad-role", "messages": [{"role": "critic", "content": "x"}]}`,
		`{"id": "traj-0001", "messages": [{"role": "assistant", "content": "duplicate id"}]}`,
		`{"id": "no-assistant", "messages": [{"role": "user", "content": "x"}]}`,
		`{"id": "broken", "messages": [`,
		``,
	)
	p := filepath.Join(dir, "traj.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var quiet = slog.New(slog.DiscardHandler)

func testConfig(layout, algo string) Config {
	c := DefaultConfig()
	c.SeqLen = 1024
	c.Layout = layout
	c.Algorithm = algo
	c.Seed = 7
	c.Workers = 2
	return c
}

func TestRunAndAuditEveryLayoutAndAlgorithm(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 90)
	for _, layout := range []string{LayoutMegatron, LayoutTRL} {
		for _, algo := range Algorithms {
			t.Run(layout+"-"+algo, func(t *testing.T) {
				out := filepath.Join(dir, layout+"-"+algo)
				m, err := Run(context.Background(), testConfig(layout, algo), []string{in}, out, quiet)
				if err != nil {
					t.Fatal(err)
				}
				c := m.Counts
				if c.SamplesIn != 94 || c.Rejected != 4 || c.Dropped == 0 || c.Packed+c.Dropped != 90 {
					t.Fatalf("counts %+v", c)
				}
				for _, reason := range []string{"unknown_role", "duplicate_id", "no_trained_tokens", "bad_json"} {
					if c.RejectedByReason[reason] != 1 {
						t.Errorf("rejected_by_reason[%s] = %d", reason, c.RejectedByReason[reason])
					}
				}
				// only the long gemm family loses samples, and the report says so
				for _, g := range m.Groups {
					if (g.Family == "gemm") != (g.Dropped > 0) {
						t.Errorf("group %+v", g)
					}
				}
				if algo != AlgoNone && m.FillRatio < 0.8 {
					t.Errorf("fill %.3f", m.FillRatio)
				}
				rep, err := Audit(context.Background(), []string{in}, out, 2, quiet)
				if err != nil {
					t.Fatalf("audit: %v (%+v)", err, rep)
				}
				if rep.Samples != c.Packed || rep.Dropped != c.Dropped || rep.Rows != c.Rows {
					t.Fatalf("audit report %+v vs counts %+v", rep, c)
				}
			})
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 60)
	var hashes []string
	for i, workers := range []int{1, 2, 3} {
		cfg := testConfig(LayoutMegatron, AlgoBestFitDecreasing)
		cfg.Workers = workers
		m, err := Run(context.Background(), cfg, []string{in}, filepath.Join(dir, fmt.Sprint(i)), quiet)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, m.Shards[0].SHA256)
	}
	if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
		t.Fatalf("packed shard differs across worker counts: %v", hashes)
	}
}

func TestParquetInput(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 30)
	var good []Trajectory
	for _, line := range strings.Split(mustRead(t, in), "\n") {
		var tr Trajectory
		if json.Unmarshal([]byte(line), &tr) == nil && strings.HasPrefix(tr.ID, "traj-") {
			good = append(good, tr)
		}
	}
	if _, err := engine.WriteAll(context.Background(), dir, "traj", "trajectories", engine.DefaultWriterOptions(), good); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "traj-00000.parquet")
	m, err := Run(context.Background(), testConfig(LayoutTRL, AlgoBestFitDecreasing), []string{pq}, filepath.Join(dir, "out"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.SamplesIn != 31 || m.Counts.Rejected != 1 { // the duplicate id
		t.Fatalf("counts %+v", m.Counts)
	}
	if _, err := Audit(context.Background(), []string{pq}, filepath.Join(dir, "out"), 2, quiet); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tamper rewrites the first packed shard after applying edit to its rows.
func tamper[T any](t *testing.T, out string, m *Manifest, edit func([]T) []T) {
	t.Helper()
	p := filepath.Join(out, m.Shards[0].Path)
	rows, err := engine.ReadRows[T](p)
	if err != nil {
		t.Fatal(err)
	}
	rows = edit(rows)
	tmp := t.TempDir()
	if _, err := engine.WriteAll(context.Background(), tmp, "x", KindPacked, engine.DefaultWriterOptions(), rows); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tmp, "x-00000.parquet"), p); err != nil {
		t.Fatal(err)
	}
}

func TestAuditCatchesDiscrepancies(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 60)
	cases := map[string]struct {
		layout string
		edit   func(out string, m *Manifest)
		want   string
	}{
		"flipped mask bit": {LayoutMegatron, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []MegatronRow) []MegatronRow { r[0].LossMask[3] ^= 1; return r })
		}, "differs at token 3"},
		"changed token": {LayoutTRL, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []TRLRow) []TRLRow { r[0].InputIDs[5]++; r[0].Labels[5] = -100; return r })
		}, "differs at token"},
		"missing row": {LayoutMegatron, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []MegatronRow) []MegatronRow { return r[1:] })
		}, "missing from the packed rows"},
		"duplicated row": {LayoutTRL, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []TRLRow) []TRLRow { return append(r, r[0]) })
		}, "appears twice"},
		"bad boundary": {LayoutMegatron, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []MegatronRow) []MegatronRow {
				for i := range r {
					if len(r[i].SeqStartID) > 1 {
						r[i].SeqStartID[1]++
						break
					}
				}
				return r
			})
		}, "renders to"},
		"position ids": {LayoutTRL, func(out string, m *Manifest) {
			tamper(t, out, m, func(r []TRLRow) []TRLRow { r[0].PositionIDs[2] = 9; return r })
		}, "position_ids[2]"},
		"dropped list lost": {LayoutMegatron, func(out string, m *Manifest) {
			for _, s := range m.Shards {
				if s.Kind == KindDropped {
					os.Remove(filepath.Join(out, s.Path))
				}
			}
		}, "no such file"},
		"template changed": {LayoutMegatron, func(out string, m *Manifest) {
			m.Template.Separator = "\n\n"
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(out, ManifestFile), b, 0o644)
		}, "template hash"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			m, err := Run(context.Background(), testConfig(tc.layout, AlgoBestFitDecreasing), []string{in}, out, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Audit(context.Background(), []string{in}, out, 2, quiet); err != nil {
				t.Fatalf("clean audit failed: %v", err)
			}
			tc.edit(out, m)
			rep, err := Audit(context.Background(), []string{in}, out, 2, quiet)
			if err == nil {
				t.Fatal("audit passed a tampered output")
			}
			msg := err.Error()
			if rep != nil {
				msg += " " + strings.Join(rep.Problems, "; ")
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("want %q in %s", tc.want, msg)
			}
			if name != "dropped list lost" && !errors.Is(err, ErrAudit) {
				t.Fatalf("want ErrAudit, got %v", err)
			}
		})
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := Config{SeqLen: 3, Layout: "jsonl", Algorithm: "greedy", Workers: -1}
	err := c.Validate()
	for _, want := range []string{"tokenizer", "seq_len", "layout", "algorithm", "workers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("want ErrConfig, got %v", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestStageRegistersAndRuns(t *testing.T) {
	reg := engine.NewRegistry()
	RegisterStages(reg)
	cfg, err := engine.NewStageConfig("pack", "tokenizer: o200k_base\nseq_len: 2048\nlayout: trl\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Build("pack", cfg); err != nil {
		t.Fatal(err)
	}
	bad, _ := engine.NewStageConfig("pack", "seq_len: 1\nlayot: trl\n")
	if _, err := reg.Build("pack", bad); err == nil || !strings.Contains(err.Error(), "layot") {
		t.Fatalf("typo in config accepted: %v", err)
	}
}

// Everything longer than B: nothing is packed, nothing is truncated, every
// sample is accounted for as dropped, and the audit agrees.
func TestAllSamplesDropped(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCorpus(t, dir, 12)
	cfg := testConfig(LayoutMegatron, AlgoBestFitDecreasing)
	cfg.SeqLen = 16
	out := filepath.Join(dir, "out")
	m, err := Run(context.Background(), cfg, []string{in}, out, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.Packed != 0 || m.Counts.Rows != 0 || m.Counts.Dropped != 12 || m.FillRatio != 0 {
		t.Fatalf("counts %+v fill %v", m.Counts, m.FillRatio)
	}
	rep, err := Audit(context.Background(), []string{in}, out, 2, quiet)
	if err != nil || rep.Dropped != 12 {
		t.Fatalf("audit %+v: %v", rep, err)
	}
}
