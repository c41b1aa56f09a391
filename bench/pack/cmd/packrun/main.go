// Command packrun is the end-to-end packing benchmark of issue 6: render,
// tokenise, pack and write a trajectory corpus, printing wall time, tokens/s,
// peak RSS and fill as one JSON line.
//
//	go run ./bench/pack/cmd/gencorpus --out /tmp/traj.jsonl
//	go build -o /tmp/packrun ./bench/pack/cmd/packrun
//	/tmp/packrun --in /tmp/traj.jsonl --out /tmp/packed --seq-len 32768 [--audit]
package main

import (
	"os"

	packbench "github.com/crucible-data/crucible/bench/pack"
)

func main() { os.Exit(packbench.PackRunMain(os.Args[1:])) }
