package rtl

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Default names of the differential convention (VerilogEval): the harness
// top "tb" instantiates the reference as RefModule and the candidate as
// TopModule.
const (
	DefaultHarnessTop = "tb"
	RefModuleName     = "RefModule"
	DefaultDUTName    = "TopModule"
)

// Verdict is a contract's reading of one simulation's stdout.
type Verdict struct {
	Status     string // engine.StatusPass | engine.StatusFail
	Stage      string // "" on pass, else mismatch | no_verdict
	Cause      string
	Mismatches int64
	Samples    int64
	SimTime    int64 // harness time units at the verdict
	Counted    bool  // the verdict line carried counts
}

// Contract is one harness contract: how its trusted harness is rewritten to
// carry the per-run secret, how a candidate is assembled and screened, and
// its pass rule. Pass always needs the secret-bearing verdict line, printed
// exactly once as the harness's last word, with a positive sample count.
type Contract interface {
	// Kind is the engine.Verifier* kind.
	Kind() string
	// HarnessTop is the simulation's root module.
	HarnessTop() string
	// DUT is the module the candidate must define.
	DUT() string
	// TrustedHarness returns the harness with its verdict statement
	// replaced by one that prints the secret; an error means the harness has
	// no (or more than one) recognisable verdict statement.
	TrustedHarness(secret string) (string, error)
	// Reference is the trusted reference text compiled next to the
	// candidate ("" when the contract has none, e.g. self-checking).
	Reference() string
	// Assemble turns candidate text into the file that is compiled.
	Assemble(candidate string) (string, *screenFinding)
	// ReferenceCandidate is the item's reference in candidate form, used for
	// the reference self-check.
	ReferenceCandidate() (string, error)
	// Judge reads the simulation's stdout.
	Judge(stdout []byte, complete bool, secret string, expectedSamples int64) Verdict
	// trustedRun is the harness of the trusted (reference-only) run: the
	// verdict rewritten to carry the secret and, where the contract knows
	// the harness's sample counter, a monitor of its sample instants
	// (sampled reports whether one was inserted).
	trustedRun(secret string, openInInitial bool) (harness string, sampled bool, err error)
	// dutReference is the whole reference as the module the candidate
	// defines (the text instrumented in the trusted run and replayed).
	dutReference() (string, error)
	// checkUnits applies the contract's rules on the design units of the
	// preprocessed candidate's tokens.
	checkUnits(toks []token) *screenFinding
}

// ContractFor builds the contract an item's verifier names.
func ContractFor(item engine.Item) (Contract, error) {
	v := item.Verifier
	if strings.TrimSpace(v.Harness) == "" {
		return nil, fmt.Errorf("%w: item %s: verifier.harness is empty", ErrInput, item.ItemID)
	}
	top := v.Top
	if top == "" {
		top = DefaultHarnessTop
	}
	dut := item.Interface.Top
	if dut == "" {
		dut = DefaultDUTName
	}
	base := baseContract{harness: v.Harness, top: top, dut: dut, reference: item.Reference}
	switch v.Kind {
	case engine.VerifierDifferential:
		return &Differential{baseContract: base, trustedRef: namespaceHelpers(item.Reference)}, nil
	case engine.VerifierCompletion:
		prefix, err := CompletionPrefix(item)
		if err != nil {
			return nil, err
		}
		return &Completion{Differential: Differential{baseContract: base, trustedRef: namespaceHelpers(item.Reference)}, Prefix: prefix}, nil
	case engine.VerifierSelfChecking:
		if strings.TrimSpace(v.PassMarker) == "" {
			return nil, fmt.Errorf("%w: item %s: self_checking verifier needs pass_marker", ErrInput, item.ItemID)
		}
		return &SelfChecking{baseContract: base, PassMarker: v.PassMarker}, nil
	case "":
		return nil, fmt.Errorf("%w: item %s: verifier.kind is empty", ErrInput, item.ItemID)
	default:
		return nil, fmt.Errorf("%w: item %s: verifier.kind %q is not an RTL contract", ErrInput, item.ItemID, v.Kind)
	}
}

type baseContract struct {
	harness, top, dut, reference string
}

func (b *baseContract) HarnessTop() string { return b.top }
func (b *baseContract) DUT() string        { return b.dut }

// checkUnits: a whole-module candidate may define any helper modules it
// likes: the simulation it is judged in holds nothing else of ours but a
// driver whose name it cannot know. A missing DUT fails at elaboration.
func (b *baseContract) checkUnits([]token) *screenFinding { return nil }

// verdictPrefix is the start of every trusted verdict line.
const verdictPrefix = "CRUCIBLE-"

// lastLine returns the last non-empty line of out and how many times the
// secret appears in out.
func lastLine(out []byte, secret string) (string, int) {
	n := bytes.Count(out, []byte(verdictPrefix+secret))
	trimmed := bytes.TrimRight(out, " \t\r\n")
	i := bytes.LastIndexByte(trimmed, '\n')
	return string(bytes.TrimRight(trimmed[i+1:], "\r")), n
}

// ---- differential -------------------------------------------------------

// Differential is the VerilogEval contract: the harness drives RefModule and
// the candidate's TopModule with the same stimulus and counts mismatching
// samples, reporting them with
//
//	$display("Mismatches: %1d in %1d samples", errors, samples);
//
// That statement is rewritten to print the per-run secret. Pass: secret line
// exactly once, last, mismatches = 0, samples > 0 and equal to the samples
// the reference produced under the same harness.
type Differential struct {
	baseContract
	trustedRef string // the reference with its helper modules namespaced
}

// refHelperSuffix renames the reference's helper modules (every design unit
// but RefModule) in the compiled trusted copy, so a candidate may define
// modules of the same names (a mutant or a candidate derived from the
// reference usually does) without a duplicate-module error.
const refHelperSuffix = "_crucible_ref"

func namespaceHelpers(ref string) string {
	for _, u := range countModules(ref) {
		if u == RefModuleName {
			continue
		}
		ref = regexp.MustCompile(`\b`+regexp.QuoteMeta(u)+`\b`).ReplaceAllLiteralString(ref, u+refHelperSuffix)
	}
	return ref
}

var reMismatchDisplay = regexp.MustCompile(`\$display\s*\(\s*"Mismatches:\s*%\d*d\s+in\s+%\d*d\s+samples(?:\\n)?"\s*,\s*([^,;]+?)\s*,\s*([^,;]+?)\s*\)\s*;`)

func (d *Differential) Kind() string      { return engine.VerifierDifferential }
func (d *Differential) Reference() string { return d.trustedRef }

func (d *Differential) TrustedHarness(secret string) (string, error) {
	locs := reMismatchDisplay.FindAllStringSubmatchIndex(d.harness, -1)
	if len(locs) != 1 {
		return "", fmt.Errorf("differential harness must contain exactly one `$display(\"Mismatches: %%d in %%d samples\", ...)` statement, found %d", len(locs))
	}
	l := locs[0]
	errs, samples := d.harness[l[2]:l[3]], d.harness[l[4]:l[5]]
	stmt := fmt.Sprintf(`$display("%s%s mismatches=%%0d samples=%%0d time=%%0d", %s, %s, $time);`,
		verdictPrefix, secret, errs, samples)
	return d.harness[:l[0]] + stmt + d.harness[l[1]:], nil
}

func (d *Differential) trustedRun(secret string, openInInitial bool) (string, bool, error) {
	locs := reMismatchDisplay.FindAllStringSubmatchIndex(d.harness, -1)
	if len(locs) != 1 {
		return "", false, fmt.Errorf("differential harness must contain exactly one `$display(\"Mismatches: %%d in %%d samples\", ...)` statement, found %d", len(locs))
	}
	l := locs[0]
	errs, samples := d.harness[l[2]:l[3]], d.harness[l[4]:l[5]]
	// The sample monitor goes after the verdict statement (before the end
	// of its module), so the statement's offsets stay valid.
	h, sampled := withSampler(d.harness, l[1], samples, openInInitial)
	stmt := fmt.Sprintf(`$display("%s%s mismatches=%%0d samples=%%0d time=%%0d", %s, %s, $time);`,
		verdictPrefix, secret, errs, samples)
	return h[:l[0]] + stmt + h[l[1]:], sampled, nil
}

func (d *Differential) dutReference() (string, error) {
	return RenameModule(d.reference, RefModuleName, d.dut)
}

func (d *Differential) Assemble(candidate string) (string, *screenFinding) { return candidate, nil }

func (d *Differential) ReferenceCandidate() (string, error) {
	return RenameModule(d.reference, RefModuleName, d.dut)
}

var reDiffVerdict = regexp.MustCompile(`^CRUCIBLE-([0-9a-f]+) mismatches=(\d+) samples=(\d+) time=(\d+)$`)

func (d *Differential) Judge(stdout []byte, complete bool, secret string, expected int64) Verdict {
	return judgeCounted(stdout, secret, expected)
}

func judgeCounted(stdout []byte, secret string, expected int64) Verdict {
	last, n := lastLine(stdout, secret)
	if n == 0 {
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: "the harness printed no verdict"}
	}
	m := reDiffVerdict.FindStringSubmatch(last)
	if m == nil || m[1] != secret {
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: "the harness verdict is not the last line of output"}
	}
	if n != 1 {
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: fmt.Sprintf("the harness verdict was printed %d times", n)}
	}
	v := Verdict{Counted: true}
	v.Mismatches, _ = strconv.ParseInt(m[2], 10, 64)
	v.Samples, _ = strconv.ParseInt(m[3], 10, 64)
	v.SimTime, _ = strconv.ParseInt(m[4], 10, 64)
	switch {
	case v.Samples <= 0:
		v.Status, v.Stage, v.Cause = engine.StatusFail, engine.StageNoVerdict, "the harness compared no samples"
	case expected > 0 && v.Samples != expected:
		v.Status, v.Stage = engine.StatusFail, engine.StageNoVerdict
		v.Cause = fmt.Sprintf("the harness compared %d samples, the reference run compared %d", v.Samples, expected)
	case v.Mismatches != 0:
		v.Status, v.Stage = engine.StatusFail, engine.StageMismatch
		v.Cause = fmt.Sprintf("%d mismatches in %d samples", v.Mismatches, v.Samples)
	default:
		v.Status = engine.StatusPass
	}
	return v
}

// ---- module-local completion -------------------------------------------

// Completion is the code-completion contract: the candidate is a module
// body joined to a trusted prefix (the target module's header). Exactly one
// design unit, the target, may result; judging is differential.
type Completion struct {
	Differential
	Prefix string
}

func (c *Completion) Kind() string { return engine.VerifierCompletion }

func (c *Completion) Assemble(body string) (string, *screenFinding) {
	return c.Prefix + "\n" + body, nil
}

// checkUnits: the completed text (prefix and body, preprocessed) must be
// exactly one design unit, the target, ended by its endmodule.
func (c *Completion) checkUnits(toks []token) *screenFinding {
	units, err := designUnits(toks)
	if err != nil {
		return &screenFinding{"completion", "the completion does not end the module: " + err.Error()}
	}
	var names []string
	for _, u := range units {
		names = append(names, u.Name)
	}
	if len(units) != 1 || units[0].Name != c.dut || units[0].Keyword != "module" {
		return &screenFinding{"completion", fmt.Sprintf("the completed text must declare exactly one design unit, %s; it declares %v", c.dut, names)}
	}
	if units[0].End != len(toks)-1 {
		return &screenFinding{"completion", "text after the module's endmodule"}
	}
	return nil
}

func (c *Completion) ReferenceCandidate() (string, error) {
	ref, err := RenameModule(c.reference, RefModuleName, c.dut)
	if err != nil {
		return "", err
	}
	_, body, err := splitHeader(ref, c.dut)
	return body, err
}

// reHeader finds "module NAME ... );" (a non-ANSI header ends with ");" too).
func reHeaderFor(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?s)\bmodule\s+` + regexp.QuoteMeta(name) + `\b.*?\)\s*;`)
}

// splitHeader splits a module's text at the end of its header.
func splitHeader(src, name string) (header, body string, err error) {
	loc := reHeaderFor(name).FindStringIndex(src)
	if loc == nil {
		return "", "", fmt.Errorf("%w: no `module %s (...);` header found", ErrInput, name)
	}
	return src[loc[0]:loc[1]], src[loc[1]:], nil
}

// CompletionPrefix is the trusted prefix of a completion item: the last
// `module <Top> (...);` header in its instruction (VerilogEval
// code-complete prompts end with it), else the reference's header renamed.
func CompletionPrefix(item engine.Item) (string, error) {
	dut := item.Interface.Top
	if dut == "" {
		dut = DefaultDUTName
	}
	code := stripCommentsAndStrings(item.Instruction)
	all := reHeaderFor(dut).FindAllStringIndex(code, -1)
	if len(all) > 0 {
		l := all[len(all)-1]
		return item.Instruction[l[0]:l[1]], nil
	}
	ref, err := RenameModule(item.Reference, RefModuleName, dut)
	if err != nil {
		return "", fmt.Errorf("item %s: completion prefix: %w", item.ItemID, err)
	}
	h, _, err := splitHeader(ref, dut)
	if err != nil {
		return "", fmt.Errorf("item %s: completion prefix: %w", item.ItemID, err)
	}
	return h, nil
}

// ---- self-checking ------------------------------------------------------

// SelfChecking is the RTLLM-style contract: a trusted testbench instantiates
// the candidate directly and prints a configured pass marker when its own
// checks pass. The $display carrying the marker is rewritten to print the
// secret; pass is that line, exactly once, as the last line. Its sample
// count is the number of verdict lines the harness printed (one).
type SelfChecking struct {
	baseContract
	PassMarker string
}

func (s *SelfChecking) Kind() string      { return engine.VerifierSelfChecking }
func (s *SelfChecking) Reference() string { return "" }

func (s *SelfChecking) TrustedHarness(secret string) (string, error) {
	re := regexp.MustCompile(`\$(?:display|write)\s*\(\s*"((?:[^"\\]|\\.)*)"[^;]*;`)
	var hits [][]int
	for _, l := range re.FindAllStringSubmatchIndex(s.harness, -1) {
		if strings.Contains(s.harness[l[2]:l[3]], s.PassMarker) {
			hits = append(hits, l)
		}
	}
	if len(hits) != 1 {
		return "", fmt.Errorf("self-checking harness must print its pass marker %q from exactly one $display, found %d", s.PassMarker, len(hits))
	}
	l := hits[0]
	stmt := fmt.Sprintf(`$display("%s%s pass time=%%0d", $time);`, verdictPrefix, secret)
	return s.harness[:l[0]] + stmt + s.harness[l[1]:], nil
}

func (s *SelfChecking) trustedRun(secret string, _ bool) (string, bool, error) {
	h, err := s.TrustedHarness(secret)
	return h, false, err
}

func (s *SelfChecking) dutReference() (string, error) { return s.reference, nil }

func (s *SelfChecking) Assemble(candidate string) (string, *screenFinding) { return candidate, nil }
func (s *SelfChecking) ReferenceCandidate() (string, error)                { return s.reference, nil }

var reSelfVerdict = regexp.MustCompile(`^CRUCIBLE-([0-9a-f]+) pass time=(\d+)$`)

func (s *SelfChecking) Judge(stdout []byte, complete bool, secret string, expected int64) Verdict {
	last, n := lastLine(stdout, secret)
	m := reSelfVerdict.FindStringSubmatch(last)
	switch {
	case n == 0:
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: "the harness printed no pass verdict"}
	case m == nil || m[1] != secret:
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: "the harness verdict is not the last line of output"}
	case n != 1:
		return Verdict{Status: engine.StatusFail, Stage: engine.StageNoVerdict, Cause: fmt.Sprintf("the harness verdict was printed %d times", n)}
	}
	t, _ := strconv.ParseInt(m[2], 10, 64)
	return Verdict{Status: engine.StatusPass, Samples: 1, SimTime: t, Counted: true}
}

// RenameModule renames the declaration of module `from` to `to` (and
// nothing else), e.g. a VerilogEval RefModule to TopModule.
func RenameModule(src, from, to string) (string, error) {
	re := regexp.MustCompile(`\b(module\s+)` + regexp.QuoteMeta(from) + `\b`)
	code := stripCommentsAndStrings(src)
	locs := re.FindAllStringSubmatchIndex(code, -1)
	if len(locs) != 1 {
		return "", fmt.Errorf("%w: expected one `module %s` declaration, found %d", ErrInput, from, len(locs))
	}
	l := locs[0]
	return src[:l[3]] + to + src[l[1]:], nil
}
