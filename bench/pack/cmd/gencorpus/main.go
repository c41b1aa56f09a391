// Command gencorpus writes a synthetic trajectory corpus (JSONL) for the
// packing benchmarks:
//
//	go run ./bench/pack/cmd/gencorpus --out /tmp/traj.jsonl --bytes 2100000000
//
// 2.1e9 bytes of message text is about 540M cl100k tokens for this mix.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	packbench "github.com/crucible-data/crucible/bench/pack"
)

func main() {
	out := flag.String("out", "", "output JSONL path (required)")
	size := flag.Int64("bytes", 2_100_000_000, "message text bytes to generate (~3.9 bytes per cl100k token)")
	seed := flag.Uint64("seed", 1, "generator seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gencorpus: --out is required")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	start := time.Now()
	st, err := packbench.Generate(f, packbench.GenOptions{TargetBytes: *size, Seed: *seed})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %d trajectories, %d text bytes, %d file bytes in %.1fs\n", *out, st.Trajectories, st.TextBytes, st.FileBytes, time.Since(start).Seconds())
}
