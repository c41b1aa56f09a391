package kernels

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// referenceFiles maps a backend to the reference file a seed directory holds.
var referenceFiles = map[string]string{BackendCPU: "reference.c", BackendCUDA: "reference.cu", BackendTriton: "reference.py"}

// LoadSeedDir reads one bundled kernel task: task.json (the engine.Item
// fields), instruction.md and the reference file named by the backend in
// verifier.harness. It is what the ingest stage does, kept here so the GPU
// check and tests need no pipeline.
func LoadSeedDir(dir string) (engine.Item, error) {
	var it engine.Item
	raw, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if err != nil {
		return it, fmt.Errorf("%w: %v", ErrTask, err)
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return it, fmt.Errorf("%w: %s: %v", ErrTask, filepath.Join(dir, "task.json"), err)
	}
	ins, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
	if err != nil {
		return it, fmt.Errorf("%w: %v", ErrTask, err)
	}
	it.Instruction = string(ins)
	name, ok := referenceFiles[strings.TrimSpace(it.Verifier.Harness)]
	if !ok {
		return it, fmt.Errorf("%w: %s: verifier.harness %q is not cpu, cuda or triton", ErrTask, dir, it.Verifier.Harness)
	}
	ref, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return it, fmt.Errorf("%w: %v", ErrTask, err)
	}
	it.Reference = string(ref)
	return it, nil
}

// LoadSeeds reads every task directory under root, sorted by name.
func LoadSeeds(root string) ([]engine.Item, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	items := make([]engine.Item, 0, len(names))
	for _, n := range names {
		it, err := LoadSeedDir(filepath.Join(root, n))
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}
