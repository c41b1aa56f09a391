package packbench

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

// PackRunMain runs the pack pipeline end to end (render, tokenise, pack,
// write Parquet) on a corpus and prints wall time, tokens/s, peak RSS and
// fill as one JSON line. It does what `crucible pack` does (the same
// pack.Run) without the CLI; cmd/packrun wraps it.
func PackRunMain(args []string) int {
	fs := flag.NewFlagSet("packrun", flag.ContinueOnError)
	cfg := pack.DefaultConfig()
	in := fs.String("in", "", "trajectory JSONL/Parquet (required)")
	out := fs.String("out", "", "output directory (required)")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "cl100k_base|o200k_base|tokenizer.json")
	fs.IntVar(&cfg.SeqLen, "seq-len", cfg.SeqLen, "B")
	fs.StringVar(&cfg.Layout, "layout", cfg.Layout, "megatron|trl")
	fs.StringVar(&cfg.Algorithm, "algorithm", cfg.Algorithm, "bfd|ffs|none")
	fs.IntVar(&cfg.Workers, "workers", 0, "tokenising goroutines (0: GOMAXPROCS)")
	audit := fs.Bool("audit", false, "audit the output afterwards (timed separately)")
	auditOnly := fs.Bool("audit-only", false, "only audit an existing --out against --in")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the pack run here")
	memLimit := fs.Int64("mem-limit-mib", 0, "soft Go memory limit unless GOMEMLIMIT is set (0: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "packrun: --in and --out are required")
		return 2
	}
	pack.TuneGC()
	if os.Getenv("GOMEMLIMIT") == "" && *memLimit > 0 {
		// collect before the heap doubles past the RSS target
		debug.SetMemoryLimit(*memLimit << 20)
	}
	if *cpuprofile != "" {
		if f, err := os.Create(*cpuprofile); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if *auditOnly {
		t := time.Now()
		rep, err := pack.Audit(context.Background(), []string{*in}, *out, cfg.Workers, slog.Default())
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		res := map[string]any{"audit_s": time.Since(t).Seconds(), "audit_ok": err == nil, "peak_rss_mib": ru.Maxrss / 1024}
		if rep != nil {
			res["audit_problems"], res["samples"], res["rows"], res["tokens"] = rep.ProblemCount, rep.Samples, rep.Rows, rep.Tokens
		}
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		if err != nil {
			return 1
		}
		return 0
	}
	os.RemoveAll(*out)
	start := time.Now()
	m, err := pack.Run(context.Background(), cfg, []string{*in}, *out, slog.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, "packrun:", err)
		return 1
	}
	pprof.StopCPUProfile()
	wall := time.Since(start).Seconds()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	st, _ := os.Stat(*in)
	res := map[string]any{
		"input_bytes": st.Size(), "wall_s": wall, "gomaxprocs": runtime.GOMAXPROCS(0),
		"tokens_total": m.Counts.TokensPacked + m.Counts.TokensDropped, "tokens_packed": m.Counts.TokensPacked,
		"tokens_per_s":   float64(m.Counts.TokensPacked+m.Counts.TokensDropped) / wall,
		"input_mb_per_s": float64(st.Size()) / 1e6 / wall,
		"cpu_user_s":     float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6,
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
	return 0
}

// GenCorpusMain writes a generated corpus; cmd/gencorpus wraps it.
func GenCorpusMain(args []string) int {
	fs := flag.NewFlagSet("gencorpus", flag.ContinueOnError)
	out := fs.String("out", "", "output JSONL path (required)")
	size := fs.Int64("bytes", 1_700_000_000, "message text bytes to generate (~3.15 bytes per cl100k token: 1.7e9 ≈ 540M tokens)")
	seed := fs.Uint64("seed", 1, "generator seed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gencorpus: --out is required")
		return 2
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		return 1
	}
	start := time.Now()
	st, err := Generate(f, GenOptions{TargetBytes: *size, Seed: *seed})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		return 1
	}
	fmt.Printf("wrote %s: %d trajectories, %d text bytes, %d file bytes in %.1fs\n", *out, st.Trajectories, st.TextBytes, st.FileBytes, time.Since(start).Seconds())
	return 0
}
