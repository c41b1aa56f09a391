// Command gencorpus writes a synthetic trajectory corpus (JSONL) for the
// packing benchmarks; 1.7e9 bytes of message text is about 540M cl100k tokens:
//
//	go run ./bench/pack/cmd/gencorpus --out /tmp/traj.jsonl --bytes 1700000000
package main

import (
	"os"

	packbench "github.com/crucible-data/crucible/bench/pack"
)

func main() { os.Exit(packbench.GenCorpusMain(os.Args[1:])) }
