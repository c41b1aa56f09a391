package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// veRow is one VerilogEval problem (spec-to-rtl or code-complete).
type veRow struct {
	ID        string `json:"id" arrow:"id"`
	Source    string `json:"source" arrow:"source"`
	Task      string `json:"task" arrow:"task"`
	Prompt    string `json:"prompt" arrow:"prompt"`
	Ref       string `json:"ref" arrow:"ref"`
	Test      string `json:"test" arrow:"test"`
	Interface string `json:"interface" arrow:"interface"`
}

// VerilogEvalItemID is the item id given to a VerilogEval problem.
func VerilogEvalItemID(task, id string) string {
	if task == "" {
		task = "spec-to-rtl"
	}
	return "verilog-eval/" + task + "/" + id
}

// fromVerilogEval maps a VerilogEval problem onto the item contract: the
// spec is the instruction, RefModule the reference, and the problem's
// testbench (tb instantiating RefModule and TopModule, printing
// "Mismatches: N in M samples") a differential verifier.
func fromVerilogEval(r veRow) engine.Item {
	family := "verilog-eval"
	if r.Task != "" {
		family = "verilog-eval/" + r.Task
	}
	id := ""
	if r.ID != "" {
		id = VerilogEvalItemID(r.Task, r.ID)
	}
	return engine.Item{
		ItemID:      id,
		Domain:      engine.DomainRTL,
		Family:      family,
		Route:       engine.RouteSeed,
		Instruction: r.Prompt,
		Interface:   engine.Interface{Top: "TopModule"},
		Reference:   r.Ref,
		Verifier: engine.Verifier{
			Kind: engine.VerifierDifferential, Harness: r.Test, Top: "tb",
			PassMarker: "Mismatches: 0 in",
		},
		Provenance: engine.Provenance{Source: r.Source, License: "MIT"},
	}
}

// taskJSON is task.json of a task folder: item fields plus source/licence.
type taskJSON struct {
	engine.Item
	License string `json:"license"`
	Source  string `json:"source"`
}

var referenceNames = []string{"reference.sv", "reference.v", "reference.c", "reference.cu", "reference.py"}

// readTaskDir reads a task folder: task.json (item fields), instruction.md,
// the first of reference.{sv,v,c,cu,py}, and testbench.sv as the harness
// unless task.json carries one.
func readTaskDir(dir string) (engine.Item, error) {
	var t taskJSON
	data, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if err != nil {
		return t.Item, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t.Item, fmt.Errorf("task.json: %v", err)
	}
	it := t.Item
	if it.ItemID == "" {
		it.ItemID = filepath.Base(dir)
	}
	if it.Provenance.Source == "" {
		it.Provenance.Source = t.Source
	}
	if it.Provenance.License == "" {
		it.Provenance.License = t.License
	}
	if b, err := os.ReadFile(filepath.Join(dir, "instruction.md")); err == nil && it.Instruction == "" {
		it.Instruction = string(b)
	}
	if it.Reference == "" {
		for _, name := range referenceNames {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				it.Reference = string(b)
				break
			}
		}
	}
	if it.Verifier.Harness == "" {
		if b, err := os.ReadFile(filepath.Join(dir, "testbench.sv")); err == nil {
			it.Verifier.Harness = string(b)
		}
	}
	if it.Domain == "" {
		it.Domain = engine.DomainRTL
	}
	if it.Verifier.Kind == "" && it.Domain == engine.DomainRTL {
		it.Verifier.Kind = engine.VerifierDifferential
	}
	it.Instruction = strings.TrimSpace(it.Instruction) + "\n"
	return it, nil
}
