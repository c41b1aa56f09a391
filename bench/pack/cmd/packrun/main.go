// Command packrun runs the pack pipeline end to end (render, tokenise, pack,
// write Parquet) on a corpus and reports wall time, tokens/s, peak RSS and
// fill as one JSON line — the end-to-end benchmark of issue 6:
//
//	go run ./bench/pack/cmd/gencorpus --out /tmp/traj.jsonl
//	go build -o /tmp/packrun ./bench/pack/cmd/packrun
//	/tmp/packrun --in /tmp/traj.jsonl --out /tmp/packed --seq-len 32768
//
// It does what `crucible pack` does (same pack.Run) without the CLI.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/ops/pack"
)

func main() {
	cfg := pack.DefaultConfig()
	in := flag.String("in", "", "trajectory JSONL/Parquet (required)")
	out := flag.String("out", "", "output directory (required)")
	flag.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "cl100k_base|o200k_base|tokenizer.json")
	flag.IntVar(&cfg.SeqLen, "seq-len", cfg.SeqLen, "B")
	flag.StringVar(&cfg.Layout, "layout", cfg.Layout, "megatron|trl")
	flag.StringVar(&cfg.Algorithm, "algorithm", cfg.Algorithm, "bfd|ffs|none")
	flag.IntVar(&cfg.Workers, "workers", 0, "tokenising goroutines (0: GOMAXPROCS)")
	audit := flag.Bool("audit", false, "audit the output afterwards (timed separately)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the pack run here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "packrun: --in and --out are required")
		os.Exit(2)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(3 << 30) // collect before the heap doubles past the 4 GiB target
	}
	os.RemoveAll(*out)
	start := time.Now()
	m, err := pack.Run(context.Background(), cfg, []string{*in}, *out, slog.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, "packrun:", err)
		os.Exit(1)
	}
	pprof.StopCPUProfile()
	wall := time.Since(start).Seconds()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	st, _ := os.Stat(*in)
	res := map[string]any{
		"input_bytes": st.Size(), "wall_s": wall, "cores": runtime.GOMAXPROCS(0),
		"tokens_total": m.Counts.TokensPacked + m.Counts.TokensDropped, "tokens_packed": m.Counts.TokensPacked,
		"tokens_per_s":   float64(m.Counts.TokensPacked+m.Counts.TokensDropped) / wall,
		"input_mb_per_s": float64(st.Size()) / 1e6 / wall,
		"peak_rss_mib":   ru.Maxrss / 1024, "fill": m.FillRatio, "rows": m.Counts.Rows,
		"samples": m.Counts.SamplesIn, "dropped": m.Counts.Dropped, "seq_len": cfg.SeqLen, "layout": cfg.Layout,
	}
	if *audit {
		t := time.Now()
		rep, err := pack.Audit(context.Background(), []string{*in}, *out, cfg.Workers, slog.Default())
		res["audit_s"] = time.Since(t).Seconds()
		res["audit_ok"] = err == nil
		if rep != nil {
			res["audit_problems"] = rep.ProblemCount
		}
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}
