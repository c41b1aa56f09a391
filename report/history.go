package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// HistoryRow is one build's key numbers in the run-history table. The table
// is a folder of Parquet files, one per run, so an append is one atomic
// file commit and any SQL engine reads the folder as one table, e.g.
//
//	SELECT finished, final_items, reference_pass_rate FROM read_parquet('history/*.parquet') ORDER BY finished
type HistoryRow struct {
	RunID       string    `arrow:"run_id"`
	Pipeline    string    `arrow:"pipeline"`
	WorkDir     string    `arrow:"work_dir"`
	Started     time.Time `arrow:"started"`
	Finished    time.Time `arrow:"finished"`
	GeneratedAt time.Time `arrow:"generated_at"`
	ConfigHash  string    `arrow:"config_hash"`
	Seconds     float64   `arrow:"seconds"`     // wall time of the stages this run executed
	Seeds       int64     `arrow:"seeds"`       // rows of the first funnel step
	FinalItems  int64     `arrow:"final_items"` // items of the coverage stage
	Rejections  int64     `arrow:"rejections"`  // rejection rows over all stages
	Verdicts    int64     `arrow:"verdicts"`    // evidence rows over all stages
	// Pass rates by subject (VerifierStats.Subject): reference self-checks
	// and model rollouts are different questions and never averaged.
	ReferenceVerdicts int64          `arrow:"reference_verdicts"`
	ReferencePassRate float64        `arrow:"reference_pass_rate"`
	RolloutVerdicts   int64          `arrow:"rollout_verdicts"`
	RolloutPassRate   float64        `arrow:"rollout_pass_rate"`
	InfraFaults       int64          `arrow:"infra_faults"`   // verdicts with an infrastructure failure stage
	PackedSamples     int64          `arrow:"packed_samples"` // 0 without a pack stage
	PackedRows        int64          `arrow:"packed_rows"`
	TokensPacked      int64          `arrow:"tokens_packed"`
	FillRatio         float64        `arrow:"fill_ratio"`
	Stages            []HistoryStage `arrow:"stages"`
}

// HistoryStage is one stage's figures inside a history row.
type HistoryStage struct {
	Name       string  `arrow:"name"`
	Kind       string  `arrow:"kind"`
	Rows       int64   `arrow:"rows"`
	Rejected   int64   `arrow:"rejected"`
	Seconds    float64 `arrow:"seconds"`
	ConfigHash string  `arrow:"config_hash"`
}

// HistoryOf condenses a report into its history row.
func HistoryOf(r *Report) HistoryRow {
	h := HistoryRow{Pipeline: r.Pipeline, WorkDir: r.WorkDir, Started: r.Started, Finished: r.Finished,
		GeneratedAt: r.GeneratedAt, ConfigHash: r.ConfigHash}
	h.RunID = runID(r)
	for i, s := range r.Stages {
		h.Seconds += s.Seconds
		f := r.Funnel[i]
		h.Stages = append(h.Stages, HistoryStage{Name: s.Name, Kind: f.Kind, Rows: f.Rows, Rejected: f.Rejected, Seconds: s.Seconds, ConfigHash: s.ConfigHash})
	}
	if len(r.Funnel) > 0 {
		h.Seeds = r.Funnel[0].Rows
	}
	if r.Coverage != nil {
		h.FinalItems = r.Coverage.Items
	}
	for _, x := range r.Rejections {
		h.Rejections += x.Count
	}
	h.ReferenceVerdicts, h.ReferencePassRate = passRate(r.Verdicts, SubjectReference)
	h.RolloutVerdicts, h.RolloutPassRate = passRate(r.Verdicts, SubjectRollout)
	for _, v := range r.Verdicts {
		h.Verdicts += v.Total
		h.InfraFaults += v.InfraTotal
	}
	if p := r.Packing; p != nil {
		h.PackedSamples, h.PackedRows, h.TokensPacked, h.FillRatio = p.Packed, p.Rows, p.TokensPacked, p.FillRatio
	}
	return h
}

// runID names a run by pipeline, start time and work directory, so
// regenerating the report of the same run replaces its history file instead
// of adding a duplicate row.
func runID(r *Report) string {
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, r.Pipeline)
	if name == "" {
		name = "pipeline"
	}
	// Nanoseconds: two runs started in the same second are two rows.
	return fmt.Sprintf("%s-%s-%s", name, r.Started.UTC().Format("20060102T150405.000000000Z"), engine.HashString(r.WorkDir)[:8])
}

// AppendHistory writes the run's row as dir/<run_id>-00000.parquet.
func AppendHistory(ctx context.Context, dir string, r *Report) (string, error) {
	h := HistoryOf(r)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: history dir: %v", engine.ErrIO, err)
	}
	infos, err := engine.WriteAll(ctx, dir, h.RunID, "history", engine.DefaultWriterOptions(), []HistoryRow{h})
	if err != nil {
		return "", err
	}
	if len(infos) != 1 {
		return "", fmt.Errorf("%w: history: wrote %d files, want 1", engine.ErrIO, len(infos))
	}
	return filepath.Join(dir, infos[0].Path), nil
}

// ReadHistory reads every run of a history folder, oldest first.
func ReadHistory(dir string) ([]HistoryRow, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	rows, err := engine.ReadAll[HistoryRow](paths...)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.Before(rows[j].Started) })
	return rows, nil
}

// maxTrend bounds the runs the trend plot shows.
const maxTrend = 60

// trend returns the last n runs of r's pipeline from the history folder.
// A history file that does not read is an error naming it: the folder is
// this tool's own output.
func trend(dir string, r *Report, n int) ([]TrendPoint, error) {
	rows, err := ReadHistory(dir)
	if err != nil {
		return nil, err
	}
	var out []TrendPoint
	for _, h := range rows {
		if h.Pipeline != r.Pipeline {
			continue
		}
		out = append(out, TrendPoint{RunID: h.RunID, Started: h.Started, FinalItems: h.FinalItems,
			Rejections: h.Rejections, Verdicts: h.Verdicts, ReferenceVerdicts: h.ReferenceVerdicts, ReferencePassRate: h.ReferencePassRate,
			RolloutVerdicts: h.RolloutVerdicts, RolloutPassRate: h.RolloutPassRate, Seconds: h.Seconds})
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// Subjects of verdicts (VerifierStats.Subject).
const (
	SubjectReference = "reference"
	SubjectRollout   = "rollout"
	SubjectCandidate = "candidate"
)

// subjectOf says what one evidence row of a stage type judges: a verify
// stage self-checks references and judges the candidates it is given.
func subjectOf(stageType, candidateID string) string {
	switch stageType {
	case "verify", "verify_rtl", "verify_kernel":
		if candidateID == engine.ReferenceCandidateID {
			return SubjectReference
		}
		return SubjectCandidate
	case "select":
		return SubjectRollout
	}
	return SubjectCandidate
}

// passRate is the verdicts and pass rate over the verifiers of one subject.
func passRate(vs []VerifierStats, subject string) (int64, float64) {
	var total, pass int64
	for _, v := range vs {
		if v.Subject == subject {
			total, pass = total+v.Total, pass+v.Pass
		}
	}
	if total == 0 {
		return 0, 0
	}
	return total, float64(pass) / float64(total)
}
