package rtl

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"time"
)

// Simulator names.
const (
	SimIcarus    = "icarus"
	SimVerilator = "verilator"
)

// Limits bound every simulator or compiler process a job starts. They are
// set by the sandbox (internal/sandbox) before the tool's first
// instruction, so they hold for the whole process tree the tool spawns.
//
// # CPU budgets
//
// The time budget that decides a candidate's timeout is CPU time
// (RLIMIT_CPU), and it is relative to the task's reference, because absolute
// CPU time is not load-independent either (SMT siblings and a shared cache
// slow a process down on a busy node) and a task's cost spans four orders of
// magnitude. The rule:
//
//   - The reference is judged first (its self-check, cached per task and
//     toolchain) with the generous budget CPUSeconds (the ceiling). A
//     reference that spends it is unjudged (reference_self_check, the cause
//     names the ceiling): the task cannot be judged on this toolchain.
//   - Its simulation's measured CPU time R is cached with the self-check.
//   - Every candidate of the task gets
//     clamp(ceil(CPUFactor × R), CPUFloorSeconds, CPUSeconds) seconds.
//     Defaults: factor 10, floor 5 s, ceiling 120 s. The floor keeps tiny
//     references (a few ms) from handing candidates a budget that load
//     noise could break; the factor lets a correct but plainer design (a
//     loop where the reference uses a table) pass; the ceiling bounds what a
//     hostile infinite loop costs.
//
// The wall-clock limits are backstops: SimTimeout + 3 × the run's CPU budget
// for a simulation. A process killed by one while it was waiting for a CPU
// (its run-queue delay, not sleep, filled the wall time it spent off a CPU)
// was starved, not slow, and that is an infrastructure failure (retried,
// never a candidate's fail); one killed while sleeping or blocked timed out.
type Limits struct {
	CompileTimeout time.Duration // wall clock for iverilog / verilator / yosys runs
	SimTimeout     time.Duration // wall-clock base of one simulation run (see above)
	// CPUSeconds is the ceiling: the reference's own CPU budget and the most
	// any candidate gets. Inside one run it is that run's RLIMIT_CPU (soft;
	// hard = soft+1).
	CPUSeconds        int
	CPUFloorSeconds   int     // the least CPU budget a candidate gets
	CPUFactor         float64 // candidate budget = factor × the reference's CPU time
	CompileCPUSeconds int     // RLIMIT_CPU of a build (Verilator's C++ compile needs more)
	AddressSpaceBytes int64   // RLIMIT_AS per process
	FileSizeBytes     int64   // RLIMIT_FSIZE: largest file a process may write
	Processes         int     // RLIMIT_NPROC (not enforced for root by the kernel)
	OutputKeepBytes   int     // bytes of each stream kept (half head, half tail)
	OutputKillBytes   int64   // a stream growing past this kills the job (stage resource)
	MaxCandidateBytes int     // candidate text larger than this is screened out (stage static)
}

// Config configures a Verifier. Build it with DefaultConfig and adjust.
type Config struct {
	Simulator string // icarus (default, 4-state, trusted) | verilator (2-state)
	Workers   int    // concurrent jobs; default runtime.NumCPU()
	// Retries is how many times an infrastructure failure (worker crash,
	// disk full) is retried before the verdict becomes unjudged.
	Retries      int
	RetryBackoff time.Duration
	Limits       Limits
	// TempDir is where per-job directories are created ("" = os.TempDir()).
	TempDir string
	// CacheDir, when set, persists reference self-check results per
	// (task, toolchain version) across runs; the in-memory cache is always on.
	CacheDir string
	// TrustTwoState lets a Verilator (2-state) run issue pass verdicts. By
	// default the contracts trust only Icarus for pass: a candidate driving X
	// must not pass where a 4-state simulator would catch it, so Verilator
	// passes are reported unjudged (toolchain_unsupported) while its
	// failures stand.
	TrustTwoState bool
	// Synth adds a Yosys synth cell count (and latch / loop findings) to
	// every candidate that passes.
	Synth bool
	// StrengthAudit measures every task's harness (strength.go) before its
	// candidates are judged, and turns passes on a weak harness unjudged
	// (weak_verifier). StrengthMutants bounds the mutants of each kind
	// (netlist, each registered source) in the audit.
	StrengthAudit   bool
	StrengthMutants int
	IcarusFlags     []string // extra iverilog flags
	VerilatorFlags  []string // extra verilator flags
	Logger          *slog.Logger
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Simulator:    SimIcarus,
		Workers:      runtime.NumCPU(),
		Retries:      2,
		RetryBackoff: 50 * time.Millisecond,
		Limits: Limits{
			CompileTimeout:    300 * time.Second,
			SimTimeout:        60 * time.Second,
			CPUSeconds:        120,
			CPUFloorSeconds:   5,
			CPUFactor:         10,
			CompileCPUSeconds: 120,
			AddressSpaceBytes: 4 << 30,
			FileSizeBytes:     64 << 20,
			Processes:         4096,
			OutputKeepBytes:   1 << 20,
			OutputKillBytes:   16 << 20,
			MaxCandidateBytes: 256 << 10,
		},
		StrengthAudit:   true,
		StrengthMutants: 8,
		IcarusFlags:     nil,
		Logger:          slog.Default(),
	}
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var bad []string
	if c.Simulator != SimIcarus && c.Simulator != SimVerilator {
		bad = append(bad, fmt.Sprintf("simulator %q (want icarus or verilator)", c.Simulator))
	}
	if c.Workers < 1 {
		bad = append(bad, fmt.Sprintf("workers %d (want >= 1)", c.Workers))
	}
	if c.Retries < 0 {
		bad = append(bad, fmt.Sprintf("retries %d (want >= 0)", c.Retries))
	}
	if c.RetryBackoff < 0 {
		bad = append(bad, "retry_backoff is negative")
	}
	if c.StrengthMutants < 0 {
		bad = append(bad, fmt.Sprintf("strength_mutants %d (want >= 0)", c.StrengthMutants))
	}
	l := c.Limits
	if l.CompileTimeout <= 0 {
		bad = append(bad, "limits.compile_timeout must be > 0")
	}
	if l.SimTimeout <= 0 {
		bad = append(bad, "limits.sim_timeout must be > 0")
	}
	if l.CPUSeconds < 1 {
		bad = append(bad, "limits.cpu_seconds must be >= 1")
	}
	if l.CPUFloorSeconds < 1 || l.CPUFloorSeconds > l.CPUSeconds {
		bad = append(bad, fmt.Sprintf("limits.cpu_floor_seconds %d (want 1..cpu_seconds)", l.CPUFloorSeconds))
	}
	if !(l.CPUFactor >= 1) || math.IsInf(l.CPUFactor, 0) {
		bad = append(bad, fmt.Sprintf("limits.cpu_factor %v (want a finite number >= 1)", l.CPUFactor))
	}
	if l.CompileCPUSeconds < 1 {
		bad = append(bad, "limits.compile_cpu_seconds must be >= 1")
	}
	if l.AddressSpaceBytes < 64<<20 {
		bad = append(bad, "limits.address_space_bytes must be >= 64 MiB")
	}
	if l.FileSizeBytes < 1<<20 {
		bad = append(bad, "limits.file_size_bytes must be >= 1 MiB")
	}
	if l.Processes < 1 {
		bad = append(bad, "limits.processes must be >= 1")
	}
	if l.OutputKeepBytes < 1024 {
		bad = append(bad, "limits.output_keep_bytes must be >= 1024")
	}
	if l.OutputKillBytes < int64(l.OutputKeepBytes) {
		bad = append(bad, "limits.output_kill_bytes must be >= output_keep_bytes")
	}
	if l.MaxCandidateBytes < 1 {
		bad = append(bad, "limits.max_candidate_bytes must be >= 1")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// CandidateCPUSeconds is the CPU budget of one candidate simulation of a task
// whose reference simulation took ref CPU time (the rule in Limits' doc).
func (l Limits) CandidateCPUSeconds(ref time.Duration) int {
	b := math.Ceil(l.CPUFactor * ref.Seconds()) // clamp as a float: a huge product must not overflow int
	return max(l.CPUFloorSeconds, int(min(b, float64(l.CPUSeconds))))
}

// budgetRule says how a candidate's budget was derived, for causes.
func (l Limits) budgetRule() string {
	return fmt.Sprintf("%g× the reference's CPU time, floor %ds, ceiling %ds", l.CPUFactor, l.CPUFloorSeconds, l.CPUSeconds)
}

// simWallTimeout is the wall-clock backstop of a simulation with a CPU
// budget of cpuSeconds: a run on a node busy enough to give it a third of a
// core still finishes before it.
func (l Limits) simWallTimeout(cpuSeconds int) time.Duration {
	return l.SimTimeout + 3*time.Duration(cpuSeconds)*time.Second
}
