package gates

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/vlog"
	"github.com/crucible-data/crucible/rtl"
)

// staticGate checks format, size, interface preservation and leakage
// without running any tool.
type staticGate struct{ cfg StaticConfig }

func (g *staticGate) Name() string { return GateStatic }

func (g *staticGate) Check(_ context.Context, cands []*Candidate) error {
	for _, c := range cands {
		g.check(c)
	}
	return nil
}

func (g *staticGate) check(c *Candidate) {
	it := &c.Item
	switch {
	case it.ItemID == "" || it.ParentID == "" || it.LineageID == "" || it.Route == "" || it.Operator == "":
		c.reject(GateStatic, ReasonFormat, "item_id, parent_id, lineage_id, route and operator must all be set on a derived item")
		return
	case strings.TrimSpace(it.Reference) == "":
		c.reject(GateStatic, ReasonNoReference, "the item has no reference solution (route "+it.Route+")")
		return
	case strings.TrimSpace(it.Verifier.Harness) == "":
		c.reject(GateStatic, ReasonFormat, "verifier.harness is empty")
		return
	}
	if n := len(it.Instruction); n < g.cfg.MinInstructionBytes || n > g.cfg.MaxInstructionBytes {
		c.reject(GateStatic, ReasonSize, fmt.Sprintf("instruction is %d bytes (want %d..%d)", n, g.cfg.MinInstructionBytes, g.cfg.MaxInstructionBytes))
		return
	}
	if n := len(it.Reference); n > g.cfg.MaxReferenceBytes {
		c.reject(GateStatic, ReasonSize, fmt.Sprintf("reference is %d bytes (limit %d)", n, g.cfg.MaxReferenceBytes))
		return
	}
	if it.Domain == engine.DomainRTL {
		// Balanced structure only: whether it compiles is the audit's question.
		toks, err := vlog.Lex(it.Reference)
		if err != nil {
			c.reject(GateStatic, ReasonFormat, "reference: "+err.Error())
			return
		}
		if !strings.Contains(vlog.Normalized(toks), "module "+rtl.RefModuleName) {
			c.reject(GateStatic, ReasonFormat, "reference declares no module "+rtl.RefModuleName)
			return
		}
	}
	if it.Domain == engine.DomainKernel && it.Verifier.Top != "" && !strings.Contains(it.Reference, it.Verifier.Top) {
		c.reject(GateStatic, ReasonFormat, "reference does not mention its entry point "+it.Verifier.Top)
		return
	}
	if c.Parent != nil && claimsSameInterface(it) && (len(c.Parent.Interface.Ports) > 0 || len(c.Parent.Interface.Args) > 0) {
		same := evolve.SamePorts(it.Interface, c.Parent.Interface)
		if it.Domain == engine.DomainKernel {
			same = evolve.SameContract(it.Interface, c.Parent.Interface)
		}
		if !same {
			c.reject(GateStatic, ReasonInterfaceChanged, fmt.Sprintf("operator %s claims to preserve the interface, but it differs from the parent's: %s vs %s",
				it.Operator, portList(it.Interface), portList(c.Parent.Interface)))
			return
		}
	}
	inherited := ""
	if c.Parent != nil {
		inherited = c.Parent.Instruction
	}
	if f, ex := LeakFraction(it.Instruction, it.Reference, inherited, g.cfg.LeakNGram); f > g.cfg.MaxLeakFraction {
		c.reject(GateStatic, ReasonLeakage, fmt.Sprintf("%.0f%% of the reference's %d-token sequences appear in the instruction (bound %.0f%%), e.g. %q",
			100*f, g.cfg.LeakNGram, 100*g.cfg.MaxLeakFraction, ex))
	}
}

func claimsSameInterface(it *engine.Item) bool {
	if it.Route == engine.RouteSolutionFirst || it.Route == engine.RouteInstructionFirst {
		return true
	}
	return evolve.ClaimsSameInterface(it.Operator)
}

func portList(i engine.Interface) string {
	var ps []string
	for _, p := range i.Ports {
		ps = append(ps, fmt.Sprintf("%s:%s:%d", p.Name, p.Direction, p.Width))
	}
	for _, a := range i.Args {
		ps = append(ps, fmt.Sprintf("%s:%s:%s%v", a.Name, a.Role, a.DType, a.Shape))
	}
	return strings.Join(ps, ",")
}

var reLeakToken = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_$]*|[0-9]*'[sS]?[bBoOdDhH][0-9a-fA-FxXzZ_]+|[0-9]+|[^\sA-Za-z0-9_]`)

// LeakFraction returns the share of the reference's token n-grams (comments
// dropped) that occur in the instruction but not in inherited (the parent's
// instruction: a seed's spec may quote its calling convention, and the
// evolved text inherits it), and one leaked n-gram as an example.
func LeakFraction(instruction, reference, inherited string, n int) (float64, string) {
	code := reference
	if toks, err := vlog.Lex(reference); err == nil {
		code = vlog.Normalized(toks)
	}
	ref := reLeakToken.FindAllString(code, -1)
	ins := reLeakToken.FindAllString(instruction, -1)
	if len(ref) < n || len(ins) < n {
		return 0, ""
	}
	have := map[string]bool{}
	for i := 0; i+n <= len(ins); i++ {
		have[strings.Join(ins[i:i+n], " ")] = true
	}
	inh := reLeakToken.FindAllString(inherited, -1)
	for i := 0; i+n <= len(inh); i++ {
		delete(have, strings.Join(inh[i:i+n], " "))
	}
	hit, total, ex := 0, 0, ""
	for i := 0; i+n <= len(ref); i++ {
		g := strings.Join(ref[i:i+n], " ")
		total++
		if have[g] {
			hit++
			if ex == "" {
				ex = g
			}
		}
	}
	return float64(hit) / float64(total), ex
}
