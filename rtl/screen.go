package rtl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Candidate screening runs before anything is compiled. It works on the
// candidate text with comments removed and string literals blanked, so a
// forbidden name inside a comment or a $display string is harmless, while
// the same name as code is caught. A screened candidate fails at stage
// static; screening never needs a simulator.

// allowedSystemTasks is a whitelist: an unknown system task could be a VPI
// extension reaching the file system or the simulator's state, so only
// pure computation, console output and assertions' messages are allowed.
// File I/O, $system, plusargs, dumps and $readmem*/$writemem* are absent,
// and so are $random/$urandom/$dist_*: they share the simulator's global
// seed with the harness's stimulus, so calling them would let a candidate
// steer which stimulus it is tested on.
var allowedSystemTasks = setOf(
	"$display", "$displayb", "$displayh", "$displayo", "$write", "$writeb", "$writeh", "$writeo",
	"$strobe", "$strobeb", "$strobeh", "$strobeo", "$monitor", "$monitorb", "$monitorh", "$monitoro",
	"$monitoron", "$monitoroff", "$time", "$stime", "$realtime", "$timeformat", "$printtimescale",
	"$signed", "$unsigned", "$clog2", "$bits", "$size", "$high", "$low", "$left", "$right",
	"$increment", "$dimensions", "$unpacked_dimensions", "$countones", "$countbits", "$onehot", "$onehot0", "$isunknown",
	"$error", "$warning", "$info", "$sformat", "$sformatf", "$psprintf", "$rtoi", "$itor", "$realtobits",
	"$bitstoreal", "$shortrealtobits", "$bitstoshortreal", "$cast", "$ln", "$log10", "$exp", "$sqrt",
	"$pow", "$floor", "$ceil", "$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$hypot",
	"$sinh", "$cosh", "$tanh", "$asinh", "$acosh", "$atanh", "$abs", "$past", "$rose", "$fell", "$stable",
	"$changed", "$sampled", "$typename",
)

// runEnders end the simulation; every contract forbids them in candidates
// because the harness alone decides when the run (and so its verdict) ends.
var runEnders = setOf("$finish", "$stop", "$exit", "$fatal")

// allowedDirectives are compiler directives with no reach outside the
// candidate's own text (the candidate is always the last file compiled, so
// its macros cannot redefine the harness's). `include would read other files
// (the harness source holds the secret), `line forges locations.
var allowedDirectives = setOf("timescale", "default_nettype", "define", "undef", "undefineall",
	"ifdef", "ifndef", "elsif", "else", "endif", "celldefine", "endcelldefine", "resetall",
	"unconnected_drive", "nounconnected_drive")
var forbiddenDirectives = setOf("include", "line", "pragma", "begin_keywords", "end_keywords")

// forbiddenKeywords reach into other scopes or change elaboration globally.
var forbiddenKeywords = setOf("bind", "config", "library", "design")

var (
	reToken   = regexp.MustCompile("\\$[A-Za-z_][A-Za-z0-9_$]*|`[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_$]*")
	reDecl    = regexp.MustCompile(`\b(module|macromodule|program|interface|package|primitive|class|checker)\s+(?:automatic\s+|static\s+)?\\?([A-Za-z_][A-Za-z0-9_$]*)`)
	reTaskDef = regexp.MustCompile(`\b(task|function)\s+(?:automatic\s+|static\s+)?(?:[A-Za-z_][A-Za-z0-9_$]*(?:\s*\[[^\]]*\])*\s+)*?([A-Za-z_][A-Za-z0-9_$]*)\s*[(;]`)
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// stripCommentsAndStrings blanks comments and the contents of string
// literals, keeping newlines so offsets stay meaningful.
func stripCommentsAndStrings(src string) string {
	b := []byte(src)
	out := make([]byte, len(b))
	copy(out, b)
	for i := 0; i < len(b); {
		switch {
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				out[i] = ' '
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			i += 2
			for i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/') {
				if b[i] != '\n' {
					out[i] = ' '
				}
				i++
			}
			if i < len(b) {
				out[i], out[i+1] = ' ', ' '
				i += 2
			}
		case b[i] == '"':
			i++
			for i < len(b) && b[i] != '"' && b[i] != '\n' {
				if b[i] == '\\' && i+1 < len(b) {
					out[i] = ' '
					i++
				}
				out[i] = ' '
				i++
			}
			i++
		default:
			i++
		}
	}
	return string(out)
}

// harnessNames are the names a candidate must neither define nor reach:
// modules (and other design units) the harness or reference defines,
// instance names, named blocks and tasks/functions of the trusted text.
// Verilog resolves a hierarchical name's first element upwards through the
// instance tree (IEEE 1800 23.8), so from inside the candidate `stim1.clk`
// or `tb.x` reaches harness state; task calls also resolve upwards.
type harnessNames struct {
	units  map[string]bool // design units defined by trusted text
	scopes map[string]bool // first elements of hierarchical names a candidate may not use
	tasks  map[string]bool // harness tasks/functions a candidate may not call
}

func collectHarnessNames(trusted ...string) harnessNames {
	h := harnessNames{units: map[string]bool{}, scopes: setOf("$root", "$unit"), tasks: map[string]bool{}}
	type src struct {
		code string
		toks [][]int
	}
	var srcs []src
	// One token scan per source instead of several backtracking regexps:
	// this runs once per item and sits on the per-task path.
	for _, t := range trusted {
		code := stripCommentsAndStrings(t)
		srcs = append(srcs, src{code, reToken.FindAllStringIndex(code, -1)})
	}
	for _, sr := range srcs {
		code, toks := sr.code, sr.toks
		word := func(i int) string { return code[toks[i][0]:toks[i][1]] }
		for i := 0; i < len(toks); i++ {
			switch word(i) {
			case "module", "macromodule", "program", "interface", "package", "primitive", "class", "checker":
				j := i + 1
				for j < len(toks) && (word(j) == "automatic" || word(j) == "static") {
					j++
				}
				if j < len(toks) {
					h.units[word(j)] = true
					h.scopes[word(j)] = true
				}
			case "begin", "fork":
				if nextNonSpace(code, toks[i][1]) == ':' && i+1 < len(toks) {
					h.scopes[word(i+1)] = true
				}
			case "task", "function":
				// The name is the last identifier before the first '(' or ';'.
				for j := i + 1; j < len(toks) && j < i+12; j++ {
					if c := nextNonSpace(code, toks[j][1]); c == '(' || c == ';' {
						h.tasks[word(j)] = true
						h.scopes[word(j)] = true
						break
					}
				}
			}
		}
	}
	// Instances: "<unit> [#(...)] <name> [range] (".
	for _, sr := range srcs {
		code, toks := sr.code, sr.toks
		for i := 0; i+1 < len(toks); i++ {
			if !h.units[code[toks[i][0]:toks[i][1]]] {
				continue
			}
			j := i + 1
			if nextNonSpace(code, toks[i][1]) == '#' {
				end := skipParens(code, toks[i][1])
				for j < len(toks) && toks[j][0] < end {
					j++
				}
			}
			if j >= len(toks) {
				continue
			}
			if c := nextNonSpace(code, toks[j][1]); c == '(' || c == '[' {
				h.scopes[code[toks[j][0]:toks[j][1]]] = true
			}
		}
	}
	return h
}

// skipParens returns the offset just past the parenthesised group that
// starts at the first '(' at or after i (len(s) if unbalanced).
func skipParens(s string, i int) int {
	for i < len(s) && s[i] != '(' {
		i++
	}
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// screenFinding is why a candidate was screened out.
type screenFinding struct{ Rule, Detail string }

func (f screenFinding) Error() string { return f.Rule + ": " + f.Detail }

// screen applies the rules common to every contract. dut is the module the
// candidate must define; it is exempt from the unit-collision rule.
func screen(code string, maxBytes int, names harnessNames, dut string) *screenFinding {
	if len(code) > maxBytes {
		return &screenFinding{"size", fmt.Sprintf("candidate is %d bytes, limit %d", len(code), maxBytes)}
	}
	if strings.IndexByte(code, 0) >= 0 {
		return &screenFinding{"binary", "candidate contains NUL bytes"}
	}
	stripped := stripCommentsAndStrings(code)
	var bad []string
	add := func(s string) {
		bad = append(bad, s)
	}
	// Tokens that are followed by "." or "::" start a hierarchical/scoped name.
	locs := reToken.FindAllStringIndex(stripped, -1)
	usesMacros := strings.Contains(stripped, "`define")
	if strings.Contains(stripped, "``") {
		add("macro token pasting (``) is not allowed")
	}
	localTasks := map[string]bool{}
	for _, m := range reTaskDef.FindAllStringSubmatch(stripped, -1) {
		localTasks[m[2]] = true
	}
	for _, loc := range locs {
		tok := stripped[loc[0]:loc[1]]
		// Skip identifiers that are a member/port name: ".name" after a dot.
		prev := prevNonSpace(stripped, loc[0])
		switch {
		case tok[0] == '$':
			if runEnders[tok] {
				add("run-ending task " + tok)
			} else if !allowedSystemTasks[tok] {
				add("system task " + tok + " is not allowed")
			}
		case tok[0] == '`':
			d := tok[1:]
			if !allowedDirectives[d] && !forbiddenDirectives[d] && nextNonSpace(stripped, loc[1]) == '.' {
				add("macro " + tok + " used as a hierarchical prefix")
			}
			if forbiddenDirectives[d] {
				add("directive " + tok + " is not allowed")
			} else if !allowedDirectives[d] && strings.HasPrefix(d, "__") {
				// `__FILE__ / `__LINE__ leak nothing but are never needed.
				add("directive " + tok + " is not allowed")
			}
		default:
			if prev == '.' {
				continue
			}
			if forbiddenKeywords[tok] {
				add("keyword " + tok + " is not allowed")
				continue
			}
			// Naming a trusted design unit at all (most plainly, wrapping
			// RefModule inside TopModule) would let the candidate pass on
			// the reference's outputs.
			if names.units[tok] && tok != dut {
				add("uses harness/reference module " + tok)
			}
			next := nextNonSpace(stripped, loc[1])
			if names.scopes[tok] && tok != dut && (next == '.' || strings.HasPrefix(strings.TrimLeft(stripped[loc[1]:], " \t\r\n"), "::")) {
				add("hierarchical reference into the harness via " + tok)
			}
			if names.tasks[tok] && !localTasks[tok] && (next == '(' || next == ';') {
				add("call of harness task " + tok)
			}
			// A macro can assemble a harness path out of sight of the
			// "name." rule (`M(tb) with `define M(s) s.x), so a candidate
			// defining macros may not mention harness scopes at all.
			if usesMacros && names.scopes[tok] && tok != dut {
				add("harness scope name " + tok + " used in a candidate that defines macros")
			}
		}
	}
	for _, m := range reDecl.FindAllStringSubmatch(stripped, -1) {
		if names.units[m[2]] && m[2] != dut {
			add(fmt.Sprintf("%s %s collides with a harness module", m[1], m[2]))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	bad = dedupSorted(bad)
	return &screenFinding{"forbidden", strings.Join(bad, "; ")}
}

func prevNonSpace(s string, i int) byte {
	for i--; i >= 0; i-- {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func nextNonSpace(s string, i int) byte {
	for ; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
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

// countModules returns the design units a text declares, in order.
func countModules(code string) []string {
	var out []string
	for _, m := range reDecl.FindAllStringSubmatch(stripCommentsAndStrings(code), -1) {
		out = append(out, m[2])
	}
	return out
}
