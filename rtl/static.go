package rtl

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/crucible-data/crucible/engine"
)

// The static check judges what the tools see, not the text: the candidate
// is run through Icarus's own preprocessor (ivlpp, alone, in its own
// sandboxed job directory) so includes, macro bodies and token pasting are
// resolved exactly as a compiler resolves them, and the result is lexed
// with a real lexer (escaped identifiers, strings, comments). The
// preprocessed text is also what gets compiled, so no second preprocessor
// (Verilator's) can read it differently. What the check cannot see — a
// reference to a module or a hierarchical name the candidate does not
// define — the candidate's own elaboration catches: its simulation contains
// nothing but the candidate and a driver with an unguessable name (see
// classifyReplayBuild).

const candidateFileName = "candidate.sv"

var (
	ivlppOnce sync.Once
	ivlppPath string
	ivlppErr  error
)

var reIvlppPath = regexp.MustCompile(`preprocess:\s+(\S*ivlpp)\b`)

// ivlpp finds Icarus's preprocessor the way the iverilog driver runs it.
func ivlpp() (string, error) {
	ivlppOnce.Do(func() {
		ti := probeTool("iverilog")
		if ti.Err != "" {
			ivlppErr = fmt.Errorf("%s", ti.Err)
			return
		}
		dir, err := os.MkdirTemp("", "crucible-ivlpp-probe-*")
		if err != nil {
			ivlppErr = err
			return
		}
		defer os.RemoveAll(dir)
		empty := filepath.Join(dir, "empty.v")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			ivlppErr = err
			return
		}
		out, _ := exec.Command(ti.Path, "-v", "-E", "-o", filepath.Join(dir, "out.v"), empty).CombinedOutput()
		m := reIvlppPath.FindSubmatch(out)
		if m == nil {
			ivlppErr = fmt.Errorf("cannot find Icarus's preprocessor (ivlpp) in `iverilog -v -E` output")
			return
		}
		ivlppPath = string(m[1])
	})
	return ivlppPath, ivlppErr
}

// allowedSystemTasks is a whitelist: an unknown system task could be a VPI
// extension reaching the file system or the simulator's state, so only
// pure computation, console output and assertions' messages are allowed.
// File I/O, $system, plusargs, dumps and $readmem*/$writemem* are absent,
// and so are $random/$urandom/$dist_* (in a self-checking harness run they
// share the global seed with the stimulus), $root/$unit (names outside the
// design), Verilator's $c, and $timeformat (global formatting state).
var allowedSystemTasks = setOf(
	"$display", "$displayb", "$displayh", "$displayo", "$write", "$writeb", "$writeh", "$writeo",
	"$strobe", "$strobeb", "$strobeh", "$strobeo", "$monitor", "$monitorb", "$monitorh", "$monitoro",
	"$monitoron", "$monitoroff", "$time", "$stime", "$realtime", "$printtimescale",
	"$signed", "$unsigned", "$clog2", "$bits", "$size", "$high", "$low", "$left", "$right",
	"$increment", "$dimensions", "$unpacked_dimensions", "$countones", "$countbits", "$onehot", "$onehot0", "$isunknown",
	"$error", "$warning", "$info", "$sformat", "$sformatf", "$psprintf", "$rtoi", "$itor", "$realtobits",
	"$bitstoreal", "$shortrealtobits", "$bitstoshortreal", "$cast", "$ln", "$log10", "$exp", "$sqrt",
	"$pow", "$floor", "$ceil", "$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$hypot",
	"$sinh", "$cosh", "$tanh", "$asinh", "$acosh", "$atanh", "$abs", "$past", "$rose", "$fell", "$stable",
	"$changed", "$sampled", "$typename",
)

// runEnders end the simulation; the driver (or the harness) alone decides
// when a run ends.
var runEnders = setOf("$finish", "$stop", "$exit", "$fatal")

// allowedDirectives may remain after preprocessing; they reach nothing
// outside the candidate's text. `line is checked separately: the
// preprocessor marks every file it reads with one, so a `line naming any
// file but the candidate's is an `include (or a forged location).
var allowedDirectives = setOf("`timescale", "`default_nettype", "`celldefine", "`endcelldefine", "`resetall",
	"`unconnected_drive", "`nounconnected_drive")

// forbiddenKeywords: force/release override nets (a candidate's own input
// ports are nets it shares with whoever drives them), bind and config reach
// into other scopes or change elaboration.
var forbiddenKeywords = setOf("force", "release", "bind", "config")

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// screenFinding is why a candidate failed the static check.
type screenFinding struct{ Rule, Detail string }

func (f screenFinding) Error() string { return f.Rule + ": " + f.Detail }

// precheck covers what needs no tool: size, NUL bytes, encoding.
func precheck(code string, maxBytes int) *screenFinding {
	if len(code) > maxBytes {
		return &screenFinding{"size", fmt.Sprintf("candidate is %d bytes, limit %d", len(code), maxBytes)}
	}
	if strings.IndexByte(code, 0) >= 0 {
		return &screenFinding{"binary", "candidate contains NUL bytes"}
	}
	if !utf8.ValidString(code) {
		return &screenFinding{"encoding", "candidate is not valid UTF-8"}
	}
	return nil
}

var reUndefinedMacro = regexp.MustCompile("macro (\\S+) undefined")

// preprocess runs ivlpp -L on the candidate alone in a fresh sandboxed
// directory. It returns the preprocessed text, or a finding (the candidate
// does not preprocess), or an outcome for an infrastructure failure.
func (v *Verifier) preprocess(ctx context.Context, code string) (string, *screenFinding, *jobOutcome, error) {
	pp, err := ivlpp()
	if err != nil {
		o := infraOutcome(engine.StageToolchainMissing, "preprocessor: "+err.Error())
		return "", nil, &o, nil
	}
	dir, err := os.MkdirTemp(v.cfg.TempDir, "crucible-rtl-pp-*")
	if err != nil {
		o := infraOutcome(fsStage(err), "job directory: "+err.Error())
		return "", nil, &o, nil
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, candidateFileName), []byte(code), 0o600); err != nil {
		o := infraOutcome(fsStage(err), "writing the candidate: "+err.Error())
		return "", nil, &o, nil
	}
	lim := v.cfg.Limits
	lim.CPUSeconds = lim.CompileCPUSeconds
	res, err := runLimited(ctx, dir, lim, lim.CompileTimeout, []string{pp, "-L", "-o", "pp.v", candidateFileName}, v.hook("preprocess"))
	if err != nil {
		return "", nil, nil, err
	}
	stderr := strings.ReplaceAll(res.Stderr.String(), dir, "<job>")
	if st, cause := classifyProcess(res, "preprocess", lim, lim.CompileTimeout); st != "" {
		if engine.IsInfraStage(st) {
			o := outcomeFor(st, cause, stderr)
			return "", nil, &o, nil
		}
		// The preprocessor crashing or running out of a limit on this
		// text is the text's doing.
		return "", &screenFinding{"preprocess", cause}, nil, nil
	}
	if res.ExitCode != 0 {
		return "", &screenFinding{"preprocess", fmt.Sprintf("the preprocessor rejects the candidate (exit %d): %s", res.ExitCode, firstErrorLine(stderr))}, nil, nil
	}
	if m := reUndefinedMacro.FindAllStringSubmatch(stderr, -1); m != nil {
		var names []string
		for _, x := range m {
			names = append(names, x[1])
		}
		sort.Strings(names)
		return "", &screenFinding{"forbidden", "undefined macro/directive " + strings.Join(dedupSorted(names), ", ") +
			" (a simulator-specific directive such as `systemc_header, or a macro the candidate does not define)"}, nil, nil
	}
	out, err := os.ReadFile(filepath.Join(dir, "pp.v"))
	if err != nil {
		o := infraOutcome(engine.StageWorkerCrash, "preprocessor wrote no output: "+err.Error())
		return "", nil, &o, nil
	}
	return string(out), nil, nil, nil
}

// checkTokens applies the static rules to the preprocessed candidate.
func checkTokens(pre string) *screenFinding {
	toks, err := lexVerilog(pre, lexOptions{})
	if err != nil {
		return &screenFinding{"lex", err.Error()}
	}
	var bad []string
	add := func(t token, s string) { bad = append(bad, fmt.Sprintf("%s (line %d)", s, t.Line)) }
	for i, t := range toks {
		switch t.Kind {
		case tokSysName:
			if runEnders[t.Text] {
				add(t, "run-ending task "+t.Text)
			} else if !allowedSystemTasks[t.Text] {
				add(t, "system task "+t.Text+" is not allowed")
			}
		case tokDirective:
			if t.Text == "`line" {
				if i+2 < len(toks) && toks[i+2].Kind == tokString && toks[i+2].Text != `"`+candidateFileName+`"` {
					add(t, "text from another file ("+toks[i+2].Text+"): `include and `line are not allowed")
				} else if i+2 >= len(toks) || toks[i+2].Kind != tokString {
					add(t, "malformed `line directive")
				}
				continue
			}
			if !allowedDirectives[t.Text] {
				add(t, "directive "+t.Text+" is not allowed")
			}
		case tokIdent:
			if t.Escaped {
				continue // an escaped identifier is a name, never a keyword
			}
			if forbiddenKeywords[t.Text] {
				add(t, "keyword "+t.Text+" is not allowed")
			}
			if (t.Text == "import" || t.Text == "export") && i+1 < len(toks) && toks[i+1].Kind == tokString {
				add(t, "DPI "+t.Text+" is not allowed")
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return &screenFinding{"forbidden", strings.Join(dedupSorted(bad), "; ")}
}

func dedupSorted(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// staticCheck preprocesses and checks a candidate. It returns the text to
// compile (the preprocessed one), a finding, or an infra outcome.
func (v *Verifier) staticCheck(ctx context.Context, code string) (string, *screenFinding, *jobOutcome, error) {
	if f := precheck(code, v.cfg.Limits.MaxCandidateBytes); f != nil {
		return "", f, nil, nil
	}
	pre, f, o, err := v.preprocess(ctx, code)
	if err != nil || f != nil || o != nil {
		return "", f, o, err
	}
	if f := checkTokens(pre); f != nil {
		return "", f, nil, nil
	}
	return pre, nil, nil, nil
}

var (
	reUnknownModule = regexp.MustCompile(`Unknown module type: (\S+)`)
	// Icarus quotes names as ``name''.
	reUnboundHier = regexp.MustCompile("(?:Unable to bind [^`']*|Could not find variable )`+([^'`\\s]*\\.[^'`\\s]*)'")
	reUnknownTask = regexp.MustCompile("(?:Enable of unknown task|No function named) `*([^'`\\s]+)'")
)

// classifyReplayBuild names the stage of a failed candidate-only build:
// an instance of a module the candidate does not define, or a
// hierarchical name that leaves its design, is static (the elaborator saw
// a reference outside the candidate); other failures compile/elaborate.
func classifyReplayBuild(log, dut string) (stage, cause string) {
	if m := reUnknownModule.FindStringSubmatch(log); m != nil && m[1] != dut {
		return engine.StageStatic, "elaboration: the candidate instantiates module " + m[1] + ", which it does not define"
	}
	if m := reUnboundHier.FindStringSubmatch(log); m != nil {
		return engine.StageStatic, "elaboration: hierarchical name " + m[1] + " does not resolve inside the candidate's own design"
	}
	if m := reUnknownTask.FindStringSubmatch(log); m != nil {
		// Task and function names resolve upwards through the hierarchy:
		// one the candidate does not define is a call out of its design.
		return engine.StageStatic, "elaboration: the candidate calls task/function " + m[1] + ", which it does not define"
	}
	return classifyBuildFailure(log), ""
}
