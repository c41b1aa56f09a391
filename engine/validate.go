package engine

import (
	"fmt"
	"strings"
	"time"
)

// MaxTextBytes bounds each text part of an item (instruction, reference,
// harness). Larger rows are rejected, never truncated.
const MaxTextBytes = 8 << 20

// FieldError is one problem with one field of a row.
type FieldError struct {
	Field  string
	Reason string // rejection reason code: missing_field, invalid_value, too_large
	Detail string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Detail }

var (
	validDomains   = []string{DomainRTL, DomainKernel}
	validRoutes    = []string{RouteSeed, RouteSolutionFirst, RouteInstructionFirst, RouteContractMutation}
	validRefStatus = []string{RefUnverified, RefVerified, RefFailed, RefUnjudged}
	validVerifiers = []string{VerifierDifferential, VerifierSelfChecking, VerifierCompletion, VerifierKernel}
	validDTypes    = []string{"float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// Normalize fills an item's defaults: route seed, lineage = itself, status
// unverified, and the provenance hashes of its text parts.
func (it *Item) Normalize(ingest time.Time) {
	if it.Route == "" {
		it.Route = RouteSeed
	}
	if it.LineageID == "" {
		if it.ParentID != "" {
			it.LineageID = it.ParentID
		} else {
			it.LineageID = it.ItemID
		}
	}
	if it.ReferenceStatus == "" {
		it.ReferenceStatus = RefUnverified
	}
	it.Provenance.InstructionSHA256 = HashString(it.Instruction)
	it.Provenance.ReferenceSHA256 = HashString(it.Reference)
	it.Provenance.VerifierSHA256 = HashString(it.Verifier.Kind + "\x00" + it.Verifier.Top + "\x00" + it.Verifier.Harness)
	if it.Provenance.IngestTime.IsZero() {
		it.Provenance.IngestTime = ingest.UTC()
	}
}

// Validate returns every problem with the item's fields (nil when valid).
func (it *Item) Validate() []FieldError {
	var errs []FieldError
	add := func(field, reason, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Reason: reason, Detail: fmt.Sprintf(format, args...)})
	}
	switch {
	case it.ItemID == "":
		add("item_id", "missing_field", "required")
	case len(it.ItemID) > 256 || strings.ContainsAny(it.ItemID, "\n\r\t"):
		add("item_id", "invalid_value", "must be at most 256 characters with no control characters")
	}
	if !oneOf(it.Domain, validDomains) {
		if it.Domain == "" {
			add("domain", "missing_field", "required (rtl|kernel)")
		} else {
			add("domain", "invalid_value", "%q is not rtl|kernel", it.Domain)
		}
	}
	if strings.TrimSpace(it.Instruction) == "" {
		add("instruction", "missing_field", "required")
	}
	if it.Route != "" && !oneOf(it.Route, validRoutes) {
		add("route", "invalid_value", "%q is not one of %s", it.Route, strings.Join(validRoutes, "|"))
	}
	if it.ReferenceStatus != "" && !oneOf(it.ReferenceStatus, validRefStatus) {
		add("reference_status", "invalid_value", "%q is not one of %s", it.ReferenceStatus, strings.Join(validRefStatus, "|"))
	}
	for name, text := range map[string]string{"instruction": it.Instruction, "reference": it.Reference, "verifier.harness": it.Verifier.Harness} {
		if len(text) > MaxTextBytes {
			add(name, "too_large", "%d bytes, limit %d", len(text), MaxTextBytes)
		}
	}
	switch {
	case it.Verifier.Kind == "":
		add("verifier.kind", "missing_field", "required (%s)", strings.Join(validVerifiers, "|"))
	case !oneOf(it.Verifier.Kind, validVerifiers):
		add("verifier.kind", "invalid_value", "%q is not one of %s", it.Verifier.Kind, strings.Join(validVerifiers, "|"))
	case it.Domain == DomainRTL && it.Verifier.Kind == VerifierKernel:
		add("verifier.kind", "invalid_value", "kernel verifier on an rtl item")
	case it.Domain == DomainKernel && it.Verifier.Kind != VerifierKernel:
		add("verifier.kind", "invalid_value", "%q verifier on a kernel item", it.Verifier.Kind)
	}
	if it.Domain == DomainRTL && strings.TrimSpace(it.Verifier.Harness) == "" {
		add("verifier.harness", "missing_field", "an rtl item needs its testbench")
	}
	errs = append(errs, it.Interface.validate()...)
	if it.Difficulty < 0 {
		add("difficulty", "invalid_value", "negative")
	}
	if it.Cost < 0 {
		add("cost", "invalid_value", "negative")
	}
	return errs
}

func (in *Interface) validate() []FieldError {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Reason: "invalid_value", Detail: fmt.Sprintf(format, args...)})
	}
	names := map[string]bool{}
	for i, p := range in.Ports {
		f := fmt.Sprintf("interface.ports[%d]", i)
		if p.Name == "" {
			add(f+".name", "required")
		} else if names[p.Name] {
			add(f+".name", "duplicate port %q", p.Name)
		}
		names[p.Name] = true
		if !oneOf(p.Direction, []string{"input", "output", "inout"}) {
			add(f+".direction", "%q is not input|output|inout", p.Direction)
		}
		if p.Width < 1 {
			add(f+".width", "must be >= 1, got %d", p.Width)
		}
	}
	if in.ResetPolarity != "" && !oneOf(in.ResetPolarity, []string{"high", "low"}) {
		add("interface.reset_polarity", "%q is not high|low", in.ResetPolarity)
	}
	if in.ResetKind != "" && !oneOf(in.ResetKind, []string{"sync", "async"}) {
		add("interface.reset_kind", "%q is not sync|async", in.ResetKind)
	}
	if in.Reset != "" && in.ResetPolarity == "" {
		add("interface.reset_polarity", "required when a reset is named")
	}
	if len(in.Ports) > 0 {
		for _, sig := range []struct{ field, name string }{{"interface.clock", in.Clock}, {"interface.reset", in.Reset}} {
			if sig.name != "" && !names[sig.name] {
				add(sig.field, "%q is not one of the ports", sig.name)
			}
		}
	}
	for i, a := range in.Args {
		f := fmt.Sprintf("interface.args[%d]", i)
		if a.Name == "" {
			add(f+".name", "required")
		}
		if !oneOf(a.Role, []string{"input", "output", "scalar"}) {
			add(f+".role", "%q is not input|output|scalar", a.Role)
		}
		if !oneOf(a.DType, validDTypes) {
			add(f+".dtype", "%q is not one of %s", a.DType, strings.Join(validDTypes, "|"))
		}
		for j, d := range a.Shape {
			if d < 1 {
				add(fmt.Sprintf("%s.shape[%d]", f, j), "must be >= 1, got %d", d)
			}
		}
	}
	if in.Tolerance < 0 {
		add("interface.tolerance", "negative")
	}
	return errs
}
