package packbench

import (
	"os"
	"testing"
)

// TestMain lets the compiled benchmark binary double as the corpus generator
// and the end-to-end driver, so one self-contained file can be shipped to a
// clean machine: PACKBENCH_CMD=gen|run ./packbench.test -- ARGS.
func TestMain(m *testing.M) {
	switch os.Getenv("PACKBENCH_CMD") {
	case "gen":
		os.Exit(GenCorpusMain(os.Args[1:]))
	case "run":
		os.Exit(PackRunMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}
