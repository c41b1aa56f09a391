package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// genTrajectories makes n trajectories of varied length (some gemm ones
// longer than 1024 tokens), one duplicate id and one without an assistant.
func genTrajectories(n int, seed uint64, prefix string) []Trajectory {
	r := rand.New(rand.NewPCG(seed, seed+1))
	words := []string{"module", "counter", "always", "@(posedge", "clk)", "begin", "end", "error:", "line", "42", "é", "中文", "\n", "x <= x + 1;", "__global__", "void"}
	text := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	var out []Trajectory
	for i := 0; i < n; i++ {
		fam := []string{"counter", "fsm", "gemm"}[i%3]
		dom := map[string]string{"counter": "rtl", "fsm": "rtl", "gemm": "kernels"}[fam]
		size := 5 + r.IntN(60)
		if fam == "gemm" && i%2 == 0 {
			size = 400
		}
		msgs := []Message{{Role: "system", Content: "be terse"}, {Role: "user", Content: text(size)}}
		for k := 0; k < 1+r.IntN(3); k++ {
			msgs = append(msgs, Message{Role: "assistant", Reasoning: text(r.IntN(size)), Content: text(size / 2)},
				Message{Role: "environment", Content: text(r.IntN(20))})
		}
		out = append(out, Trajectory{ID: fmt.Sprintf("%s-%04d", prefix, i), Domain: dom, Family: fam, Messages: msgs})
	}
	return out
}

// sourceTrajectories is what the test source stage emits over all parts:
// part i writes the trajectories with index%N == i.
func sourceTrajectories() []Trajectory {
	ts := genTrajectories(72, 5, "src")
	ts[40].ID = ts[3].ID // a duplicate id in another part
	ts[41].Messages = []Message{{Role: "user", Content: "no answer"}}
	return ts
}

func registerTestSource(reg *engine.Registry) {
	reg.Register("test_trajectories", func(engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			w, err := engine.StageWriter[Trajectory](sc, InputKind)
			if err != nil {
				return err
			}
			for i, t := range sourceTrajectories() {
				if sc.Shard.Owns(i) {
					if err := w.Write(t); err != nil {
						return err
					}
				}
			}
			return nil
		}), nil
	}, "test: trajectories split over shard parts")
}

func writeRawFiles(t *testing.T, dir string) []Trajectory {
	t.Helper()
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	var all []Trajectory
	for fi, name := range []string{"a.jsonl", "b.jsonl"} {
		ts := genTrajectories(15, uint64(10+fi), "raw"+name[:1])
		var lines []string
		for _, tr := range ts {
			b, _ := json.Marshal(tr)
			lines = append(lines, string(b))
		}
		lines = append(lines, `{"id": "broken", "messages": [`, ``)
		if err := os.WriteFile(filepath.Join(raw, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, ts...)
	}
	return all
}

const shardPipeline = `name: shardpack
work_dir: work
stages:
  - name: src
    type: test_trajectories
  - name: lengths
    type: pack_lengths
    from: [src]
    inputs: [raw]
    config: CFG
  - name: plan
    type: pack_plan
    from: [lengths]
    config: CFG
  - name: write
    type: pack_write
    from: [plan]
    config: WRITECFG
  - name: single
    type: pack
    from: [src]
    inputs: [raw]
    config: SINGLE
`

func loadShardPipeline(t *testing.T, dir, layout, algo, writeCfg string, reg *engine.Registry) *engine.PipelineConfig {
	t.Helper()
	if writeCfg == "" {
		writeCfg = "CFG"
	}
	text := strings.NewReplacer("WRITECFG", writeCfg).Replace(shardPipeline)
	// plan: names the plan stage for writer parts handed none of its shards
	text = strings.NewReplacer("CFG", "{tokenizer: cl100k_base, seq_len: 1024, layout: LAYOUT, algorithm: ALGO, seed: 11, plan: plan}",
		"SINGLE", "{tokenizer: cl100k_base, seq_len: 1024, layout: LAYOUT, algorithm: ALGO, seed: 11}").Replace(text)
	text = strings.NewReplacer("LAYOUT", layout, "ALGO", algo, "WRITECFG", writeCfg).Replace(text)
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	pc, err := engine.LoadPipeline(p, reg)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

func shardRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	RegisterStages(reg)
	RegisterShardStages(reg)
	registerTestSource(reg)
	return reg
}

// small row groups and shards so every part writes several files
var testWriterOpts = engine.WriterOptions{RowGroupBytes: 2 << 10, ShardBytes: 4 << 10}

func runParts(t *testing.T, pc *engine.PipelineConfig, reg *engine.Registry, n int, only ...string) []*engine.RunSummary {
	t.Helper()
	var sums []*engine.RunSummary
	for i := 0; i < n; i++ {
		sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), pc,
			engine.RunOptions{Shard: engine.Shard{Index: i, Count: n}, Only: only, Writer: testWriterOpts, Log: quiet})
		if err != nil {
			t.Fatalf("part %d/%d of %v: %v", i, n, only, err)
		}
		sums = append(sums, sum)
	}
	return sums
}

// readPackedSamples reads a stage's packed rows in order and unpacks them.
func readPackedSamples(t *testing.T, dir, layout string) (rows [][]string, samples []unpackedSample) {
	t.Helper()
	out, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out.Shards(KindPacked) {
		var us [][]unpackedSample
		switch layout {
		case LayoutMegatron:
			rs, err := engine.ReadRows[MegatronRow](p)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rs {
				u, err := unpackMegatron(&rs[i])
				if err != nil {
					t.Fatalf("%s row %d: %v", p, i, err)
				}
				us = append(us, u)
			}
		case LayoutTRL:
			rs, err := engine.ReadRows[TRLRow](p)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rs {
				u, err := unpackTRL(&rs[i])
				if err != nil {
					t.Fatalf("%s row %d: %v", p, i, err)
				}
				us = append(us, u)
			}
		}
		for _, u := range us {
			var ids []string
			for _, s := range u {
				ids = append(ids, s.id)
			}
			rows = append(rows, ids)
			samples = append(samples, u...)
		}
	}
	return rows, samples
}

func readIDs[T any](t *testing.T, dir, kind string, id func(T) string) []string {
	t.Helper()
	out, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[T](out.Shards(kind)...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, id(r))
	}
	slices.Sort(ids)
	return ids
}

func TestShardedPackingEqualsSingleProcess(t *testing.T) {
	for _, tc := range []struct{ layout, algo string }{{LayoutMegatron, AlgoBestFitDecreasing}, {LayoutTRL, AlgoFirstFitShuffle}} {
		t.Run(tc.layout+"-"+tc.algo, func(t *testing.T) {
			dir := t.TempDir()
			raw := writeRawFiles(t, dir)
			reg := shardRegistry()
			pc := loadShardPipeline(t, dir, tc.layout, tc.algo, "", reg)
			work := filepath.Join(dir, "work")

			runParts(t, pc, reg, 3, "src", "lengths")
			planSum := runParts(t, pc, reg, 1, "plan")[0]
			writeSums := runParts(t, pc, reg, 3, "write")
			singleSum := runParts(t, pc, reg, 1, "single")[0]

			// several upstream files per part, and raw files split over parts
			src, err := engine.LoadStageOutput(filepath.Join(work, "src"))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(src.Shards(InputKind)); n < 6 {
				t.Fatalf("source wrote %d files, want several per part", n)
			}

			// the same rows, in the same order, as the single-process stage
			gotRows, gotSamples := readPackedSamples(t, filepath.Join(work, "write"), tc.layout)
			wantRows, _ := readPackedSamples(t, filepath.Join(work, "single"), tc.layout)
			if len(gotRows) == 0 || !reflect.DeepEqual(gotRows, wantRows) {
				t.Fatalf("sharded rows differ from single-process rows:\n got %v\nwant %v", gotRows, wantRows)
			}
			var parts int
			for _, s := range writeSums {
				if s.Stages[0].Rows[KindPacked] > 0 {
					parts++
				}
			}
			if parts != 3 {
				t.Fatalf("%d of 3 writer parts wrote rows", parts)
			}

			// every kept sample exactly once, tokens and mask as rendered alone
			tok, err := tokenizer.Load("cl100k_base")
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRenderer(tok, DefaultTemplate())
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]*Trajectory{}
			all := append(sourceTrajectories(), raw...)
			var wantKept, wantDropped []string
			for i := range all {
				tr := &all[i]
				if _, dup := byID[tr.ID]; dup {
					continue
				}
				ids, _, err := r.Render(tr)
				if err != nil {
					continue
				}
				byID[tr.ID] = tr
				if len(ids) > 1024 {
					wantDropped = append(wantDropped, tr.ID)
				} else {
					wantKept = append(wantKept, tr.ID)
				}
			}
			var gotKept []string
			for _, u := range gotSamples {
				gotKept = append(gotKept, u.id)
				ids, mask, err := r.Render(byID[u.id])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, u.ids) || !slices.Equal(mask, u.mask) {
					t.Fatalf("sample %s: packed tokens/mask differ from rendering it alone", u.id)
				}
			}
			slices.Sort(gotKept)
			slices.Sort(wantKept)
			if !slices.Equal(gotKept, wantKept) {
				t.Fatalf("packed samples %v\nwant %v", gotKept, wantKept)
			}

			// dropped samples accounted, as the single stage reports them
			slices.Sort(wantDropped)
			gotDropped := readIDs(t, filepath.Join(work, "plan"), KindDropped, func(d DroppedRow) string { return d.ID })
			singleDropped := readIDs(t, filepath.Join(work, "single"), KindDropped, func(d DroppedRow) string { return d.ID })
			if len(wantDropped) == 0 || !slices.Equal(gotDropped, wantDropped) || !slices.Equal(gotDropped, singleDropped) {
				t.Fatalf("dropped %v, want %v, single stage %v", gotDropped, wantDropped, singleDropped)
			}
			// rejections: 1 missing assistant + 2 broken JSONL lines in the
			// parts, 1 duplicate id in the plan
			lengthsRej := readIDs(t, filepath.Join(work, "lengths"), KindRejections, func(r engine.Rejection) string { return r.Reason })
			planRej := readIDs(t, filepath.Join(work, "plan"), KindRejections, func(r engine.Rejection) string { return r.Reason })
			singleRej := readIDs(t, filepath.Join(work, "single"), KindRejections, func(r engine.Rejection) string { return r.Reason })
			gotRej := append(lengthsRej, planRej...)
			slices.Sort(gotRej)
			if !slices.Equal(gotRej, singleRej) || !slices.Equal(planRej, []string{"duplicate_id"}) {
				t.Fatalf("rejections: parts %v + plan %v, single stage %v", lengthsRej, planRej, singleRej)
			}

			// counts and fill equal the single stage's
			pcnt, scnt := planSum.Stages[0].Counts, singleSum.Stages[0].Counts
			for _, k := range []string{"samples_in", "rejected", "packed", "dropped_too_long", "rows", "tokens_packed", "fill_ppm"} {
				if pcnt[k] != scnt[k] {
					t.Fatalf("plan count %s = %d, single stage %d", k, pcnt[k], scnt[k])
				}
			}
			if pcnt["fill_ppm"] <= 0 || pcnt["rows"] != int64(len(gotRows)) {
				t.Fatalf("plan counts %v, %d rows written", pcnt, len(gotRows))
			}
			var pm Manifest
			data, err := os.ReadFile(filepath.Join(work, "plan", PlanFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &pm); err != nil || pm.FillRatio <= 0 || len(pm.Groups) != 3 {
				t.Fatalf("plan summary: %v fill %v groups %d", err, pm.FillRatio, len(pm.Groups))
			}

			// a re-run of a writer part is skipped (its fingerprint holds)
			again := runParts(t, pc, reg, 3, "write")
			if again[1].Stages[0].Status != "skipped" {
				t.Fatalf("re-run of write part 1: %s", again[1].Stages[0].Status)
			}
		})
	}
}

func TestShardedPackingConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	writeRawFiles(t, dir)
	reg := shardRegistry()
	pc := loadShardPipeline(t, dir, LayoutMegatron, AlgoBestFitDecreasing, "", reg)
	runParts(t, pc, reg, 2, "src", "lengths")
	runParts(t, pc, reg, 1, "plan")
	for _, tc := range []struct{ cfg, want string }{
		{"{tokenizer: o200k_base, seq_len: 1024, layout: megatron, algorithm: bfd, seed: 11, plan: plan}", "tokenizer sha256"},
		{`{tokenizer: cl100k_base, seq_len: 1024, layout: megatron, algorithm: bfd, seed: 11, template: {header: {user: "U:", assistant: "A:", system: "S:", environment: "E:"}, train_roles: [assistant]}, plan: plan}`, "template hash"},
		{"{tokenizer: cl100k_base, seq_len: 1024, layout: megatron, algorithm: bfd, seed: 12, plan: plan}", "seed"},
	} {
		pc := loadShardPipeline(t, dir, LayoutMegatron, AlgoBestFitDecreasing, tc.cfg, reg)
		_, err := (&engine.Runner{Registry: reg}).Run(context.Background(), pc,
			engine.RunOptions{Shard: engine.Shard{Index: 0, Count: 2}, Only: []string{"write"}, Writer: testWriterOpts, Log: quiet})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("writer config %s: got %v, want a config error naming %q", tc.cfg, err, tc.want)
		}
	}
	// and a plan over lengths made with another seq_len
	pc = loadShardPipeline(t, dir, LayoutMegatron, AlgoBestFitDecreasing, "", reg)
	text, _ := os.ReadFile(filepath.Join(dir, "pipeline.yaml"))
	text = []byte(strings.Replace(string(text), "from: [lengths]\n    config: {tokenizer: cl100k_base, seq_len: 1024", "from: [lengths]\n    config: {tokenizer: cl100k_base, seq_len: 2048", 1))
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	pc, err := engine.LoadPipeline(filepath.Join(dir, "pipeline.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&engine.Runner{Registry: reg}).Run(context.Background(), pc, engine.RunOptions{Only: []string{"plan"}, Writer: testWriterOpts, Log: quiet})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "seq_len") {
		t.Fatalf("plan over lengths of another seq_len: %v", err)
	}
}
