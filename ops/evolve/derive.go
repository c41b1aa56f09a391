package evolve

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/rtl"
)

// DerivedID is the id of a derived item: parent id, "~", operator.
func DerivedID(parent, op string) string { return parent + "~" + op }

func lineage(p engine.Item) string {
	if p.LineageID != "" {
		return p.LineageID
	}
	return p.ItemID
}

// TBSeed is the seed of a derived item's generated testbench: a hash of the
// item id and the configured seed, so every item gets its own stimulus and
// reruns get the same one.
func TBSeed(itemID string, seed int32) int32 {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, itemID)))
	return int32(binary.BigEndian.Uint32(h[:4]) & 0x7fffffff)
}

func shaHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func (e *Evolver) derived(parent engine.Item, route, op string) engine.Item {
	return engine.Item{ItemID: DerivedID(parent.ItemID, op), ParentID: parent.ItemID, LineageID: lineage(parent),
		Domain: parent.Domain, Family: parent.Family, Route: route, Operator: op,
		ReferenceStatus: engine.RefUnverified, Difficulty: parent.Difficulty,
		Provenance: engine.Provenance{Source: "crucible/evolve:" + op + " from " + parent.ItemID, License: parent.Provenance.License,
			IngestTime: time.Unix(0, 0).UTC()}}
}

func seal(it *engine.Item) {
	it.Provenance.InstructionSHA256 = shaHex(it.Instruction)
	it.Provenance.ReferenceSHA256 = shaHex(it.Reference)
	it.Provenance.VerifierSHA256 = shaHex(it.Verifier.Harness)
}

// mutationItem builds the derived task: the mutated reference, an
// instruction from the parent's plus the declared change, and a generated
// differential testbench over the declared (mutated) interface with the
// mutated reference as its golden model.
func (e *Evolver) mutationItem(ctx context.Context, parent engine.Item, parentIface engine.Interface, op Operator, m Mutation) (engine.Item, error) {
	it := e.derived(parent, engine.RouteContractMutation, op.Name)
	iface := m.Interface
	iface.Top = rtl.DefaultDUTName
	opts := rtl.DefaultTBOptions()
	opts.Cycles, opts.Seed = e.cfg.TBCycles, TBSeed(it.ItemID, e.cfg.Seed)
	tb, err := rtl.GenerateDifferentialTB(iface, opts)
	if err != nil {
		return it, fmt.Errorf("testbench: %w", err)
	}
	resp, err := e.gen.Generate(ctx, textgen.Request{Role: textgen.RoleProposal, ItemID: it.ItemID, Family: parent.Family,
		ParentInstruction: parent.Instruction, Change: m.Change, Interface: iface, InterfaceChanged: !SamePorts(parentIface, m.Interface)})
	if err != nil {
		return it, err
	}
	it.Instruction, it.Interface, it.Reference = resp.Text, iface, m.Source
	it.Verifier = engine.Verifier{Kind: engine.VerifierDifferential, Harness: tb, Top: opts.Top}
	seal(&it)
	return it, nil
}

// solutionFirst re-specifies a verified implementation: interface and
// clock/reset contract from extraction, behaviour from the generator;
// reference and verifier are the parent's.
func (e *Evolver) solutionFirst(ctx context.Context, parent engine.Item, parentIface engine.Interface) (engine.Item, error) {
	it := e.derived(parent, engine.RouteSolutionFirst, OpRespecify)
	iface := parentIface
	if parent.Domain == engine.DomainRTL {
		iface.Top = rtl.DefaultDUTName
	}
	resp, err := e.gen.Generate(ctx, textgen.Request{Role: textgen.RoleSpecification, ItemID: it.ItemID, Family: parent.Family,
		ParentInstruction: parent.Instruction, Interface: iface})
	if err != nil {
		return it, err
	}
	it.Instruction, it.Interface, it.Reference, it.Verifier = resp.Text, iface, parent.Reference, parent.Verifier
	seal(&it)
	return it, nil
}

// instructionFirst evolves a specification-only seed: a proposal rewrites
// the instruction, and the implementation role is asked for a reference.
// The template generator cannot write one, so the item leaves with an
// empty reference and the gates reject it (no_reference) unless a model is
// configured.
func (e *Evolver) instructionFirst(ctx context.Context, parent engine.Item) (engine.Item, error) {
	it := e.derived(parent, engine.RouteInstructionFirst, OpReword)
	resp, err := e.gen.Generate(ctx, textgen.Request{Role: textgen.RoleProposal, ItemID: it.ItemID, Family: parent.Family,
		ParentInstruction: parent.Instruction, Change: "Restate the task for a fresh implementation; the behaviour is unchanged.", Interface: parent.Interface})
	if err != nil {
		return it, err
	}
	it.Instruction, it.Interface, it.Verifier = resp.Text, parent.Interface, parent.Verifier
	impl, err := e.gen.Generate(ctx, textgen.Request{Role: textgen.RoleImplementation, ItemID: it.ItemID, ParentInstruction: it.Instruction, Interface: parent.Interface})
	if err == nil {
		it.Reference = extractCode(impl.Text)
	} else if !errors.Is(err, textgen.ErrUnsupported) {
		return it, err
	}
	seal(&it)
	return it, nil
}

// extractCode takes the first fenced code block of a model answer, or the whole text.
func extractCode(s string) string {
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			return rest[:j]
		}
	}
	return s
}
