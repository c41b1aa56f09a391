// Package textgen is the one interface behind every text role of task
// evolution — proposal (the evolved instruction), implementation (a
// reference for a specification-only seed), specification (a new spec from
// a verified implementation) and audit (a judgement of a spec against its
// contract) — with two implementations: deterministic templates (the
// default, used by the demo and the tests) and an OpenAI-compatible
// chat-completions client.
package textgen

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Roles.
const (
	RoleProposal       = "proposal"
	RoleImplementation = "implementation"
	RoleSpecification  = "specification"
	RoleAudit          = "audit"
)

// Errors.
var (
	ErrUnsupported = errors.New("generator does not support this role")
	ErrGenerate    = errors.New("generation failed")
	ErrConfig      = errors.New("generator config")
)

// Request carries what a role needs. Fields a role does not use stay empty.
type Request struct {
	Role              string
	ItemID            string
	Family            string
	ParentInstruction string
	Change            string           // proposal: the declared change, in words
	Interface         engine.Interface // the contract after the change
	InterfaceChanged  bool
	Instruction       string // audit: the instruction under audit
}

// Response is a generated text and what produced it.
type Response struct {
	Text  string
	Model string // "template" for the deterministic generator
}

// Generator produces text for a role.
type Generator interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// Template is the deterministic generator.
type Template struct{}

// Generate implements Generator.
func (Template) Generate(_ context.Context, req Request) (Response, error) {
	switch req.Role {
	case RoleProposal:
		return Response{Text: proposal(req), Model: "template"}, nil
	case RoleSpecification:
		return Response{Text: specification(req), Model: "template"}, nil
	case RoleAudit:
		return Response{Text: audit(req), Model: "template"}, nil
	case RoleImplementation:
		return Response{}, fmt.Errorf("%w: the template generator cannot write an implementation (configure a model)", ErrUnsupported)
	}
	return Response{}, fmt.Errorf("%w: unknown role %q", ErrUnsupported, req.Role)
}

func proposal(req Request) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(req.ParentInstruction, "\n"))
	b.WriteString("\n\n## Revision\n\nThis task revises the specification above. Where the two disagree, the revision below wins; everything it does not mention is unchanged.\n\n")
	b.WriteString("- " + req.Change + "\n")
	if req.InterfaceChanged {
		b.WriteString("\nThe revised interface of `TopModule` is:\n\n")
		b.WriteString(PortTable(req.Interface))
	}
	return b.String()
}

// PortTable renders the ports as a Markdown table.
func PortTable(iface engine.Interface) string {
	var b strings.Builder
	b.WriteString("| Port | Direction | Width |\n|------|-----------|-------|\n")
	for _, p := range iface.Ports {
		fmt.Fprintf(&b, "| `%s` | %s | %d |\n", p.Name, p.Direction, p.Width)
	}
	return b.String()
}

// ArgTable renders kernel arguments and the tolerance as Markdown.
func ArgTable(iface engine.Interface) string {
	var b strings.Builder
	b.WriteString("| Argument | Role | Shape | Type |\n|----------|------|-------|------|\n")
	for _, a := range iface.Args {
		fmt.Fprintf(&b, "| `%s` | %s | %v | %s |\n", a.Name, a.Role, a.Shape, a.DType)
	}
	if iface.Tolerance > 0 {
		fmt.Fprintf(&b, "\nOutputs must match within |got - want| <= %g + %g * |want|.\n", iface.Tolerance, iface.Tolerance)
	}
	return b.String()
}

// ClockResetText states the clock/reset contract in words.
func ClockResetText(iface engine.Interface) string {
	var parts []string
	if iface.Clock != "" {
		parts = append(parts, fmt.Sprintf("All sequential logic is triggered on the rising edge of `%s`.", iface.Clock))
	} else {
		parts = append(parts, "The design is purely combinational (no clock).")
	}
	if iface.Reset != "" {
		level := "active-high"
		if iface.ResetPolarity == "low" {
			level = "active-low"
		}
		kind := "synchronous: it only takes effect at a rising edge of `" + iface.Clock + "`"
		if iface.ResetKind == "async" {
			kind = "asynchronous: it takes effect immediately, without waiting for a clock edge"
		}
		parts = append(parts, fmt.Sprintf("`%s` is an %s %s.", iface.Reset, level, kind))
	}
	return strings.Join(parts, "\n")
}

// specification rebuilds a spec: mechanical parts from the extracted
// interface, the behavioural description carried over from the parent's
// prose (its title, port table and clock/reset sentences dropped).
func specification(req Request) string {
	var b strings.Builder
	fam := req.Family
	if fam == "" {
		fam = "design"
	}
	fmt.Fprintf(&b, "# %s (re-specified from a verified implementation)\n\n", fam)
	if len(req.Interface.Args) > 0 {
		b.WriteString("Implement the kernel with the following arguments, in this order.\n\n")
		b.WriteString(ArgTable(req.Interface))
	} else {
		b.WriteString("Implement a Verilog module named `TopModule` with the following interface.\n\n")
		b.WriteString(PortTable(req.Interface))
		b.WriteString("\n" + ClockResetText(req.Interface) + "\n")
	}
	b.WriteString("\n## Behaviour\n\n")
	for _, line := range strings.Split(req.ParentInstruction, "\n") {
		t := strings.TrimSpace(line)
		low := strings.ToLower(t)
		switch {
		case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "|"),
			strings.Contains(low, "implement a verilog module"), strings.Contains(low, "module named topmodule"),
			strings.Contains(low, "triggered on the rising edge"), strings.Contains(low, "synchronous** reset"),
			strings.Contains(low, "active-high") && strings.Contains(low, "reset"),
			strings.Contains(low, "active-low") && strings.Contains(low, "reset"):
			continue
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// audit checks mechanically that the instruction names every port; the
// answer starts with PASS or FAIL (the same protocol a model is asked for).
func audit(req Request) string {
	var missing []string
	for _, p := range req.Interface.Ports {
		if !strings.Contains(req.Instruction, p.Name) {
			missing = append(missing, p.Name)
		}
	}
	for _, a := range req.Interface.Args {
		if !strings.Contains(req.Instruction, a.Name) {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return "FAIL: the instruction does not name port(s) " + strings.Join(missing, ", ")
	}
	return "PASS: every port is named"
}

// AuditPassed reads an audit answer.
func AuditPassed(text string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(text)), "PASS")
}
