// Package report turns a finished build's work directory into the nightly
// build report: a self-contained HTML page (report.html, plots inline as PNG
// data URIs, readable with no network) and the same figures as report.json
// for dashboards, a per-run row in a Parquet history table, and a diff of two
// runs that flags regressions beyond configurable thresholds.
//
// Every number comes from the committed outputs (manifests and shards) and
// the run summary; nothing is re-derived from logs.
//
// Entry points: Generate (what `crucible build` calls after a run, and
// `crucible report build WORKDIR`), Build (the figures only), Load (a run's
// report.json), Compare (`crucible report diff RUN_A RUN_B`), AppendHistory
// and ReadHistory. To look at a page the way a browser shows it:
//
//	scripts/report-screenshot.sh WORKDIR [OUT.png]   # headless Chromium
package report

import (
	"time"

	"github.com/crucible-data/crucible/engine"
)

// SchemaVersion is bumped when report.json's layout changes incompatibly.
const SchemaVersion = 1

// File names written into the work directory.
const (
	HTMLFile = "report.html"
	JSONFile = "report.json"
)

// Report is everything the page shows; it is what report.json holds.
type Report struct {
	Version     int       `json:"version"`
	Pipeline    string    `json:"pipeline"`
	WorkDir     string    `json:"work_dir"`
	Shard       string    `json:"shard,omitempty"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	GeneratedAt time.Time `json:"generated_at"`
	// ConfigHash fingerprints the whole pipeline: the hash of its stages'
	// names, types and config hashes in order.
	ConfigHash string `json:"config_hash"`

	Stages     []StageReport    `json:"stages"`
	Funnel     []FunnelStep     `json:"funnel"`
	Rejections []RejectionCount `json:"rejections"`
	Operators  []OperatorYield  `json:"operators"`
	Coverage   *Coverage        `json:"coverage,omitempty"`
	Verdicts   []VerifierStats  `json:"verdicts"`
	Strength   *HarnessStrength `json:"strength,omitempty"` // strength.go
	Toolchain  []ToolVersion    `json:"toolchain"`
	Lengths    *ItemLengths     `json:"lengths,omitempty"`
	Packing    *Packing         `json:"packing,omitempty"`
	// Trend is this pipeline's recent runs from the history table, oldest
	// first, this run last (empty when history is off).
	Trend []TrendPoint `json:"trend,omitempty"`
	// Notes say which sections are missing and why (a stage absent, an
	// unreadable shard), so an empty section is never silent.
	Notes []string `json:"notes,omitempty"`
}

// StageReport is one stage: its committed output, time and throughput.
type StageReport struct {
	Name       string           `json:"name"`
	Type       string           `json:"type"`
	Status     string           `json:"status"` // ran | skipped | absent (no manifest)
	Seconds    float64          `json:"seconds"`
	Rows       map[string]int64 `json:"rows"` // committed rows per shard kind
	Counts     map[string]int64 `json:"counts,omitempty"`
	Shards     int              `json:"shards"`
	Bytes      int64            `json:"bytes"`
	ConfigHash string           `json:"config_hash"`
	// InputRows is the rows of all kinds the stage read from upstream stages.
	InputRows int64 `json:"input_rows"`
	// RowsPerSecond is output rows (all kinds) per second of this run; zero
	// for a skipped stage, whose time was spent in an earlier run.
	RowsPerSecond float64 `json:"rows_per_second"`
	// Yield is the runner's yield check of this run (rows in, passed on,
	// rejected, the max_reject_fraction applied and a failure if any); nil
	// for a stage this run did not reach.
	Yield *engine.StageYield `json:"yield,omitempty"`
}

// FunnelStep is one bar of the funnel: rows surviving a stage.
type FunnelStep struct {
	Stage    string `json:"stage"`
	Kind     string `json:"kind"` // the kind counted: items, packed, ...
	Rows     int64  `json:"rows"`
	Rejected int64  `json:"rejected"` // rejection rows the stage wrote
}

// RejectionCount is the number of rejection rows with one (stage, gate, reason).
type RejectionCount struct {
	Stage  string `json:"stage"` // the pipeline stage whose shards hold them
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// OperatorYield follows the items an evolution operator produced. Where a
// stage wrote per-operator yield shards (admit), Produced and Admitted are
// their candidates and admitted counts and AdmitYield = Admitted / Produced,
// exactly the shards' figures; otherwise Produced is the operator's items in
// the first items stage that had any (FirstStage). Kept is its items in the
// last items stage (KeptStage), Yield = Kept / Produced.
type OperatorYield struct {
	Operator   string  `json:"operator"`
	FirstStage string  `json:"first_stage"`
	Produced   int64   `json:"produced"`
	AdmitStage string  `json:"admit_stage,omitempty"`
	Admitted   int64   `json:"admitted"`
	AdmitYield float64 `json:"admit_yield"`
	KeptStage  string  `json:"kept_stage"`
	Kept       int64   `json:"kept"`
	Yield      float64 `json:"yield"`
}

// Coverage counts the items of the last stage that wrote items.
type Coverage struct {
	Stage      string  `json:"stage"`
	Items      int64   `json:"items"`
	Domain     []Share `json:"domain"`
	Family     []Share `json:"family"`
	Route      []Share `json:"route"`
	Difficulty []Share `json:"difficulty"` // buckets of 0.1 over [0,1], "unset" for 0
}

// Share is one category's count and share of the total.
type Share struct {
	Key   string  `json:"key"`
	Count int64   `json:"count"`
	Share float64 `json:"share"`
}

// VerifierStats counts the verdicts one verifier gave in one stage.
type VerifierStats struct {
	Stage    string `json:"stage"`
	Verifier string `json:"verifier"` // provenance.verifier
	// Subject is what was judged: "reference" (a verify stage checking
	// each item's reference against its own harness), "rollout" (a select
	// stage judging model responses) or "candidate" (anything else). Pass
	// rates of different subjects are never added up.
	Subject  string `json:"subject"`
	Total    int64  `json:"total"`
	Pass     int64  `json:"pass"`
	Fail     int64  `json:"fail"`
	Unjudged int64  `json:"unjudged"`
	// Candidate failure stages (the candidate's fault) and infrastructure
	// faults (never the candidate's), counted apart.
	CandidateFailures map[string]int64 `json:"candidate_failures"`
	InfraFaults       map[string]int64 `json:"infra_faults"`
	InfraTotal        int64            `json:"infra_total"`
	PassRate          float64          `json:"pass_rate"`  // pass / total
	InfraRate         float64          `json:"infra_rate"` // infra faults / total
}

// ToolVersion is one toolchain component a verifier reported.
type ToolVersion struct {
	Verifier string `json:"verifier"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Verdicts int64  `json:"verdicts"`
}

// ItemLengths are the text lengths (bytes) of the last items stage.
type ItemLengths struct {
	Stage       string     `json:"stage"`
	Instruction Dist       `json:"instruction"`
	Reference   Dist       `json:"reference"`
	ByDomain    []DomainLn `json:"by_domain"`
}

// DomainLn is a domain's median instruction and reference length.
type DomainLn struct {
	Domain            string  `json:"domain"`
	Items             int64   `json:"items"`
	InstructionMedian float64 `json:"instruction_median"`
	ReferenceMedian   float64 `json:"reference_median"`
}

// Dist summarises a length distribution with a histogram.
type Dist struct {
	N    int64     `json:"n"`
	Min  float64   `json:"min"`
	Mean float64   `json:"mean"`
	P50  float64   `json:"p50"`
	P90  float64   `json:"p90"`
	P99  float64   `json:"p99"`
	Max  float64   `json:"max"`
	Bins []HistBin `json:"bins"`
}

// HistBin is one histogram bin [Lo, Hi).
type HistBin struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int64   `json:"count"`
}

// Packing describes the pack stage's output: token lengths of samples
// before packing (kept and dropped), of packed rows after, and what the
// drop-not-truncate length cap removed per domain.
type Packing struct {
	Stage         string       `json:"stage"`
	Layout        string       `json:"layout,omitempty"`
	SeqLen        int64        `json:"seq_len,omitempty"`
	SamplesIn     int64        `json:"samples_in"`
	Packed        int64        `json:"packed"`
	Dropped       int64        `json:"dropped"`
	Rejected      int64        `json:"rejected"`
	Rows          int64        `json:"rows"`
	TokensPacked  int64        `json:"tokens_packed"`
	TokensDropped int64        `json:"tokens_dropped"`
	FillRatio     float64      `json:"fill_ratio"`
	Before        Dist         `json:"before"` // sample token lengths, kept + dropped
	After         Dist         `json:"after"`  // packed row token lengths
	Drops         []DomainDrop `json:"drops"`
}

// DomainDrop is what the length cap removed from one domain.
type DomainDrop struct {
	Domain        string  `json:"domain"`
	Samples       int64   `json:"samples"`
	Dropped       int64   `json:"dropped"`
	DroppedTokens int64   `json:"dropped_tokens"`
	DroppedShare  float64 `json:"dropped_share"`
}

// TrendPoint is one earlier (or this) run's headline numbers. Pass rates
// are kept apart by what was judged: references checked against their own
// harness, and model rollouts.
type TrendPoint struct {
	RunID             string    `json:"run_id"`
	Started           time.Time `json:"started"`
	FinalItems        int64     `json:"final_items"`
	Rejections        int64     `json:"rejections"`
	Verdicts          int64     `json:"verdicts"`
	ReferenceVerdicts int64     `json:"reference_verdicts"`
	ReferencePassRate float64   `json:"reference_pass_rate"`
	RolloutVerdicts   int64     `json:"rollout_verdicts"`
	RolloutPassRate   float64   `json:"rollout_pass_rate"`
	Seconds           float64   `json:"seconds"`
}
