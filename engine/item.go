package engine

import "time"

// Domain names the kind of artefact a task is about.
const (
	DomainRTL    = "rtl"
	DomainKernel = "kernel"
)

// Routes say how an item came to be.
const (
	RouteSeed             = "seed"
	RouteSolutionFirst    = "solution_first"
	RouteInstructionFirst = "instruction_first"
	RouteContractMutation = "contract_mutation"
)

// Reference statuses: what execution has shown about an item's reference.
const (
	RefUnverified = "unverified"
	RefVerified   = "verified"
	RefFailed     = "failed"
	RefUnjudged   = "unjudged"
)

// Verifier kinds. RTL kinds are the harness contracts of the rtl package;
// "kernel" is the kernel verifier's contract.
const (
	VerifierDifferential = "differential"
	VerifierSelfChecking = "self_checking"
	VerifierCompletion   = "completion"
	VerifierKernel       = "kernel"
)

// Port is one RTL port.
type Port struct {
	Name      string `json:"name" arrow:"name"`
	Direction string `json:"direction" arrow:"direction"` // input | output | inout
	Width     int32  `json:"width" arrow:"width"`
	Signed    bool   `json:"signed,omitempty" arrow:"signed"`
}

// KernelArg is one argument of a kernel task.
type KernelArg struct {
	Name  string  `json:"name" arrow:"name"`
	Role  string  `json:"role" arrow:"role"` // input | output | scalar
	Shape []int64 `json:"shape" arrow:"shape"`
	DType string  `json:"dtype" arrow:"dtype"` // float32 | float16 | bfloat16 | int32 | ...
}

// Interface is the mechanical contract of a task: RTL ports and clock/reset,
// or kernel arguments and tolerance. Fields of the other domain stay empty.
type Interface struct {
	Top           string `json:"top,omitempty" arrow:"top"`
	Ports         []Port `json:"ports,omitempty" arrow:"ports"`
	Clock         string `json:"clock,omitempty" arrow:"clock"`
	Reset         string `json:"reset,omitempty" arrow:"reset"`
	ResetPolarity string `json:"reset_polarity,omitempty" arrow:"reset_polarity"` // high | low
	ResetKind     string `json:"reset_kind,omitempty" arrow:"reset_kind"`         // sync | async

	Args            []KernelArg `json:"args,omitempty" arrow:"args"`
	Tolerance       float64     `json:"tolerance,omitempty" arrow:"tolerance"`
	AllowDelegation bool        `json:"allow_delegation,omitempty" arrow:"allow_delegation"`
}

// Verifier is the executable judge of a task.
type Verifier struct {
	Kind       string `json:"kind" arrow:"kind"`
	Harness    string `json:"harness" arrow:"harness"`
	Top        string `json:"top,omitempty" arrow:"top"`
	PassMarker string `json:"pass_marker,omitempty" arrow:"pass_marker"`
}

// Provenance records where an item's text came from.
type Provenance struct {
	Source            string    `json:"source" arrow:"source"`
	License           string    `json:"license" arrow:"license"`
	InstructionSHA256 string    `json:"instruction_sha256" arrow:"instruction_sha256"`
	ReferenceSHA256   string    `json:"reference_sha256" arrow:"reference_sha256"`
	VerifierSHA256    string    `json:"verifier_sha256" arrow:"verifier_sha256"`
	IngestTime        time.Time `json:"ingest_time" arrow:"ingest_time"`
}

// Item is the task contract: instruction + reference solution + verifier,
// with its interface, lineage, route and provenance.
type Item struct {
	ItemID          string     `json:"item_id" arrow:"item_id"`
	ParentID        string     `json:"parent_id" arrow:"parent_id"`
	LineageID       string     `json:"lineage_id" arrow:"lineage_id"`
	Domain          string     `json:"domain" arrow:"domain"`
	Family          string     `json:"family" arrow:"family"`
	Route           string     `json:"route" arrow:"route"`
	Operator        string     `json:"operator" arrow:"operator"`
	Instruction     string     `json:"instruction" arrow:"instruction"`
	Interface       Interface  `json:"interface" arrow:"interface"`
	Reference       string     `json:"reference" arrow:"reference"`
	Verifier        Verifier   `json:"verifier" arrow:"verifier"`
	ReferenceStatus string     `json:"reference_status" arrow:"reference_status"`
	Difficulty      float64    `json:"difficulty" arrow:"difficulty"`
	Cost            float64    `json:"cost" arrow:"cost"`
	Provenance      Provenance `json:"provenance" arrow:"provenance"`
	// VerifierStrength is the measured strength of Verifier (the RTL
	// harness-strength audit); zero when not measured.
	VerifierStrength VerifierStrength `json:"verifier_strength,omitzero" arrow:"verifier_strength"`
}

// VerifierStrength is how many known-wrong candidates a verifier fails:
// trivial ones (constant, floating, stuck or inverted outputs) and mutants
// of the reference, with the names of those it passed. A verifier that
// passes any trivial candidate is weak.
type VerifierStrength struct {
	Measured      bool     `json:"measured" arrow:"measured"`
	TrivialKilled int32    `json:"trivial_killed" arrow:"trivial_killed"`
	TrivialTried  int32    `json:"trivial_tried" arrow:"trivial_tried"`
	MutantKilled  int32    `json:"mutant_killed" arrow:"mutant_killed"`
	MutantTried   int32    `json:"mutant_tried" arrow:"mutant_tried"`
	Survivors     []string `json:"survivors,omitempty" arrow:"survivors"`
}

// Weak reports whether a trivial candidate passed the verifier.
func (s VerifierStrength) Weak() bool { return s.Measured && s.TrivialKilled < s.TrivialTried }

// MutantKillRate is the fraction of judged mutants the verifier failed;
// ok is false when none was judged.
func (s VerifierStrength) MutantKillRate() (float64, bool) {
	if s.MutantTried == 0 {
		return 0, false
	}
	return float64(s.MutantKilled) / float64(s.MutantTried), true
}

// Rejection records why a row left the pipeline. Rejections are data, not errors.
type Rejection struct {
	ItemID string `json:"item_id" arrow:"item_id"`
	Stage  string `json:"stage" arrow:"stage"`
	Gate   string `json:"gate" arrow:"gate"`
	Reason string `json:"reason" arrow:"reason"` // a short code, e.g. missing_field, contaminated
	Detail string `json:"detail" arrow:"detail"`
}
