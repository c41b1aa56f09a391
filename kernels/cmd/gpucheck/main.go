// Command gpucheck is the GPU acceptance check behind `make gpu-check`
// (scripts/gpu-check.sh): it runs the cuda backend on the bundled CUDA seed
// tasks with a set of known candidates (correct, wrong, exploits — identity
// store, cache replay, computing only on some repetitions, reading the
// reference's buffers, softmax rows scaled by 1.04 — too much shared memory,
// hidden side-stream work, crash, compile error) and the triton backend on
// KernelBench level-1 problems (correct, wrong, delegation, side stream,
// looking for the reference in its process, cache replay, claiming an
// infrastructure fault, killing its parent), then prints the evidence table
// with timing spread and whether each verdict is the expected one. It exits
// 1 when any verdict differs from its expectation: a forged pass, an
// excused (unjudged) attack, or a false failure.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crucible-data/crucible/cuda"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
)

// expect maps a candidate file's suffix (after "__") to its expected verdict.
// "fail/*" is any candidate failure (the attack's exact stage depends on
// what the device does with it).
var expect = map[string]string{
	"correct":     "pass",
	"triton":      "pass",
	"wrong":       "fail/mismatch",
	"identity":    "fail/exploit",
	"sidestream":  "fail/exploit",
	"delegate":    "fail/exploit",
	"bigshared":   "fail/resource",
	"crash":       "fail/simulate",
	"nocompile":   "fail/compile",
	"scaled":      "fail/mismatch",
	"cachereplay": "fail/*",
	"reponly":     "fail/*",
	"refpeek":     "fail/*",
	"claiminfra":  "fail/simulate",
	"killparent":  "fail/*",
}

// expectItem overrides expect for one item's candidate. KernelBench's ReLU
// draws its inputs with torch.rand (all in [0, 1)), where ReLU is the
// identity: a copy of the input passes the comparison, so the strength
// audit marks the task weak and a correct candidate's pass is unjudged.
var expectItem = map[string]string{
	"kb_level1_19_ReLU/triton": "unjudged/weak_verifier",
}

// matches reports whether verdict got meets want.
func matches(got, want string) bool {
	if stage, ok := strings.CutPrefix(want, "fail/"); ok && stage == "*" {
		return strings.HasPrefix(got, "fail/")
	}
	return got == want
}

func main() {
	kernels.RunWorkerIfRequested()
	seeds := flag.String("seeds", "examples/seeds/kernel", "bundled kernel seed tasks")
	cands := flag.String("cands", "kernels/testdata/gpucheck", "candidates: cuda/<item>__<kind>.cu, triton/<item>__<kind>.py")
	kb := flag.String("kernelbench", ".gpucheck/kernelbench", "KernelBench problem sources <item>.py (copied from ../shared/datasets)")
	out := flag.String("out", "", "write evidence JSON here (optional)")
	trials := flag.Int("trials", 2, "trials per candidate")
	reps := flag.Int("reps", 5, "timed repetitions per side per trial")
	flag.Parse()
	if err := run(*seeds, *cands, *kb, *out, *trials, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(2)
	}
}

func run(seedDir, candDir, kbDir, outPath string, trials, reps int) error {
	printDevice()
	items := map[string]engine.Item{}
	seeds, err := kernels.LoadSeeds(seedDir)
	if err != nil {
		return err
	}
	for _, it := range seeds {
		if it.Verifier.Harness == kernels.BackendCUDA {
			items[it.ItemID] = it
		}
	}
	kbFiles, _ := filepath.Glob(filepath.Join(kbDir, "*.py"))
	for _, f := range kbFiles {
		code, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		id := strings.TrimSuffix(filepath.Base(f), ".py")
		items[id] = engine.Item{ItemID: id, Domain: engine.DomainKernel, Family: "kernelbench", Route: engine.RouteSeed,
			Reference: string(code), Interface: engine.Interface{Tolerance: 1e-4},
			Verifier: engine.Verifier{Kind: engine.VerifierKernel, Harness: kernels.BackendTriton, Top: "ModelNew"}}
	}
	if len(kbFiles) == 0 {
		fmt.Printf("note: no KernelBench problems under %s; triton part skipped\n", kbDir)
	}
	var cs []engine.Candidate
	for _, pat := range []string{"cuda/*.cu", "triton/*.py"} {
		files, _ := filepath.Glob(filepath.Join(candDir, pat))
		sort.Strings(files)
		for _, f := range files {
			base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".cu"), ".py")
			item, kind, ok := strings.Cut(base, "__")
			if !ok {
				return fmt.Errorf("%s: candidate files are named <item>__<kind>", f)
			}
			if _, ok := items[item]; !ok {
				continue
			}
			code, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			cs = append(cs, engine.Candidate{ItemID: item, CandidateID: kind, Code: string(code)})
		}
	}
	cfg := kernels.DefaultConfig()
	cfg.Trials, cfg.Reps, cfg.Warmup = trials, reps, 1 // every call moves fresh inputs to both processes: keep the check short
	cfg.Workers = 1                                    // one GPU, one job at a time: clean timings
	cfg.Timeout = 60 * time.Second
	v, err := kernels.NewVerifier(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer v.Close()
	fmt.Println("backends:")
	for _, b := range kernels.Backends(cfg) {
		fmt.Printf("  %-7s available=%-5v %s\n", b.Name, b.Available, b.Detail)
	}
	start := time.Now()
	evs := make([]engine.Evidence, len(cs))
	for i, c := range cs {
		t0 := time.Now()
		evs[i] = v.Verify(context.Background(), items, c)
		fmt.Fprintf(os.Stderr, "verified %s/%s in %.1fs: %s %s\n", c.ItemID, c.CandidateID, time.Since(t0).Seconds(),
			evs[i].Status, evs[i].FailureStage)
	}
	fmt.Printf("\n%d candidates in %.1fs\n\n", len(cs), time.Since(start).Seconds())
	unexpected := printTable(evs)
	printProvenance(evs)
	if outPath != "" {
		if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err == nil {
			b, _ := json.MarshalIndent(evs, "", " ")
			os.WriteFile(outPath, b, 0o644)
		}
	}
	if unexpected > 0 {
		fmt.Printf("\n%d verdict(s) differ from expectations\n", unexpected)
		os.Exit(1)
	}
	fmt.Println("\nall verdicts as expected")
	return nil
}

func printDevice() {
	drv, err := cuda.DriverVersion()
	if err != nil {
		fmt.Println("cuda driver:", err)
		return
	}
	nv, err := cuda.NVRTCVersion()
	if err != nil {
		nv = err.Error()
	}
	fmt.Printf("cuda driver API %d, NVRTC %s\n", drv, nv)
	if n, err := cuda.DeviceCount(); err == nil {
		for i := 0; i < n; i++ {
			if p, err := cuda.Props(i); err == nil {
				fmt.Printf("device %d: %s %s, %d SMs, %d MHz, L2 %d MiB, %.0f GiB, smem/block opt-in %d KiB\n", i, p.Name, p.Arch(),
					p.Multiprocessors, p.ClockKHz/1000, p.L2Bytes>>20, float64(p.TotalMem)/(1<<30), p.MaxSharedOptin>>10)
			}
		}
	}
	lib := cuda.NewNVML()
	if err := cuda.InitNVML(lib); err != nil {
		fmt.Println("nvml:", err)
		return
	}
	defer lib.Shutdown()
	inv, err := cuda.Inventory(lib)
	if err != nil {
		fmt.Println("nvml inventory:", err)
		return
	}
	for _, g := range inv {
		fmt.Printf("nvml %d: %s %s, SM %d/%d MHz, mem %d MHz, util %d%%, %d procs, ECC uncorrected %d, driver %s\n", g.Index,
			g.Name, g.UUID, g.SMClockMHz, g.MaxSMClockMHz, g.MemClockMHz, g.UtilGPU, len(g.Processes), g.EccUncorrected,
			cuda.DriverVersionNVML(lib))
	}
}

func meas(ev engine.Evidence, name string) float64 {
	m, ok := ev.Measurement(name)
	if !ok {
		return 0
	}
	if m.Kind == "int" {
		return float64(m.Int)
	}
	return m.Float
}

func printTable(evs []engine.Evidence) int {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "item\tcandidate\tverdict\texpected\tmax_abs_err\tref_ms(med)\tcand_ms(med)\tcand_p10-p90\tspread\tspeedup [95% CI]\tgates\tcause")
	unexpected := 0
	for _, ev := range evs {
		got := ev.Status
		if ev.FailureStage != "" {
			got += "/" + ev.FailureStage
		}
		want := expect[ev.CandidateID]
		if w, ok := expectItem[ev.ItemID+"/"+ev.CandidateID]; ok {
			want = w
		}
		mark := "ok"
		if !matches(got, want) {
			mark = "UNEXPECTED " + want
			unexpected++
		}
		var gates []string
		for _, m := range ev.Measurements {
			if strings.HasPrefix(m.Name, "exploit_") {
				gates = append(gates, strings.TrimPrefix(m.Name, "exploit_"))
			}
		}
		cause := ev.Cause
		if len(cause) > 90 {
			cause = cause[:90] + "…"
		}
		speed := "-"
		if _, ok := ev.Measurement("speedup"); ok {
			speed = fmt.Sprintf("%.2fx [%.2f, %.2f]", meas(ev, "speedup"), meas(ev, "speedup_ci_lo"), meas(ev, "speedup_ci_hi"))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.2g\t%.4f\t%.4f\t%.4f-%.4f\t%.1f%%\t%s\t%s\t%s\n", ev.ItemID, ev.CandidateID, got, mark,
			meas(ev, "max_abs_err"), meas(ev, "ref_ms_median"), meas(ev, "cand_ms_median"), meas(ev, "cand_ms_p10"),
			meas(ev, "cand_ms_p90"), 100*meas(ev, "cand_spread"), speed, strings.Join(gates, ","), cause)
	}
	w.Flush()
	return unexpected
}

func printProvenance(evs []engine.Evidence) {
	seen := map[string]bool{}
	fmt.Println("\nprovenance:")
	for _, ev := range evs {
		for _, t := range ev.Provenance.Toolchain {
			k := t.Name + "=" + t.Version
			if !seen[k] {
				seen[k] = true
				fmt.Printf("  %s: %s\n", t.Name, t.Version)
			}
		}
	}
}
