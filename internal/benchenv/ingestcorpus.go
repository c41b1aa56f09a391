package benchenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// WriteIngestItems writes n valid RTL items, one JSON line each (≈ 2.4 KB:
// the rows of the ingest benchmarks in engine/ingest and cmd/crucible), to
// path and returns the file's size.
func WriteIngestItems(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	filler := strings.Repeat("The counter increments on every rising clock edge while enable is high and wraps at its modulus. ", 21)
	ref := "module RefModule(input clk, input rst, input en, output reg [7:0] q);\n  always @(posedge clk) if (rst) q <= 0; else if (en) q <= q + 1;\nendmodule\n"
	for i := 0; i < n; i++ {
		row := map[string]any{
			"item_id": fmt.Sprintf("item-%07d", i), "domain": "rtl", "family": fmt.Sprintf("fam%d", i%11),
			"instruction": fmt.Sprintf("Task %d. %s", i, filler), "reference": ref,
			"interface": map[string]any{"top": "TopModule"},
			"verifier":  map[string]any{"kind": "differential", "top": "tb", "harness": "module tb; endmodule"},
		}
		line, err := json.Marshal(row)
		if err != nil {
			return 0, err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ProcessCPU is the process's user and system CPU time so far (all its
// threads, DuckDB's included): on a shared machine the CPU a run takes
// varies less than its wall time.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
