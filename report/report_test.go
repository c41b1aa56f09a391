package report

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/internal/testenv"
	"github.com/crucible-data/crucible/ops/filter"
	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/rtl"

	_ "github.com/duckdb/duckdb-go/v2" // an independent reader of the history table
)

// testStages registers two small stages around the real ones:
//
//	evolve: passes every item on and adds one "rename_ports" variant each
//	judge:  writes a verdict per item (pass, fail at compile, unjudged with
//	        an infrastructure fault), keeps passing items and writes their
//	        trajectories for the real pack stage; the others become
//	        rejections with gate "verdict".
func testStages(reg *engine.Registry) {
	reg.Register("evolve", func(c engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			items, err := engine.ReadInputs[engine.Item](sc, "items")
			if err != nil {
				return err
			}
			w, err := engine.StageWriter[engine.Item](sc, "items")
			if err != nil {
				return err
			}
			for i, it := range items {
				it.Difficulty = float64(i%7) / 7
				v := it
				v.ItemID, v.ParentID, v.Route, v.Operator = it.ItemID+"-v", it.ItemID, engine.RouteContractMutation, "rename_ports"
				v.Instruction += strings.Repeat(" Rename every port.", i%5)
				if err := w.Write(it, v); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test evolution")
	reg.Register("judge", func(c engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			items, err := engine.ReadInputs[engine.Item](sc, "items")
			if err != nil {
				return err
			}
			iw, _ := engine.StageWriter[engine.Item](sc, "items")
			ew, _ := engine.StageWriter[engine.Evidence](sc, "evidence")
			rw, _ := engine.StageWriter[engine.Rejection](sc, "rejections")
			tw, _ := engine.StageWriter[pack.Trajectory](sc, pack.InputKind)
			for i, it := range items {
				ev := engine.Evidence{ItemID: it.ItemID, CandidateID: "ref", Status: engine.StatusPass}
				ev.Provenance.Verifier = "rtl/" + engine.VerifierDifferential
				ev.Provenance.Toolchain = []engine.Tool{{Name: "iverilog", Version: "11.0"}}
				switch {
				case i%5 == 3:
					ev.Status, ev.FailureStage = engine.StatusFail, engine.StageCompile
				case i%11 == 4:
					ev.Status, ev.FailureStage = engine.StatusUnjudged, engine.StageToolchainMissing
				case i%13 == 6:
					ev.Provenance.Verifier = "kernel/cpu"
					ev.Provenance.Toolchain = []engine.Tool{{Name: "gcc", Version: "12.2"}}
				}
				if err := ew.Write(ev); err != nil {
					return err
				}
				if ev.Status != engine.StatusPass {
					if err := rw.Write(engine.Rejection{ItemID: it.ItemID, Stage: sc.Name, Gate: "verdict", Reason: ev.FailureStage}); err != nil {
						return err
					}
					continue
				}
				if err := iw.Write(it); err != nil {
					return err
				}
				// Every fourth trajectory is long enough to be dropped by seq_len.
				body := it.Reference
				if i%4 == 0 {
					body = strings.Repeat(body, 8)
				}
				tr := pack.Trajectory{ID: it.ItemID, Domain: it.Domain, Family: it.Family,
					Messages: []pack.Message{{Role: "user", Content: it.Instruction}, {Role: "assistant", Content: body}}}
				if err := tw.Write(tr); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test verdicts")
}

const testPipeline = `name: report-test
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
  - name: evolve
    type: evolve
    from: [rtl]
  - name: judge
    type: judge
    from: [evolve]
  - name: pack
    type: pack
    from: [judge]
    config: {tokenizer: cl100k_base, seq_len: 2048, layout: %s}
`

// buildPipeline runs the test pipeline on the bundled seeds in a temp dir
// and returns its work dir and run summary.
func buildPipeline(t *testing.T, layout string) (string, *engine.RunSummary) {
	t.Helper()
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(testPipeline, filepath.Join(root, "examples", "seeds"), layout)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	pack.RegisterStages(reg)
	testStages(reg)
	cfg, err := engine.LoadPipeline(cfgPath, reg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ResolvedWorkDir(), sum
}

func readKind[T any](t *testing.T, work, stage, kind string) []T {
	t.Helper()
	out, err := engine.LoadStageOutput(filepath.Join(work, stage))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := engine.ReadAll[T](out.Shards(kind)...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestReportMatchesShards(t *testing.T) {
	work, sum := buildPipeline(t, "megatron")
	r, outs, err := Generate(context.Background(), work, sum, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}

	// report.json on disk is the report returned.
	var disk Report
	data, err := os.ReadFile(outs.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &disk); err != nil {
		t.Fatal(err)
	}
	if len(disk.Funnel) != 5 || disk.ConfigHash != r.ConfigHash {
		t.Fatalf("report.json differs from the report: %d funnel steps, hash %s vs %s", len(disk.Funnel), disk.ConfigHash, r.ConfigHash)
	}

	// Funnel: items (or packed samples) per stage, equal to the shards' rows.
	stages := []string{"ingest", "rtl", "evolve", "judge", "pack"}
	for i, name := range stages {
		f := r.Funnel[i]
		if f.Stage != name {
			t.Fatalf("funnel[%d] = %s, want %s (pipeline order)", i, f.Stage, name)
		}
		rej := int64(len(readKind[engine.Rejection](t, work, name, "rejections")))
		if f.Rejected != rej {
			t.Errorf("%s: rejected %d, shards hold %d", name, f.Rejected, rej)
		}
		if name == "pack" {
			continue
		}
		if n := int64(len(readKind[engine.Item](t, work, name, "items"))); f.Rows != n || f.Kind != "items" {
			t.Errorf("%s: funnel %d %s, shards hold %d items", name, f.Rows, f.Kind, n)
		}
	}
	evolved := readKind[engine.Item](t, work, "evolve", "items")
	if r.Funnel[2].Rows != 2*r.Funnel[1].Rows || r.Funnel[1].Rows < 20 {
		t.Fatalf("funnel rtl=%d evolve=%d: evolve doubles the rtl seeds", r.Funnel[1].Rows, r.Funnel[2].Rows)
	}

	// Rejections grouped by stage, gate, reason.
	want := map[string]int64{}
	for _, name := range stages {
		for _, x := range readKind[engine.Rejection](t, work, name, "rejections") {
			want[name+"|"+orDash(x.Gate)+"|"+orDash(x.Reason)]++
		}
	}
	got := map[string]int64{}
	for _, x := range r.Rejections {
		got[x.Stage+"|"+x.Gate+"|"+x.Reason] = x.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || got["judge|verdict|compile"] == 0 || got["rtl|"+rtlGate(t, work)+"|filtered"] == 0 {
		t.Fatalf("rejections:\n got %v\nwant %v", got, want)
	}

	// Coverage of the last items stage (judge).
	kept := readKind[engine.Item](t, work, "judge", "items")
	if r.Coverage == nil || r.Coverage.Stage != "judge" || r.Coverage.Items != int64(len(kept)) {
		t.Fatalf("coverage: %+v, judge kept %d", r.Coverage, len(kept))
	}
	fam, route := map[string]int64{}, map[string]int64{}
	for _, it := range kept {
		fam[it.Domain+"/"+it.Family]++
		route[it.Route]++
	}
	checkShares(t, "family", r.Coverage.Family, fam, int64(len(kept)))
	checkShares(t, "route", r.Coverage.Route, route, int64(len(kept)))
	var diffTotal int64
	for _, s := range r.Coverage.Difficulty {
		diffTotal += s.Count
	}
	if diffTotal != int64(len(kept)) || len(r.Coverage.Difficulty) != 10 {
		t.Errorf("difficulty buckets %v do not cover %d items", r.Coverage.Difficulty, len(kept))
	}

	// Operator yield: rename_ports first appears in evolve, kept in judge.
	var renamed int64
	for _, it := range evolved {
		if it.Operator == "rename_ports" {
			renamed++
		}
	}
	var keptRenamed int64
	for _, it := range kept {
		if it.Operator == "rename_ports" {
			keptRenamed++
		}
	}
	op := findOp(r, "rename_ports")
	if op == nil || op.FirstStage != "evolve" || op.Produced != renamed || op.Kept != keptRenamed || findOp(r, "(seed)") == nil {
		t.Fatalf("operators %+v: want rename_ports %d produced in evolve, %d kept", r.Operators, renamed, keptRenamed)
	}

	// Verdicts per verifier, infrastructure faults apart.
	evs := readKind[engine.Evidence](t, work, "judge", "evidence")
	type vc struct{ total, pass, fail, unj, infra, compile int64 }
	byVer := map[string]*vc{}
	for _, e := range evs {
		c := byVer[e.Provenance.Verifier]
		if c == nil {
			c = &vc{}
			byVer[e.Provenance.Verifier] = c
		}
		c.total++
		switch e.Status {
		case engine.StatusPass:
			c.pass++
		case engine.StatusFail:
			c.fail++
		default:
			c.unj++
		}
		if engine.IsInfraStage(e.FailureStage) {
			c.infra++
		}
		if e.FailureStage == engine.StageCompile {
			c.compile++
		}
	}
	if len(r.Verdicts) != len(byVer) || len(byVer) != 2 {
		t.Fatalf("verdicts for %d verifiers, want %d: %+v", len(r.Verdicts), len(byVer), r.Verdicts)
	}
	for _, v := range r.Verdicts {
		c := byVer[v.Verifier]
		if v.Stage != "judge" || v.Total != c.total || v.Pass != c.pass || v.Fail != c.fail || v.Unjudged != c.unj ||
			v.InfraTotal != c.infra || v.InfraFaults[engine.StageToolchainMissing] != c.infra || v.CandidateFailures[engine.StageCompile] != c.compile {
			t.Errorf("verifier %s: report %+v, shards %+v", v.Verifier, v, *c)
		}
		if _, bad := v.CandidateFailures[engine.StageToolchainMissing]; bad {
			t.Errorf("infra fault counted as a candidate failure: %+v", v)
		}
	}
	if len(r.Toolchain) != 2 || r.Toolchain[0].Name != "gcc" || r.Toolchain[1].Name != "iverilog" || r.Toolchain[1].Version != "11.0" {
		t.Errorf("toolchain %+v", r.Toolchain)
	}

	// Lengths of the judge items.
	if r.Lengths == nil || r.Lengths.Instruction.N != int64(len(kept)) {
		t.Fatalf("lengths %+v", r.Lengths)
	}
	maxInstr := 0
	for _, it := range kept {
		maxInstr = max(maxInstr, len(it.Instruction))
	}
	if r.Lengths.Instruction.Max != float64(maxInstr) {
		t.Errorf("instruction max %v, want %d", r.Lengths.Instruction.Max, maxInstr)
	}

	// Packing: rows, samples and tokens from the packed and dropped shards.
	packed := readKind[pack.MegatronRow](t, work, "pack", pack.KindPacked)
	dropped := readKind[pack.DroppedRow](t, work, "pack", pack.KindDropped)
	var samples, tokens int64
	for _, row := range packed {
		samples += int64(len(row.DocIDs))
		tokens += int64(len(row.InputIDs))
	}
	p := r.Packing
	if p == nil || p.Rows != int64(len(packed)) || p.Packed != samples || p.TokensPacked != tokens || p.Dropped != int64(len(dropped)) ||
		p.Before.N != samples+int64(len(dropped)) || p.After.N != int64(len(packed)) || p.SeqLen != 2048 || p.Layout != "megatron" {
		t.Fatalf("packing %+v; shards: %d rows, %d samples, %d tokens, %d dropped", p, len(packed), samples, tokens, len(dropped))
	}
	if len(dropped) == 0 || p.After.Max > 2048 || p.Before.Max <= 2048 {
		t.Fatalf("test data should make the length cap drop samples: %+v", p)
	}
	if fill := float64(tokens) / float64(int64(len(packed))*2048); p.FillRatio != fill {
		t.Errorf("fill %v, want %v", p.FillRatio, fill)
	}
	if len(p.Drops) != 1 || p.Drops[0].Domain != "rtl" || p.Drops[0].Dropped != int64(len(dropped)) || p.Drops[0].Samples != samples+int64(len(dropped)) {
		t.Errorf("drops %+v", p.Drops)
	}

	// Stages: time from the run summary, hashes from the manifests.
	for i, s := range r.Stages {
		m, err := engine.ReadManifest(filepath.Join(work, s.Name, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if s.ConfigHash != m.ConfigHash || s.Status != "ran" || s.Seconds != sum.Stages[i].Seconds || s.Seconds <= 0 {
			t.Errorf("stage %s: %+v vs manifest hash %s, summary %+v", s.Name, s, m.ConfigHash, sum.Stages[i])
		}
	}
	if r.Stages[1].InputRows != r.Stages[0].Rows["items"] {
		t.Errorf("filter input rows %d, ingest wrote %d items", r.Stages[1].InputRows, r.Stages[0].Rows["items"])
	}

	// The page has every section, its numbers, and inline plots only.
	page, err := os.ReadFile(outs.HTML)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, id := range []string{"funnel", "rejections", "operators", "coverage", "verdicts", "lengths", "packing", "stages", "toolchain", "config"} {
		if !strings.Contains(html, `<section id="`+id+`">`) {
			t.Errorf("page lacks section %s", id)
		}
	}
	for _, fig := range []string{"Funnel", "Rejection reasons", "Coverage by family", "Difficulty", "Verdicts", "Instruction lengths", "Reference lengths", "Tokens before packing", "Tokens after packing", "Stage time"} {
		if !strings.Contains(html, `alt="`+fig+`" width="672" src="data:image/png;base64,`) {
			t.Errorf("page lacks the inline %s plot", fig)
		}
	}
	for _, n := range []int64{r.Funnel[2].Rows, p.TokensPacked, r.Verdicts[1].Total} {
		if !strings.Contains(html, fmt.Sprintf(">%d<", n)) {
			t.Errorf("page lacks the number %d", n)
		}
	}
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") || strings.Contains(html, "<script") {
		t.Error("page refers to the network or runs scripts")
	}

	// History: one row with the run's numbers.
	hist, err := ReadHistory(filepath.Dir(outs.History))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].FinalItems != int64(len(kept)) || hist[0].PackedRows != int64(len(packed)) ||
		hist[0].Seeds != r.Funnel[0].Rows || len(hist[0].Stages) != 5 || hist[0].InfraFaults != byVer["rtl/differential"].infra {
		t.Fatalf("history %+v", hist)
	}
	// Regenerating the same run replaces its row; another run adds one.
	if _, _, err := Generate(context.Background(), work, nil, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if hist, _ = ReadHistory(filepath.Dir(outs.History)); len(hist) != 1 {
		t.Fatalf("regenerated report added a duplicate history row: %d rows", len(hist))
	}
}

func rtlGate(t *testing.T, work string) string {
	rows := readKind[engine.Rejection](t, work, "rtl", "rejections")
	if len(rows) == 0 {
		t.Fatal("filter rejected nothing; the seeds should include kernels")
	}
	return orDash(rows[0].Gate)
}

func checkShares(t *testing.T, dim string, got []Share, want map[string]int64, total int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, want %d (%v)", dim, len(got), len(want), want)
	}
	var sum float64
	for _, s := range got {
		if s.Count != want[s.Key] || s.Share != float64(s.Count)/float64(total) {
			t.Errorf("%s %s: %d (%v), want %d", dim, s.Key, s.Count, s.Share, want[s.Key])
		}
		sum += s.Share
	}
	if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Count > got[j].Count }) || sum < 0.999 || sum > 1.001 {
		t.Errorf("%s shares unsorted or not summing to 1: %v", dim, got)
	}
}

func findOp(r *Report, name string) *OperatorYield {
	for i := range r.Operators {
		if r.Operators[i].Operator == name {
			return &r.Operators[i]
		}
	}
	return nil
}

func TestReportTRLLayout(t *testing.T) {
	work, sum := buildPipeline(t, "trl")
	r, err := Build(context.Background(), work, sum)
	if err != nil {
		t.Fatal(err)
	}
	packed := readKind[pack.TRLRow](t, work, "pack", pack.KindPacked)
	var samples, tokens int64
	var maxSample int32
	for _, row := range packed {
		samples += int64(len(row.SeqLengths))
		tokens += int64(len(row.InputIDs))
		for _, l := range row.SeqLengths {
			maxSample = max(maxSample, l)
		}
	}
	p := r.Packing
	if p == nil || p.Layout != "trl" || p.Rows != int64(len(packed)) || p.Packed != samples || p.TokensPacked != tokens || p.After.Max > 2048 {
		t.Fatalf("packing %+v; shards: %d rows, %d samples, %d tokens", p, len(packed), samples, tokens)
	}
	dropped := readKind[pack.DroppedRow](t, work, "pack", pack.KindDropped)
	if p.Before.N != samples+int64(len(dropped)) {
		t.Errorf("before-packing lengths: %d, want %d kept + %d dropped", p.Before.N, samples, len(dropped))
	}
}

// A pipeline without verifiers or packing still gets every section, with
// notes saying what is absent; a re-run of one stage (--stage) still
// reports the whole pipeline in order.
func TestReportPartialPipeline(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "p.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`name: partial
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: kernels
    type: filter
    from: [ingest]
    config: {domains: [kernel]}
`, filepath.Join(root, "examples", "seeds"))), 0o644)
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	cfg, err := engine.LoadPipeline(cfgPath, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{Only: []string{"kernels"}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	work := cfg.ResolvedWorkDir()
	r, outs, err := Generate(context.Background(), work, sum, Config{NoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stages) != 2 || r.Stages[0].Name != "ingest" || r.Stages[0].Status != "committed" || r.Stages[1].Status != "ran" {
		t.Fatalf("stages %+v", r.Stages)
	}
	kept := readKind[engine.Item](t, work, "kernels", "items")
	if r.Coverage == nil || r.Coverage.Items != int64(len(kept)) || len(kept) == 0 || r.Coverage.Domain[0].Key != "kernel" {
		t.Fatalf("coverage %+v, %d kernel items", r.Coverage, len(kept))
	}
	if r.Packing != nil || len(r.Verdicts) != 0 || outs.History != "" {
		t.Fatalf("absent stages produced figures: %+v %+v %q", r.Packing, r.Verdicts, outs.History)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"no stage wrote evidence", "no stage wrote packed rows", "stage ingest has committed output but is not in this run's summary"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	page, _ := os.ReadFile(outs.HTML)
	for _, want := range []string{`<section id="packing">`, "no stage wrote packed rows", "no evidence rows", `<section id="notes">`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "history")); !os.IsNotExist(err) {
		t.Errorf("no_history still wrote a history folder: %v", err)
	}

	// Load uses report.json while it is current, and rebuilds the figures
	// once a later build has finished in the work dir.
	if got, err := Load(context.Background(), work); err != nil || !got.GeneratedAt.Equal(r.GeneratedAt) {
		t.Fatalf("current report.json not used: %v", err)
	}
	later := *sum
	later.Finished = sum.Finished.Add(time.Hour)
	data, _ := json.Marshal(&later)
	if err := os.WriteFile(filepath.Join(work, "run-summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(context.Background(), work); err != nil || !got.Finished.Equal(later.Finished) {
		t.Fatalf("stale report.json used: %v", err)
	}
}

func TestReportBadInputs(t *testing.T) {
	ctx := context.Background()
	if _, err := Build(ctx, t.TempDir(), nil); !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), "run-summary.json") {
		t.Errorf("empty dir: %v", err)
	}
	work, sum := buildPipeline(t, "megatron")
	out, err := engine.LoadStageOutput(filepath.Join(work, "rtl"))
	if err != nil {
		t.Fatal(err)
	}
	bad := out.Shards("rejections")[0]
	if err := os.WriteFile(bad, []byte("PAR1 not really parquet PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = Generate(ctx, work, sum, Config{NoHistory: true})
	if !errors.Is(err, engine.ErrInput) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt shard: %v (want ErrInput naming %s)", err, bad)
	}
	if err := (Config{NoHistory: true, HistoryDir: "h"}).Validate(); !errors.Is(err, engine.ErrConfig) {
		t.Errorf("contradictory config accepted: %v", err)
	}
}

// TestReportRealVerifier runs the real RTL verifier (Icarus) on the bundled
// counter seeds: verdicts and toolchain versions come from real evidence.
func TestReportRealVerifier(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "p.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`name: verify
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [%s]
    config: {preset: taskdir}
  - name: counters
    type: filter
    from: [ingest]
    config: {domains: [rtl], families: [counter]}
  - name: verify
    type: verify_rtl
    from: [counters]
    config: {workers: 2}
`, filepath.Join(root, "examples", "seeds"))), 0o644)
	reg := engine.NewRegistry()
	ingest.RegisterStages(reg)
	filter.RegisterStages(reg)
	rtl.RegisterStages(reg)
	cfg, err := engine.LoadPipeline(cfgPath, reg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&engine.Runner{Registry: reg}).Run(context.Background(), cfg, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := cfg.ResolvedWorkDir()
	r, outs, err := Generate(context.Background(), work, sum, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	evs := readKind[engine.Evidence](t, work, "verify", "evidence")
	if len(evs) == 0 {
		t.Fatal("verify_rtl wrote no evidence")
	}
	var pass, infra int64
	tools := map[string]string{}
	for _, e := range evs {
		if e.Status == engine.StatusPass {
			pass++
		}
		if engine.IsInfraStage(e.FailureStage) {
			infra++
		}
		for _, tl := range e.Provenance.Toolchain {
			tools[tl.Name] = tl.Version
		}
	}
	var total, rpass, rinfra int64
	for _, v := range r.Verdicts {
		total, rpass, rinfra = total+v.Total, rpass+v.Pass, rinfra+v.InfraTotal
	}
	if total != int64(len(evs)) || rpass != pass || rinfra != infra {
		t.Fatalf("verdicts %+v; evidence: %d rows, %d pass, %d infra", r.Verdicts, len(evs), pass, infra)
	}
	if len(r.Toolchain) != len(tools) || len(tools) == 0 {
		t.Fatalf("toolchain %+v, evidence names %v", r.Toolchain, tools)
	}
	for _, tv := range r.Toolchain {
		if tools[tv.Name] != tv.Version {
			t.Errorf("tool %s: report %q, evidence %q", tv.Name, tv.Version, tools[tv.Name])
		}
	}
	t.Logf("verdicts %+v toolchain %+v", r.Verdicts, r.Toolchain)
	// verify_rtl audits every seed's harness; the bundled counters are strong.
	if r.Strength == nil || r.Strength.Tasks != int64(len(evs)) || r.Strength.Weak != 0 || len(r.Strength.Families) != 1 {
		t.Errorf("harness strength %+v, want %d strong rtl/counter tasks", r.Strength, len(evs))
	}

	// Any SQL engine reads the history folder as one table.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var runs, verdicts, stages int64
	q := fmt.Sprintf("SELECT count(*), sum(verdicts), sum(len(stages)) FROM read_parquet('%s/*.parquet')", filepath.Dir(outs.History))
	if err := db.QueryRow(q).Scan(&runs, &verdicts, &stages); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || verdicts != int64(len(evs)) || stages != 3 {
		t.Fatalf("DuckDB on the history: %d runs, %d verdicts, %d stages", runs, verdicts, stages)
	}
}
