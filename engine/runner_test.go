package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type numRow struct {
	N    int64  `arrow:"n"`
	Text string `arrow:"text"`
}

// testRegistry has a source stage that emits `count` rows per input file
// line and a doubling stage, counting how often each ran.
func testRegistry(runs map[string]int) *Registry {
	reg := NewRegistry()
	reg.Register("source", func(c StageConfig) (Stage, error) {
		var cfg struct {
			Count int `yaml:"count"`
		}
		if err := c.Decode(&cfg); err != nil {
			return nil, err
		}
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			runs[sc.Name]++
			w, err := StageWriter[numRow](sc, "nums")
			if err != nil {
				return err
			}
			for _, f := range sc.Files {
				var fi int
				fmt.Sscanf(filepath.Base(f), "in%d.txt", &fi)
				data, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				for i := 0; i < cfg.Count; i++ {
					if err := w.Write(numRow{N: int64(fi*1000 + i), Text: strings.TrimSpace(string(data))}); err != nil {
						return err
					}
				}
			}
			sc.Count("emitted", int64(cfg.Count*len(sc.Files)))
			return nil
		}), nil
	}, "test source")
	reg.Register("double", func(c StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			runs[sc.Name]++
			rows, err := ReadInputs[numRow](sc, "nums")
			if err != nil {
				return err
			}
			w, err := StageWriter[numRow](sc, "nums")
			if err != nil {
				return err
			}
			for _, r := range rows {
				r.N *= 2
				if err := w.Write(r); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test double")
	reg.Register("fail", func(c StageConfig) (Stage, error) {
		return StageFunc(func(ctx context.Context, sc *StageContext) error {
			w, _ := StageWriter[numRow](sc, "nums")
			_ = w.Write(numRow{N: 1})
			return errors.New("boom")
		}), nil
	}, "test failure")
	return reg
}

func writePipeline(t *testing.T, dir, count string, extra string) string {
	t.Helper()
	for i := 0; i < 4; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("in%d.txt", i)), []byte(fmt.Sprintf("file %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `name: t
work_dir: work
stages:
  - name: src
    type: source
    inputs: [in0.txt, in1.txt, in2.txt, in3.txt]
    config: {count: ` + count + `}
  - name: dbl
    type: double
    from: [src]
` + extra
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runPipeline(t *testing.T, path string, reg *Registry, opts RunOptions) (*RunSummary, error) {
	t.Helper()
	cfg, err := LoadPipeline(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	return (&Runner{Registry: reg}).Run(context.Background(), cfg, opts)
}

func statuses(s *RunSummary) string {
	var out []string
	for _, st := range s.Stages {
		out = append(out, st.Name+"="+st.Status)
	}
	return strings.Join(out, ",")
}

func TestRunnerSkipsCurrentAndRedoesStale(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]int{}
	reg := testRegistry(runs)
	p := writePipeline(t, dir, "10", "")
	steps := []struct {
		name   string
		mutate func()
		want   string
	}{
		{"first run", func() {}, "src=ran,dbl=ran"},
		{"unchanged", func() {}, "src=skipped,dbl=skipped"},
		{"input changed", func() { os.WriteFile(filepath.Join(dir, "in2.txt"), []byte("changed"), 0o644) }, "src=ran,dbl=ran"},
		{"config changed", func() { writePipelineKeepInputs(t, dir, p, "11") }, "src=ran,dbl=ran"},
		{"downstream shard deleted", func() {
			out, _ := LoadStageOutput(filepath.Join(dir, "work", "dbl"))
			os.Remove(out.Shards("nums")[0])
		}, "src=skipped,dbl=ran"},
		{"downstream manifest deleted", func() { os.Remove(filepath.Join(dir, "work", "dbl", "manifest.json")) }, "src=skipped,dbl=ran"},
	}
	for _, s := range steps {
		s.mutate()
		sum, err := runPipeline(t, p, reg, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := statuses(sum); got != s.want {
			t.Fatalf("%s: got %s, want %s", s.name, got, s.want)
		}
	}
	out, err := LoadStageOutput(filepath.Join(dir, "work", "dbl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Rows("nums"); got != 44 {
		t.Fatalf("dbl rows = %d, want 44", got)
	}
}

func writePipelineKeepInputs(t *testing.T, dir, p, count string) {
	data, _ := os.ReadFile(p)
	s := strings.Replace(string(data), "count: 10", "count: "+count, 1)
	os.WriteFile(p, []byte(s), 0o644)
}

func TestRunnerFailedStageLeavesNoManifest(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(map[string]int{})
	p := writePipeline(t, dir, "3", "  - name: bad\n    type: fail\n    from: [dbl]\n")
	if _, err := runPipeline(t, p, reg, RunOptions{}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("want stage error, got %v", err)
	}
	bad := filepath.Join(dir, "work", "bad")
	if _, err := LoadStageOutput(bad); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("failed stage must have no manifest, got %v", err)
	}
	ents, _ := os.ReadDir(bad)
	for _, e := range ents {
		t.Errorf("failed stage left %s", e.Name())
	}
}

// TestShardedRunsCoverTheWhole checks that running every i/N part gives the
// same rows as one unsharded run, each row exactly once.
func TestShardedRunsCoverTheWhole(t *testing.T) {
	collect := func(dir string) []int64 {
		out, err := LoadStageOutput(filepath.Join(dir, "work", "dbl"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ReadAll[numRow](out.Shards("nums")...)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int64
		for _, r := range rows {
			ns = append(ns, r.N)
		}
		sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
		return ns
	}
	whole := t.TempDir()
	reg := testRegistry(map[string]int{})
	if _, err := runPipeline(t, writePipeline(t, whole, "5", ""), reg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3, 4} {
		parts := t.TempDir()
		p := writePipeline(t, parts, "5", "")
		// Before every part is done, downstream readers see an incomplete stage.
		for i := 0; i < n; i++ {
			if _, err := runPipeline(t, p, reg, RunOptions{Shard: Shard{i, n}}); err != nil {
				t.Fatal(err)
			}
			_, err := LoadStageOutput(filepath.Join(parts, "work", "dbl"))
			if i < n-1 && !errors.Is(err, ErrIncomplete) {
				t.Fatalf("N=%d after part %d: want incomplete, got %v", n, i, err)
			}
		}
		if got, want := collect(parts), collect(whole); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("N=%d: sharded rows %v, whole %v", n, got, want)
		}
	}
}

func TestPipelineValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`name: x
stages:
  - name: Bad Name
    type: nosuch
  - name: b
    type: source
    from: [zzz]
    inputs: [missing.txt]
`), 0o644)
	_, err := LoadPipeline(p, testRegistry(map[string]int{}))
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("want ErrConfig, got %v", err)
	}
	for _, want := range []string{"work_dir", "name must match", "unknown stage type", "from \"zzz\"", "missing.txt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in  string
		ok  bool
		out Shard
	}{{"", true, Shard{0, 1}}, {"0/4", true, Shard{0, 4}}, {"3/4", true, Shard{3, 4}}, {"4/4", false, Shard{}}, {"-1/2", false, Shard{}}, {"x", false, Shard{}}, {"1/0", false, Shard{}}} {
		got, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.out) {
			t.Errorf("ParseShard(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// TestStageConfigAliases: a config block may be a YAML alias of another
// stage's block (`config: *shared`), as users write to keep stages in step.
func TestStageConfigAliases(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry(map[string]int{})
	p := writePipeline(t, dir, "3", "")
	data, _ := os.ReadFile(p)
	s := strings.Replace(string(data), "config: {count: 3}", "config: &shared {count: 3}", 1)
	s += "  - name: src2\n    type: source\n    inputs: [in0.txt]\n    config: *shared\n"
	os.WriteFile(p, []byte(s), 0o644)
	sum, err := runPipeline(t, p, reg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Stages[2].Counts["emitted"]; got != 3 {
		t.Fatalf("aliased config decoded to count=%d, want 3", got)
	}
}
