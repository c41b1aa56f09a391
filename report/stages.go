package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// stageOut is one committed stage found in the work directory.
type stageOut struct {
	name string
	out  *engine.StageOutput
	from []string // upstream stages, from the manifest's input refs
}

// typ is the stage's type from its manifest.
func (so stageOut) typ() string {
	if len(so.out.Parts) == 0 {
		return ""
	}
	return so.out.Parts[0].Type
}

// LoadSummary reads the run summary of a work directory: run-summary.json,
// or, for a sharded build, every run-summary-IIII-of-NNNN.json merged (stage
// seconds summed, the earliest start and latest finish).
func LoadSummary(workDir string) (*engine.RunSummary, error) {
	paths := []string{filepath.Join(workDir, "run-summary.json")}
	if _, err := os.Stat(paths[0]); err != nil {
		paths, _ = filepath.Glob(filepath.Join(workDir, "run-summary-*-of-*.json"))
		sort.Strings(paths)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no run-summary.json in %s (is it a build work directory?)", engine.ErrInput, workDir)
	}
	var merged *engine.RunSummary
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
		}
		var s engine.RunSummary
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("%w: run summary %s: %v", engine.ErrInput, p, err)
		}
		if merged == nil {
			merged = &s
			if len(paths) > 1 {
				merged.Shard = ""
			}
			continue
		}
		if s.Started.Before(merged.Started) {
			merged.Started = s.Started
		}
		if s.Finished.After(merged.Finished) {
			merged.Finished = s.Finished
		}
		for _, st := range s.Stages {
			found := false
			for i := range merged.Stages {
				if merged.Stages[i].Name == st.Name {
					merged.Stages[i].Seconds += st.Seconds
					found = true
				}
			}
			if !found {
				merged.Stages = append(merged.Stages, st)
			}
		}
	}
	return merged, nil
}

// discoverStages finds every committed stage under workDir and orders them
// upstream-first. A build run with --stage has only some stages in its
// summary, but the report covers the whole pipeline, so the order comes from
// the manifests' input references, ties broken by the summary's order (the
// pipeline's) and then by name.
func discoverStages(workDir string, sum *engine.RunSummary) ([]stageOut, []string, error) {
	ents, err := os.ReadDir(workDir)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	var notes []string
	byName := map[string]*stageOut{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(workDir, e.Name())
		out, err := engine.LoadStageOutput(dir)
		if errors.Is(err, engine.ErrIncomplete) {
			if hasManifestParts(dir) {
				notes = append(notes, fmt.Sprintf("stage %s: %v", e.Name(), err))
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		so := &stageOut{name: e.Name(), out: out}
		seen := map[string]bool{}
		for _, m := range out.Parts {
			for _, in := range m.Inputs {
				if in.Kind != "manifest" {
					continue
				}
				up := strings.SplitN(filepath.ToSlash(in.Path), "/", 2)[0]
				if !seen[up] {
					seen[up] = true
					so.from = append(so.from, up)
				}
			}
		}
		byName[so.name] = so
	}
	rank := map[string]int{}
	if sum != nil {
		for i, s := range sum.Stages {
			rank[s.Name] = i + 1
		}
	}
	less := func(a, b string) bool {
		ra, rb := rank[a], rank[b]
		if ra == 0 {
			ra = 1 << 30
		}
		if rb == 0 {
			rb = 1 << 30
		}
		if ra != rb {
			return ra < rb
		}
		return a < b
	}
	// Kahn's algorithm; a stage whose upstream is not in the work dir (a
	// moved directory) counts that edge as satisfied.
	indeg := map[string]int{}
	down := map[string][]string{}
	for n, so := range byName {
		for _, up := range so.from {
			if _, ok := byName[up]; ok {
				indeg[n]++
				down[up] = append(down[up], n)
			}
		}
	}
	var ready, order []string
	for n := range byName {
		if indeg[n] == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return less(ready[i], ready[j]) })
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, d := range down[n] {
			if indeg[d]--; indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(order) != len(byName) {
		return nil, nil, fmt.Errorf("%w: %s: stage manifests reference each other in a cycle", engine.ErrInput, workDir)
	}
	stages := make([]stageOut, len(order))
	for i, n := range order {
		stages[i] = *byName[n]
	}
	if sum != nil && len(sum.Stages) > 0 {
		for _, n := range order {
			if rank[n] == 0 {
				notes = append(notes, fmt.Sprintf("stage %s has committed output but is not in this run's summary (not run this time, or left by an earlier pipeline)", n))
			}
		}
		for _, s := range sum.Stages {
			if _, ok := byName[s.Name]; !ok {
				notes = append(notes, fmt.Sprintf("stage %s is in the run summary but has no committed manifest in %s", s.Name, workDir))
			}
		}
	}
	return stages, notes, nil
}

func hasManifestParts(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "manifest*.json"))
	return len(m) > 0
}

// stageReport fills one stage's row of the stage table.
func stageReport(so stageOut, res *engine.StageResult, rowsOf map[string]map[string]int64) StageReport {
	sr := StageReport{Name: so.name, Rows: map[string]int64{}, Counts: map[string]int64{}, Status: "committed"}
	for _, m := range so.out.Parts {
		sr.Type = m.Type
		if sr.ConfigHash == "" {
			sr.ConfigHash = m.ConfigHash
		}
		for _, s := range m.Shards {
			sr.Rows[s.Kind] += s.Rows
			sr.Shards++
			sr.Bytes += s.Bytes
		}
		for k, v := range m.Counts {
			sr.Counts[k] += v
		}
	}
	// The rows of the kinds the stage read, as the runner counted them
	// (decontam reads admit's items, not its evidence or yield rows); a
	// manifest from before that counter falls back to every upstream row.
	if _, ok := sr.Counts[engine.CountYieldInput]; ok {
		sr.InputRows = sr.Counts[engine.CountYieldInput]
	} else {
		for _, up := range so.from {
			for kind, n := range rowsOf[up] {
				if kind != "rejections" {
					sr.InputRows += n
				}
			}
		}
	}
	if res != nil {
		sr.Status, sr.Seconds, sr.Yield = res.Status, res.Seconds, res.Yield
	}
	if sr.Seconds > 0 && sr.Status == "ran" {
		var total int64
		for _, n := range sr.Rows {
			total += n
		}
		sr.RowsPerSecond = float64(total) / sr.Seconds
	}
	return sr
}

// itemKinds are shard kinds whose rows are engine.Item.
var itemKinds = []string{"items", "train", "validation"}

// funnelStep picks the rows a stage passes on: its items (or train and
// validation splits), the samples it packed, its task selection, or else
// its largest output kind.
func funnelStep(sr StageReport) FunnelStep {
	st := FunnelStep{Stage: sr.Name, Rejected: sr.Rows["rejections"]}
	var n int64
	var kinds []string
	for _, k := range itemKinds {
		if v, ok := sr.Rows[k]; ok {
			n += v
			kinds = append(kinds, k)
		}
	}
	switch {
	case len(kinds) > 0:
		st.Kind, st.Rows = strings.Join(kinds, "+"), n
	case hasKind(sr, "packed"):
		if v, ok := sr.Counts["packed"]; ok {
			st.Kind, st.Rows = "packed samples", v
		} else {
			st.Kind, st.Rows = "packed rows", sr.Rows["packed"]
		}
	case hasKind(sr, "selection"):
		st.Kind, st.Rows = "selection", sr.Rows["selection"]
	default:
		for k, v := range sr.Rows {
			if k == "rejections" || k == "evidence" {
				continue
			}
			if v > st.Rows || (v == st.Rows && (st.Kind == "" || k < st.Kind)) {
				st.Kind, st.Rows = k, v
			}
		}
	}
	return st
}

func hasKind(sr StageReport, k string) bool { _, ok := sr.Rows[k]; return ok }

func stageItemShards(so stageOut) []string {
	var out []string
	for _, k := range itemKinds {
		out = append(out, so.out.Shards(k)...)
	}
	return out
}

// pipelineHash fingerprints the pipeline from its stages' config hashes.
func pipelineHash(stages []StageReport) string {
	var b strings.Builder
	for _, s := range stages {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", s.Name, s.Type, s.ConfigHash)
	}
	return engine.HashString(b.String())
}
