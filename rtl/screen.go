package rtl

import "regexp"

// Text helpers for trusted texts (references, prompts): renaming a module,
// finding a header. Candidates are never judged by these; see static.go.

var reDecl = regexp.MustCompile(`\b(module|macromodule|program|interface|package|primitive|class|checker)\s+(?:automatic\s+|static\s+)?\\?([A-Za-z_][A-Za-z0-9_$]*)`)

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

// countModules returns the design units a trusted text declares, in order.
func countModules(code string) []string {
	var out []string
	for _, m := range reDecl.FindAllStringSubmatch(stripCommentsAndStrings(code), -1) {
		out = append(out, m[2])
	}
	return out
}
