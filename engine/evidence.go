package engine

import "strings"

// Verdict statuses. Pass needs explicit positive evidence; anything the
// verifier could not decide for reasons outside the candidate is unjudged.
const (
	StatusPass     = "pass"
	StatusFail     = "fail"
	StatusUnjudged = "unjudged"
)

// FailureStage is the closed taxonomy shared by every verifier. The empty
// stage goes with pass. Candidate stages blame the candidate; infrastructure
// stages never do, and are the only ones retried.
type FailureStage = string

// Candidate failure stages.
const (
	StageNone        FailureStage = ""
	StageStatic      FailureStage = "static"      // screened before running
	StageExtract     FailureStage = "extract"     // no code could be extracted from a response
	StageCompile     FailureStage = "compile"     // did not compile
	StageElaborate   FailureStage = "elaborate"   // compiled but did not elaborate / link / load
	StageSimulate    FailureStage = "simulate"    // crashed or errored while running
	StageTimeout     FailureStage = "timeout"     // ran past its wall-clock or CPU limit
	StageResource    FailureStage = "resource"    // exceeded a memory / output / file limit
	StageMismatch    FailureStage = "mismatch"    // ran, produced wrong outputs
	StageNoVerdict   FailureStage = "no_verdict"  // ran, but no trusted positive verdict was produced
	StageExploit     FailureStage = "exploit"     // an exploit gate fired
	StagePerformance FailureStage = "performance" // correct but missed a required speed bound
)

// Infrastructure failure stages: never the candidate's fault.
const (
	StageToolchainMissing     FailureStage = "toolchain_missing"
	StageToolchainUnsupported FailureStage = "toolchain_unsupported"
	StageReferenceSelfCheck   FailureStage = "reference_self_check"
	StagePayloadCorrupt       FailureStage = "payload_corrupt"
	StageWorkerCrash          FailureStage = "worker_crash"
	StageDiskFull             FailureStage = "disk_full"
	StageDeviceFault          FailureStage = "device_fault"
	StageWeakVerifier         FailureStage = "weak_verifier" // the task's harness accepts trivial candidates: passes prove nothing
)

// CandidateStages and InfraStages list the closed taxonomy.
var (
	CandidateStages = []FailureStage{StageStatic, StageExtract, StageCompile, StageElaborate, StageSimulate,
		StageTimeout, StageResource, StageMismatch, StageNoVerdict, StageExploit, StagePerformance}
	InfraStages = []FailureStage{StageToolchainMissing, StageToolchainUnsupported, StageReferenceSelfCheck,
		StagePayloadCorrupt, StageWorkerCrash, StageDiskFull, StageDeviceFault, StageWeakVerifier}
)

// IsInfraStage reports whether s is an infrastructure failure stage.
func IsInfraStage(s FailureStage) bool {
	for _, x := range InfraStages {
		if s == x {
			return true
		}
	}
	return false
}

// IsKnownStage reports whether s belongs to the closed taxonomy (or is empty).
func IsKnownStage(s FailureStage) bool {
	if s == StageNone || IsInfraStage(s) {
		return true
	}
	for _, x := range CandidateStages {
		if s == x {
			return true
		}
	}
	return false
}

// Measurement is one entry of an evidence record's typed map. Kind says which
// value field holds the value: "int", "float" or "text".
type Measurement struct {
	Name  string  `json:"name" arrow:"name"`
	Kind  string  `json:"kind" arrow:"kind"`
	Int   int64   `json:"int,omitempty" arrow:"int"`
	Float float64 `json:"float,omitempty" arrow:"float"`
	Text  string  `json:"text,omitempty" arrow:"text"`
}

// Measurements of how long a run took (wall time: every RTL and kernel
// verdict, retries included; CPU time: RTL). They vary between identical
// runs (machine load), so comparisons of verdicts leave them out.
const (
	MeasureWallTimeMS = "wall_time_ms"
	MeasureCPUTimeMS  = "cpu_time_ms"
)

// TimingMeasurements names every measurement that records how long
// something took (or is computed from such times) rather than what it did.
// They vary run to run on the same build, so they are left out of the
// content hash downstream stages are fingerprinted by. This is the one list:
// a verifier adding a timing measurement adds its name here.
var TimingMeasurements = []string{
	MeasureWallTimeMS, MeasureCPUTimeMS, // rtl + kernels: a verdict's wall time; rtl: CPU time
	"wall_time_share_ms",                        // gates: batch wall time shared over kernel evidence
	"run_wall_s",                                // kernels: cpu / triton run wall time
	"worker_wall_s",                             // kernels: cuda worker wall time
	"ref_ms_median", "ref_ms_p10", "ref_ms_p90", // kernels: reference timings
	"cand_ms_median", "cand_ms_p10", "cand_ms_p90", "cand_ms_min", // kernels: candidate timings
	"ref_spread", "cand_spread", // kernels: timing spread
	"speedup", "speedup_ci_lo", "speedup_ci_hi", // kernels/selection: ratios of timings
	"post_sync_ms_max", // kernels: hidden work after synchronisation
}

// IsTimingMeasurement reports whether a measurement records how long a run
// took (or derives from such times) rather than what the candidate did. The
// cuda worker's own measurements are prefixed "worker_"; those ending in
// "_ms" or "_s" are its timings.
func IsTimingMeasurement(name string) bool {
	for _, t := range TimingMeasurements {
		if name == t {
			return true
		}
	}
	return strings.HasPrefix(name, "worker_") && (strings.HasSuffix(name, "_ms") || strings.HasSuffix(name, "_s"))
}

// WithoutTimings returns the evidence without its timing measurements: the
// part of a verdict that two runs of the same build agree on.
func (e Evidence) WithoutTimings() Evidence {
	kept := make([]Measurement, 0, len(e.Measurements))
	for _, m := range e.Measurements {
		if !IsTimingMeasurement(m.Name) {
			kept = append(kept, m)
		}
	}
	e.Measurements = kept
	return e
}

// IntM, FloatM and TextM build measurements.
func IntM(name string, v int64) Measurement { return Measurement{Name: name, Kind: "int", Int: v} }
func FloatM(name string, v float64) Measurement {
	return Measurement{Name: name, Kind: "float", Float: v}
}
func TextM(name, v string) Measurement { return Measurement{Name: name, Kind: "text", Text: v} }

// Tool names one toolchain component and its version.
type Tool struct {
	Name    string `json:"name" arrow:"name"`
	Version string `json:"version" arrow:"version"`
}

// InputHash is the sha256 of one input of a verdict.
type InputHash struct {
	Name   string `json:"name" arrow:"name"`
	SHA256 string `json:"sha256" arrow:"sha256"`
}

// EvidenceProvenance says exactly what produced a verdict.
type EvidenceProvenance struct {
	Verifier  string      `json:"verifier" arrow:"verifier"` // e.g. rtl/differential, kernel/cpu
	Toolchain []Tool      `json:"toolchain" arrow:"toolchain"`
	Flags     []string    `json:"flags" arrow:"flags"`
	Inputs    []InputHash `json:"inputs" arrow:"inputs"`
}

// Evidence is one verdict on one (item, candidate) pair.
type Evidence struct {
	ItemID       string             `json:"item_id" arrow:"item_id"`
	CandidateID  string             `json:"candidate_id" arrow:"candidate_id"`
	Status       string             `json:"status" arrow:"status"`
	FailureStage string             `json:"failure_stage" arrow:"failure_stage"`
	Cause        string             `json:"cause" arrow:"cause"` // short human-readable cause of fail/unjudged
	Measurements []Measurement      `json:"measurements" arrow:"measurements"`
	Provenance   EvidenceProvenance `json:"provenance" arrow:"provenance"`
	Attempts     int32              `json:"attempts" arrow:"attempts"`
	LogExcerpt   string             `json:"log_excerpt" arrow:"log_excerpt"`
}

// MaxLogExcerpt bounds Evidence.LogExcerpt.
const MaxLogExcerpt = 4096

// Measurement returns the named measurement, if present.
func (e *Evidence) Measurement(name string) (Measurement, bool) {
	for _, m := range e.Measurements {
		if m.Name == name {
			return m, true
		}
	}
	return Measurement{}, false
}

// Candidate is a proposed solution to an item.
type Candidate struct {
	ItemID      string `json:"item_id" arrow:"item_id"`
	CandidateID string `json:"candidate_id" arrow:"candidate_id"`
	Code        string `json:"code" arrow:"code"`
}
