package synth

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Outcome labels: the closed vocabulary observations are written in. The
// generator and the world model see these words; INFRA_ERROR never reaches
// the generator (an infrastructure failure is not the candidate's fault).
const (
	OutcomePass               = "PASS"
	OutcomeNoCode             = "NO_CODE"
	OutcomeStaticRejected     = "STATIC_REJECTED"
	OutcomeCompilationError   = "COMPILATION_ERROR"
	OutcomeElaborationError   = "ELABORATION_ERROR"
	OutcomeRuntimeError       = "RUNTIME_ERROR"
	OutcomeTimeout            = "TIMEOUT"
	OutcomeMemoryFault        = "MEMORY_FAULT"
	OutcomeSimulationMismatch = "SIMULATION_MISMATCH" // rtl
	OutcomeNumericMismatch    = "NUMERIC_MISMATCH"    // kernel
	OutcomeNoVerdict          = "NO_VERDICT"
	OutcomeExploit            = "EXPLOIT_DETECTED"
	OutcomePerformanceMiss    = "PERFORMANCE_MISS"
	OutcomeInfra              = "INFRA_ERROR"
)

// Vocabulary lists the candidate-facing outcomes of a domain.
func Vocabulary(domain string) []string {
	common := []string{OutcomePass, OutcomeNoCode, OutcomeStaticRejected, OutcomeCompilationError, OutcomeElaborationError,
		OutcomeRuntimeError, OutcomeTimeout, OutcomeMemoryFault, OutcomeNoVerdict, OutcomeExploit, OutcomePerformanceMiss}
	if domain == engine.DomainKernel {
		return append(common, OutcomeNumericMismatch)
	}
	return append(common, OutcomeSimulationMismatch)
}

// InVocabulary reports whether label is a candidate-facing outcome of domain.
func InVocabulary(domain, label string) bool {
	for _, v := range Vocabulary(domain) {
		if v == label {
			return true
		}
	}
	return false
}

// Observation is what an environment turn reports: an outcome label and
// the diagnostic text an engineer would read.
type Observation struct {
	Outcome      string `json:"outcome" arrow:"outcome"`
	Status       string `json:"status" arrow:"status"`
	FailureStage string `json:"failure_stage" arrow:"failure_stage"`
	Diagnostic   string `json:"diagnostic" arrow:"diagnostic"`
	Mismatches   int64  `json:"mismatches" arrow:"mismatches"`
	Samples      int64  `json:"samples" arrow:"samples"`
}

// Passed reports a PASS outcome.
func (o Observation) Passed() bool { return o.Outcome == OutcomePass }

// Infra reports an infrastructure outcome (no verdict on the candidate).
func (o Observation) Infra() bool { return o.Outcome == OutcomeInfra }

// Text renders the observation as the environment message of a trajectory.
func (o Observation) Text() string {
	if o.Diagnostic == "" {
		return "Outcome: " + o.Outcome
	}
	return "Outcome: " + o.Outcome + "\n" + o.Diagnostic
}

// OutcomeFor maps an evidence record to the domain's label. Unjudged
// evidence and infrastructure stages are INFRA_ERROR whatever else they say.
func OutcomeFor(domain string, ev engine.Evidence) string {
	if ev.Status == engine.StatusUnjudged || engine.IsInfraStage(ev.FailureStage) {
		return OutcomeInfra
	}
	if ev.Status == engine.StatusPass {
		return OutcomePass
	}
	switch ev.FailureStage {
	case engine.StageStatic:
		return OutcomeStaticRejected
	case engine.StageExtract:
		return OutcomeNoCode
	case engine.StageCompile:
		return OutcomeCompilationError
	case engine.StageElaborate:
		return OutcomeElaborationError
	case engine.StageSimulate:
		if domain == engine.DomainKernel && strings.Contains(strings.ToLower(ev.Cause), "memory") {
			return OutcomeMemoryFault // illegal address, out-of-bounds access
		}
		return OutcomeRuntimeError
	case engine.StageTimeout:
		return OutcomeTimeout
	case engine.StageResource:
		return OutcomeMemoryFault
	case engine.StageMismatch:
		if domain == engine.DomainKernel {
			return OutcomeNumericMismatch
		}
		return OutcomeSimulationMismatch
	case engine.StageExploit:
		return OutcomeExploit
	case engine.StagePerformance:
		return OutcomePerformanceMiss
	}
	return OutcomeNoVerdict
}

// ObservationFromEvidence builds the observation of a real verification,
// with the diagnostic bounded to maxDiag bytes.
func ObservationFromEvidence(domain string, ev engine.Evidence, maxDiag int) Observation {
	o := Observation{Outcome: OutcomeFor(domain, ev), Status: ev.Status, FailureStage: ev.FailureStage}
	if m, ok := ev.Measurement("mismatches"); ok {
		o.Mismatches = m.Int
	}
	if m, ok := ev.Measurement("samples"); ok {
		o.Samples = m.Int
	}
	if o.Outcome == OutcomePass {
		if o.Samples > 0 {
			o.Diagnostic = fmt.Sprintf("All %d samples matched.", o.Samples)
		}
		return o
	}
	o.Diagnostic = Diagnostic(ev, maxDiag)
	return o
}

// tempPathRE matches an absolute path's directories: job directories are
// random per run, so diagnostics keep only the file name (cand.c:4:28).
var tempPathRE = regexp.MustCompile(`(?:/[^\s/:'"‘’]+)+/([^\s/:'"‘’]+)`)

// Diagnostic keeps the most informative part of a failure within max
// bytes: the cause (first error, mismatch summary), then the log lines that
// name errors or mismatches, then the rest of the log in order, truncated.
// Lines already said are not repeated, and the harness's verdict line
// (CRUCIBLE-<secret> ...) is the verifier's, not the candidate's output.
func Diagnostic(ev engine.Evidence, max int) string {
	var b strings.Builder
	said := ""
	full := false
	add := func(s string) {
		s = tempPathRE.ReplaceAllString(strings.TrimRight(s, " \r"), "$1")
		t := strings.ToLower(strings.TrimSpace(s))
		if full || t == "" || strings.Contains(said, t) || strings.HasPrefix(t, "crucible-") {
			return
		}
		if b.Len()+len(s)+1 > max {
			if room := max - b.Len() - len(" [truncated]") - 1; room > 0 {
				b.WriteString(s[:room] + " [truncated]\n")
			}
			full = true
			return
		}
		b.WriteString(s + "\n")
		said += t + "\n"
	}
	cause := strings.TrimSpace(ev.Cause)
	if m, ok := ev.Measurement("mismatches"); ok && ev.FailureStage == engine.StageMismatch && !strings.Contains(strings.ToLower(cause), "mismatch") {
		s, _ := ev.Measurement("samples")
		add(fmt.Sprintf("Mismatches: %d in %d samples", m.Int, s.Int))
	}
	add(cause)
	lines := strings.Split(strings.TrimSpace(ev.LogExcerpt), "\n")
	for _, l := range lines {
		low := strings.ToLower(l)
		if strings.Contains(low, "error") || strings.Contains(low, "mismatch") || strings.Contains(low, "syntax") {
			add(l)
		}
	}
	for _, l := range lines {
		add(l)
	}
	return strings.TrimRight(b.String(), "\n")
}
