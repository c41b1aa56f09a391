package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/internal/benchenv"
)

// runCLI measures `crucible dedup` itself — the command users run — on the
// synthetic corpus written as one JSONL file (rows {id, n, lang, text}, as
// the end-to-end benchmark in cmd/crucible writes them): wall and CPU time
// of the process and its peak RSS (the kernel's ru_maxrss of the child).
// The corpus is generated before the clock starts.
//
//	go run ./bench/dedup -cli -n 1000000
func runCLI(n int, dir string) error {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "bench-dedup-cli-*"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	bin, err := benchenv.BuildCrucible(dir)
	if err != nil {
		return err
	}
	in := filepath.Join(dir, "corpus.jsonl")
	t := time.Now()
	size, err := writeCorpus(in, n)
	if err != nil {
		return err
	}
	fmt.Printf("corpus: %d docs, %.2f GB of JSONL, generated in %.1fs (not timed)\n", n, float64(size)/1e9, time.Since(t).Seconds())
	out := filepath.Join(dir, "out")
	// --force: with -keep the folder may hold an earlier run's output of
	// the same corpus and flags, which the command would find current and
	// skip; the benchmark times the work.
	cmd := exec.Command(bin, "dedup", "--no-progress", "--force", "--in", in, "--id-field", "id", "--text-field", "text", "--out", out)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t = time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("crucible dedup: %w", err)
	}
	wall := time.Since(t)
	ps := cmd.ProcessState
	cpu := ps.UserTime() + ps.SystemTime()
	var rss int64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // KiB on Linux
	}
	fmt.Printf("crucible dedup (CLI, end to end): %.1fs wall, %.1f CPU-s, %.0f docs/s, %.0f docs per CPU-second, peak RSS %.2f GiB\n",
		wall.Seconds(), cpu.Seconds(), float64(n)/wall.Seconds(), float64(n)/cpu.Seconds(), float64(rss)/(1<<30))
	return nil
}

// writeCorpus streams the synthetic corpus to path.
func writeCorpus(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	syn := dedup.NewSynth(dedup.DefaultSynthConfig(n))
	var size int64
	for i := range n {
		text, _ := json.Marshal(syn.Text(i))
		k, err := fmt.Fprintf(w, `{"id":%q,"n":%d,"lang":"l%d","text":%s}`+"\n", syn.ID(i), i, i%7, text)
		if err != nil {
			f.Close()
			return 0, err
		}
		size += int64(k)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return size, f.Close()
}
