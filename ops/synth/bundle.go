package synth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
)

// Bundle is everything needed to execute and verify one task, addressed
// by a sha256 over its canonical encoding (JSON of this struct with ID
// empty: fixed field order, no maps), so every turn names exactly what it
// ran against.
type Bundle struct {
	ID           string           `json:"id"`
	ItemID       string           `json:"item_id"`
	Domain       string           `json:"domain"`
	Family       string           `json:"family"`
	Tag          string           `json:"tag"` // router output, e.g. rtl/sequential
	Instruction  string           `json:"instruction"`
	Interface    engine.Interface `json:"interface"`
	VerifierKind string           `json:"verifier_kind"`
	HarnessTop   string           `json:"harness_top"`
	PassMarker   string           `json:"pass_marker"`
	Harness      string           `json:"harness"`
	Reference    string           `json:"reference"`
	Toolchain    string           `json:"toolchain"` // toolchain profile, e.g. rtl/icarus
	Guidance     []string         `json:"guidance"`  // domain instruction set chosen by the router
}

// NewBundle builds and hashes the bundle of an item.
func NewBundle(it engine.Item, toolchain string) Bundle {
	tag, guidance := Route(it)
	b := Bundle{ItemID: it.ItemID, Domain: it.Domain, Family: it.Family, Tag: tag, Instruction: it.Instruction,
		Interface: it.Interface, VerifierKind: it.Verifier.Kind, HarnessTop: it.Verifier.Top, PassMarker: it.Verifier.PassMarker,
		Harness: it.Verifier.Harness, Reference: it.Reference, Toolchain: toolchain, Guidance: guidance}
	b.ID = b.hash()
	return b
}

func (b Bundle) hash() string {
	b.ID = ""
	data, _ := json.Marshal(b) // cannot fail: strings, ints, bools and slices only
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Check re-hashes the bundle: a bundle whose contents changed since its ID
// was computed is not the environment its turns ran against.
func (b Bundle) Check() error {
	if h := b.hash(); h != b.ID {
		return fmt.Errorf("%w: bundle %s of %s hashes to %s", engine.ErrInput, b.ID, b.ItemID, h)
	}
	return nil
}

// Route is the small router: from the bundle's contract it picks a tag
// and the domain instructions that tell the generator what to reason about.
func Route(it engine.Item) (tag string, guidance []string) {
	switch it.Domain {
	case engine.DomainKernel:
		var bytes int64
		var shapes []string
		for _, a := range it.Interface.Args {
			n := int64(1)
			for _, d := range a.Shape {
				n *= d
			}
			bytes += n * dtypeBytes(a.DType)
			shapes = append(shapes, fmt.Sprintf("%s%v", a.Name, a.Shape))
		}
		guidance = []string{
			"Check every argument's shape and dtype against the contract: " + strings.Join(shapes, ", ") + ".",
			fmt.Sprintf("Memory budget: the arguments take %d bytes; do not allocate more than a small multiple of that.", bytes),
			"Choose the launch configuration (grid, block) so every element is covered exactly once, including ragged edges.",
			"Guard every global memory access with a bounds check.",
		}
		if it.Interface.Tolerance > 0 {
			guidance = append(guidance, fmt.Sprintf("Outputs must match within %g relative/absolute tolerance: mind accumulation order and precision.", it.Interface.Tolerance))
		}
		return "kernel/" + it.Verifier.Kind, guidance
	default:
		guidance = []string{
			"Name the module TopModule and keep the port list exactly as specified.",
			"Avoid inferred latches: assign every output and variable on every path of a combinational always block.",
			"Keep combinational depth reasonable; do not create combinational loops.",
		}
		tag = "rtl/combinational"
		if it.Interface.Clock != "" {
			tag = "rtl/sequential"
			guidance = append(guidance, strings.ReplaceAll(textgen.ClockResetText(it.Interface), "\n", " "),
				"Use non-blocking assignments in clocked blocks and blocking assignments in combinational blocks.")
			if it.Interface.Reset != "" {
				guidance = append(guidance, "Check the reset contract: every register takes its reset value, with the specified polarity and timing.")
			}
		}
		return tag, guidance
	}
}

func dtypeBytes(dt string) int64 {
	switch dt {
	case "float16", "bfloat16", "int16":
		return 2
	case "float64", "int64":
		return 8
	case "int8", "uint8", "bool":
		return 1
	}
	return 4
}

// interfaceText renders the mechanical contract for prompts.
func interfaceText(b *Bundle) string {
	if b.Domain == engine.DomainKernel {
		return textgen.ArgTable(b.Interface)
	}
	return textgen.PortTable(b.Interface)
}
