package decontam

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/crucible-data/crucible/engine"
)

// RunFile is the name of the RunRecord `decontam check` writes beside its
// matches (before manifest.json, which commits the directory).
const RunFile = "decontam.json"

// RunRecord is what a check records so its match set can be re-thresholded
// without reading the corpus or the benchmark again. The match set holds
// every match scoring at least the check's report_min, and nothing below,
// so a new threshold can be anything from Floor up: the contaminated set at
// such a threshold is exactly the one a fresh check would find. Below the
// floor the matches were never written.
type RunRecord struct {
	Version    int            `json:"version"`
	Threshold  float64        `json:"threshold"` // the threshold the set was written with
	Floor      float64        `json:"floor"`     // lowest score the set is complete from (the check's report_min)
	Benchmarks []RunBenchmark `json:"benchmarks"`
}

// RunBenchmark is one benchmark's pass of a check; its matches are the next
// Matches rows of the match set, benchmarks in order.
type RunBenchmark struct {
	Benchmark        string `json:"benchmark"`
	Direction        string `json:"direction"`
	Queries          int64  `json:"queries"`
	BenchmarkEntries int    `json:"benchmark_entries"`
	Matches          int64  `json:"matches"`
}

const runVersion = 1

// NewRunRecord records the summaries of a check. The floor is the highest
// report_min among them (a persisted index brings its own).
func NewRunRecord(sums []Summary) RunRecord {
	r := RunRecord{Version: runVersion, Benchmarks: []RunBenchmark{}}
	for i, s := range sums {
		if i == 0 {
			r.Threshold = s.Threshold
		}
		r.Threshold = max(r.Threshold, s.Threshold)
		r.Floor = max(r.Floor, s.ReportMin)
		r.Benchmarks = append(r.Benchmarks, RunBenchmark{Benchmark: s.Benchmark, Direction: s.Direction, Queries: s.Queries,
			BenchmarkEntries: s.BenchmarkEntries, Matches: s.Matches})
	}
	return r
}

// WriteRunRecord writes dir/decontam.json.
func WriteRunRecord(dir string, r RunRecord) error {
	b, _ := json.MarshalIndent(r, "", "  ")
	return engine.WriteFileAtomic(filepath.Join(dir, RunFile), append(b, '\n'))
}

// ReadRunRecord reads dir/decontam.json.
func ReadRunRecord(dir string) (RunRecord, error) {
	p := filepath.Join(dir, RunFile)
	var r RunRecord
	b, err := os.ReadFile(p)
	if err != nil {
		return r, fmt.Errorf("%w: %s: %v (not written by this version's decontam check: rerun it)", ErrInput, p, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%w: %s: %v", ErrInput, p, err)
	}
	if r.Version != runVersion {
		return r, fmt.Errorf("%w: %s: version %d, want %d", ErrInput, p, r.Version, runVersion)
	}
	return r, nil
}

// Rescore re-thresholds a recorded match set: feed it every row in order
// with Add, then take the summaries a check at the new threshold prints.
type Rescore struct {
	rec  RunRecord
	sums []Summary
	cur  int   // benchmark the next row belongs to
	left int64 // rows of it still to come
	row  int64
}

// NewRescore checks threshold against the record: (0,1] and not below the
// floor (ErrConfig, naming both).
func (r RunRecord) NewRescore(threshold float64) (*Rescore, error) {
	if !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("%w: threshold=%v (want 0<t≤1)", ErrConfig, threshold)
	}
	if threshold < r.Floor {
		return nil, fmt.Errorf("%w: threshold=%v is below the floor %v of this match set: matches scoring under %v were never written (rerun decontam check with --report-min %v or lower)",
			ErrConfig, threshold, r.Floor, r.Floor, threshold)
	}
	x := &Rescore{rec: r, cur: -1}
	for _, b := range r.Benchmarks {
		x.sums = append(x.sums, Summary{Benchmark: b.Benchmark, Direction: b.Direction, Queries: b.Queries,
			BenchmarkEntries: b.BenchmarkEntries, Threshold: threshold, ReportMin: r.Floor,
			corpusSet: map[string]bool{}, benchSet: map[string]bool{}})
	}
	return x, nil
}

// Add takes the next row; it returns the row re-flagged and whether it
// reaches the threshold. where names the row in errors.
func (x *Rescore) Add(m Match, where string) (Match, bool, error) {
	x.row++
	for x.left == 0 {
		x.cur++
		if x.cur >= len(x.rec.Benchmarks) {
			return m, false, fmt.Errorf("%w: %s: row beyond the %d matches %s records", ErrInput, where, x.row-1, RunFile)
		}
		x.left = x.rec.Benchmarks[x.cur].Matches
	}
	x.left--
	s := &x.sums[x.cur]
	m.Contaminated = m.Score >= s.Threshold
	if m.Contaminated {
		// Rows of a shard reader are reused; Top keeps copies.
		m.Spans, m.SharedWith = slices.Clone(m.Spans), slices.Clone(m.SharedWith)
	}
	s.add(m)
	return m, m.Contaminated, nil
}

// Summaries returns one summary per benchmark, as the check at the new
// threshold prints them; an error when rows are missing.
func (x *Rescore) Summaries() ([]Summary, error) {
	var want int64
	for _, b := range x.rec.Benchmarks {
		want += b.Matches
	}
	if x.row != want {
		return nil, fmt.Errorf("%w: %d match rows, %s records %d", ErrInput, x.row, RunFile, want)
	}
	for i := range x.sums {
		s := &x.sums[i]
		s.CorpusItems, s.BenchmarkItems = len(s.corpusSet), len(s.benchSet)
	}
	return x.sums, nil
}
