// Command dedup benchmarks crucible's near-dedup on a synthetic corpus with
// planted near-duplicates of known true Jaccard similarity.
//
//	go run ./bench/dedup                 # 20,000 × 2 KB, the per-core target workload
//	go run ./bench/dedup -n 1000000      # scale run: streamed corpus, disk backend
//	go run ./bench/dedup -cli -n 1000000 # the `crucible dedup` command on that corpus as JSONL: wall, CPU, peak RSS
//
// It reports docs/s and MB/s for signatures alone, LSH insert+query alone
// (ekzhu/minhash-lsh over band keys) and end to end, recall of planted pairs
// per true-Jaccard bucket, precision of removals against the planted
// families, and peak RSS (VmHWM).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	minhashlsh "github.com/ekzhu/minhash-lsh"

	"github.com/crucible-data/crucible/dedup"
)

func main() {
	n := flag.Int("n", 20000, "documents")
	workers := flag.Int("workers", 1, "signature workers (1 = per-core figure)")
	backend := flag.String("backend", "", "auto|memory|disk (default: memory up to 100k docs, disk above)")
	verify := flag.String("verify", dedup.VerifyExact, "signature|exact")
	perm := flag.Int("perm", 128, "signature slots")
	threshold := flag.Float64("threshold", 0.8, "Jaccard threshold")
	edits := flag.Int("edits-max", 5, "max word edits of a planted near-duplicate")
	eval := flag.Bool("eval", true, "compute recall/precision against planted truth")
	memLimit := flag.Int64("memlimit-mib", 0, "GOMEMLIMIT in MiB (0: unset)")
	cli := flag.Bool("cli", false, "measure the crucible dedup command on the corpus written as JSONL (wall, CPU, peak RSS) instead")
	keep := flag.String("keep", "", "with -cli: work folder to keep (default: a temporary one, removed)")
	flag.Parse()
	if *cli {
		if err := runCLI(*n, *keep); err != nil {
			fmt.Fprintln(os.Stderr, "bench/dedup:", err)
			os.Exit(1)
		}
		return
	}
	if *memLimit > 0 {
		debug.SetMemoryLimit(*memLimit << 20)
	}
	if err := run(*n, *workers, *backend, *verify, *perm, *threshold, *edits, *eval); err != nil {
		fmt.Fprintln(os.Stderr, "bench/dedup:", err)
		os.Exit(1)
	}
}

func run(n, workers int, backend, verify string, perm int, threshold float64, editsMax int, eval bool) error {
	ctx := context.Background()
	sc := dedup.DefaultSynthConfig(n)
	sc.EditsMax = editsMax
	syn := dedup.NewSynth(sc)
	cfg := dedup.DefaultConfig()
	cfg.NumPerm, cfg.Threshold, cfg.Workers, cfg.Verify = perm, threshold, workers, verify
	backends := []string{backend}
	if backend == "" {
		// Small corpora: compare both backends; large: disk only.
		backends = []string{dedup.BackendDisk, dedup.BackendMemory}
		if n > 100_000 {
			backends = []string{dedup.BackendDisk}
		}
	}
	cfg.Backend = strings.Join(backends, "+")
	fmt.Printf("workload: %d docs × ~%d words, %.0f%% planted near-dups (1–%d word edits), %d perms, word %d-grams, threshold %.2f, workers %d, backend %s, verify %s, GOMAXPROCS %d\n",
		n, sc.DocWords, sc.DupFrac*100, editsMax, perm, cfg.NGram, threshold, workers, cfg.Backend, verify, runtime.GOMAXPROCS(0))

	// Small corpora are materialised so generation is not timed; large
	// ones stream from the generator (generation cost included).
	var src dedup.Source = syn
	var bytes int64
	if n <= 200_000 {
		t := time.Now()
		docs := make(dedup.SliceSource, 0, n)
		syn.Scan(ctx, func(d dedup.Doc) error {
			docs = append(docs, d)
			bytes += int64(len(d.Text))
			return nil
		})
		src = docs
		fmt.Printf("generated %d docs (%.1f MB) in %.2fs (not timed below)\n", n, float64(bytes)/1e6, time.Since(t).Seconds())
		signOnly(docs, cfg)
		lshOnly(docs, cfg)
	} else {
		fmt.Println("streaming corpus: generation time is included in end-to-end figures")
	}

	for _, b := range backends {
		cfg.Backend = b
		if err := endToEnd(ctx, syn, src, cfg, workers, eval); err != nil {
			return err
		}
	}
	fmt.Printf("peak RSS (VmHWM): %s\n", peakRSS())
	return nil
}

func endToEnd(ctx context.Context, syn *dedup.Synth, src dedup.Source, cfg dedup.Config, workers int, eval bool) error {
	runtime.GC()
	cpu0 := cpuTime()
	t := time.Now()
	res, err := dedup.Run(ctx, src, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer res.Close()
	el := time.Since(t).Seconds()
	cpu := cpuTime() - cpu0
	st := res.Stats
	fmt.Printf("end to end [%s backend]: %.2fs wall  %.0f docs/s  %.1f MB/s  (%.0f docs/s per worker); CPU %.2fs → %.0f docs per CPU-second\n",
		cfg.Backend, el, float64(st.Docs)/el, float64(st.Bytes)/1e6/el, float64(st.Docs)/el/float64(workers), cpu, float64(st.Docs)/cpu)
	fmt.Printf("  phases: sign+index %.2fs, candidates %.2fs, verify %.2fs; banding %v\n",
		st.SignTime.Seconds(), st.LSHTime.Seconds(), st.VerifyTime.Seconds(), st.Bands)
	fmt.Printf("  exact pairs %d, candidate pairs %d, prefilter pass %d, verified %d, clusters %d, removed %d, spilled %.1f MB\n",
		st.ExactPairs, st.CandidatePairs, st.PrefilterPass, st.VerifiedPairs, st.Clusters, st.Removed, float64(st.RunBytes)/1e6)
	if eval {
		evaluate(syn, res, cfg)
	}
	return nil
}

// signOnly times tokenise + shingle + signature on one goroutine.
func signOnly(docs dedup.SliceSource, cfg dedup.Config) {
	signer := dedup.Signer{K: cfg.NumPerm, Seed: cfg.Seed}
	var tok dedup.Tokens
	var sh, sig []uint64
	opts := dedup.TokenizeOptions{Lang: cfg.Lang, StripComments: cfg.StripComments}
	var bytes int64
	cpu0 := cpuTime()
	t := time.Now()
	for _, d := range docs {
		dedup.Tokenize(d.Text, opts, &tok)
		sh = dedup.AppendShingles(sh[:0], &tok, cfg.Shingle, cfg.NGram, cfg.Seed)
		sig = signer.Sign(sh, sig)
		bytes += int64(len(d.Text))
	}
	el := time.Since(t).Seconds()
	cpu := cpuTime() - cpu0
	fmt.Printf("signatures (1 goroutine): %.0f docs/s  %.1f MB/s wall; %.0f docs per CPU-second\n",
		float64(len(docs))/el, float64(bytes)/1e6/el, float64(len(docs))/cpu)
}

// lshOnly times minhash-lsh insert + index + query over band keys.
func lshOnly(docs dedup.SliceSource, cfg dedup.Config) {
	bands, _ := dedup.ChooseBands(cfg.NumPerm, cfg.Threshold, cfg.FPWeight, cfg.FNWeight)
	signer := dedup.Signer{K: cfg.NumPerm, Seed: cfg.Seed}
	var tok dedup.Tokens
	var sh []uint64
	keys := make([][]uint64, len(docs))
	for i, d := range docs {
		dedup.Tokenize(d.Text, dedup.TokenizeOptions{Lang: cfg.Lang, StripComments: true}, &tok)
		sh = dedup.AppendShingles(sh[:0], &tok, cfg.Shingle, cfg.NGram, cfg.Seed)
		keys[i] = dedup.BandKeys(signer.Sign(sh, nil), bands.B, bands.R, nil)
	}
	cpu0 := cpuTime()
	t := time.Now()
	lsh := minhashlsh.NewMinhashLSH64(bands.B, 0.001)
	for i, k := range keys {
		lsh.Add(int32(i), k)
	}
	lsh.Index()
	hits := 0
	for _, k := range keys {
		hits += len(lsh.Query(k))
	}
	el := time.Since(t).Seconds()
	cpu := cpuTime() - cpu0
	fmt.Printf("LSH insert+index+query (minhash-lsh, %d bands): %.0f docs/s wall, %.0f docs per CPU-second (%d hits incl. self)\n",
		bands.B, float64(len(docs))/el, float64(len(docs))/cpu, hits)
}

// evaluate scores removals against the planted truth. Recall: a planted
// (original, near-duplicate) pair counts as found when both land in one
// cluster. Precision: a removed document is correct when its survivor
// belongs to the same planted family.
func evaluate(syn *dedup.Synth, res *dedup.Result, cfg dedup.Config) {
	t := time.Now()
	planted := syn.Planted(cfg)
	buckets := []float64{0, 0.6, 0.7, 0.8, 0.84, 0.9, 0.95, 1.01}
	total := make([]int, len(buckets))
	found := make([]int, len(buckets))
	sameCluster := func(a, b int) bool {
		da, db := res.Decision(a), res.Decision(b)
		return da.ClusterID != "" && da.ClusterID == db.ClusterID
	}
	strongTotal, strongFound := 0, 0
	for _, p := range planted {
		k := 0
		for k+1 < len(buckets) && p.Jaccard >= buckets[k+1] {
			k++
		}
		total[k]++
		ok := sameCluster(p.Base, p.Dup)
		if ok {
			found[k]++
		}
		if p.Jaccard >= 0.84 {
			strongTotal++
			if ok {
				strongFound++
			}
		}
	}
	fmt.Printf("recall over %d planted pairs with true J ≥ 0.84: %.4f\n", strongTotal, float64(strongFound)/float64(max(strongTotal, 1)))
	var b strings.Builder
	for k := range len(buckets) - 1 {
		if total[k] > 0 {
			fmt.Fprintf(&b, " [%.2f,%.2f): %d/%d=%.3f", buckets[k], min(buckets[k+1], 1), found[k], total[k], float64(found[k])/float64(total[k]))
		}
	}
	fmt.Println("recall per true-J bucket:" + b.String())
	family := func(i int) int {
		if b := syn.Base(i); b >= 0 {
			return b
		}
		return i
	}
	ids := map[string]int{}
	removed, correct := 0, 0
	for i := range res.Len() {
		d := res.Decision(i)
		if d.Kept {
			continue
		}
		removed++
		s, ok := ids[d.SurvivorID]
		if !ok {
			fmt.Sscanf(d.SurvivorID, "doc-%d", &s)
			ids[d.SurvivorID] = s
		}
		if family(i) == family(s) {
			correct++
		}
	}
	fmt.Printf("precision of %d removals against planted families: %.5f  (eval %.1fs)\n", removed,
		float64(correct)/float64(max(removed, 1)), time.Since(t).Seconds())
}

// cpuTime is this process's user+system CPU seconds: a per-core figure
// that other processes on a shared machine do not inflate.
func cpuTime() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "unknown"
}
