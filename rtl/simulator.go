package rtl

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// simulator is one backend: how to build a simulation from source files and
// how to run the result. Both steps run through runLimited.
type simulator interface {
	Name() string
	// Tools are the components whose versions go into provenance.
	Tools() []engine.Tool
	// Flags are the fixed build/run flags (no file names), for provenance.
	Flags() []string
	// Check reports a missing or unsupported toolchain as an infra stage.
	Check() (stage, cause string)
	BuildArgs(top string, files []string) []string
	RunArgs(top string) []string
	// FourState reports whether X/Z are simulated (Icarus) or not (Verilator).
	FourState() bool
	// PolledReplay says the replay driver must record the candidate's
	// outputs by polling (after every stimulus and just before every sample
	// instant) instead of from an always block on them: Verilator 5.006
	// does not wake such a block when a submodule's register changes.
	PolledReplay() bool
}

// ToolInfo is what Toolchains reports for one tool.
type ToolInfo struct {
	Name    string
	Path    string // "" when not found
	Version string // first line of its version output
	Err     string // why it is unusable, if it is
}

var (
	toolMu    sync.Mutex
	toolCache = map[string]ToolInfo{}
)

var versionArgs = map[string][]string{
	"iverilog": {"-V"}, "vvp": {"-V"}, "verilator": {"--version"}, "yosys": {"-V"}, "prlimit": {"--version"},
}

// probeTool finds a tool and its version once per process.
func probeTool(name string) ToolInfo {
	toolMu.Lock()
	defer toolMu.Unlock()
	if ti, ok := toolCache[name]; ok {
		return ti
	}
	ti := ToolInfo{Name: name}
	path, err := exec.LookPath(name)
	if err != nil {
		ti.Err = fmt.Sprintf("%s not found on PATH", name)
	} else {
		ti.Path = path
		out, err := exec.Command(path, versionArgs[name]...).CombinedOutput()
		line := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		if err != nil && line == "" {
			ti.Err = fmt.Sprintf("%s %v: %v", name, versionArgs[name], err)
		}
		ti.Version = line
	}
	toolCache[name] = ti
	return ti
}

// Toolchains reports the RTL tools (iverilog, vvp, verilator, yosys,
// prlimit) with their paths and versions, for `crucible doctor`.
func Toolchains() []ToolInfo {
	var out []ToolInfo
	for _, n := range []string{"iverilog", "vvp", "verilator", "yosys", "prlimit"} {
		out = append(out, probeTool(n))
	}
	return out
}

var reIcarusVersion = regexp.MustCompile(`version (\d+)\.(\d+)`)

// icarus is Icarus Verilog: iverilog compiles to a vvp image, vvp runs it.
type icarus struct{ extra []string }

func (icarus) Name() string       { return SimIcarus }
func (icarus) FourState() bool    { return true }
func (icarus) PolledReplay() bool { return false }
func (i icarus) Tools() []engine.Tool {
	return []engine.Tool{{Name: "iverilog", Version: probeTool("iverilog").Version},
		{Name: "vvp", Version: probeTool("vvp").Version}}
}
func (i icarus) Flags() []string {
	return append([]string{"iverilog", "-g2012"}, append(append([]string{}, i.extra...), "vvp", "-n")...)
}
func (i icarus) Check() (string, string) {
	for _, n := range []string{"iverilog", "vvp"} {
		ti := probeTool(n)
		if ti.Err != "" {
			return engine.StageToolchainMissing, ti.Err
		}
		m := reIcarusVersion.FindStringSubmatch(ti.Version)
		if m == nil {
			return engine.StageToolchainUnsupported, fmt.Sprintf("cannot read %s version from %q", n, ti.Version)
		}
		// -g2012 with final blocks, structs and `.*` needs Icarus 11 or newer.
		if major, _ := strconv.Atoi(m[1]); major < 11 {
			return engine.StageToolchainUnsupported, fmt.Sprintf("%s %s.%s is older than 11", n, m[1], m[2])
		}
	}
	return "", ""
}
func (i icarus) BuildArgs(top string, files []string) []string {
	args := append([]string{"iverilog", "-g2012"}, i.extra...)
	args = append(args, "-s", top, "-o", "sim.vvp")
	return append(args, files...)
}
func (icarus) RunArgs(string) []string { return []string{"vvp", "-n", "sim.vvp"} }

// verilator builds a C++ model with --binary (timing enabled) and runs it.
// It is 2-state: X and Z collapse, which is why contracts trust it for pass
// only when Config.TrustTwoState is set.
type verilator struct{ extra []string }

func (verilator) Name() string       { return SimVerilator }
func (verilator) FourState() bool    { return false }
func (verilator) PolledReplay() bool { return true }
func (verilator) Tools() []engine.Tool {
	return []engine.Tool{{Name: "verilator", Version: probeTool("verilator").Version}}
}
func (v verilator) Flags() []string {
	return append([]string{"verilator", "--binary", "-j", "1", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-ZERODLY"}, v.extra...)
}
func (verilator) Check() (string, string) {
	ti := probeTool("verilator")
	if ti.Err != "" {
		return engine.StageToolchainMissing, ti.Err
	}
	if !strings.HasPrefix(ti.Version, "Verilator 5") {
		return engine.StageToolchainUnsupported, fmt.Sprintf("need Verilator 5 (--binary, --timing), found %q", ti.Version)
	}
	return "", ""
}
func (v verilator) BuildArgs(top string, files []string) []string {
	args := append(v.Flags(), "--top-module", top, "-Mdir", "obj", "-o", "Vsim")
	return append(args, files...)
}
func (verilator) RunArgs(string) []string { return []string{"obj/Vsim"} }

func newSimulator(cfg Config) simulator {
	if cfg.Simulator == SimVerilator {
		return verilator{extra: cfg.VerilatorFlags}
	}
	return icarus{extra: cfg.IcarusFlags}
}

// Messages that say a job ran out of memory. Only ever used to pick
// between two candidate stages (resource vs compile/simulate): text the
// candidate controls never decides whether a verdict is excused.
var (
	reOutOfMemory = regexp.MustCompile(`(?i)bad_alloc|out of memory|cannot allocate memory|virtual memory exhausted|memory exhausted`)
	reElaborate   = regexp.MustCompile(`error\(s\) during elaboration|Unknown module type|Unable to bind|is not a port of|sorry:|Elaboration failed`)
)

// classifyProcess maps what a process tree did to a failure stage, or ""
// when it exited normally (status 0 or not is left to the caller). phase is
// "build" or "run". Infrastructure stages (unjudged, retried) come only
// from what the verifier itself observed: the sandbox failing, our timer
// firing on a tree that was waiting for a CPU, its own statfs of the job
// filesystem. Everything the tree can do to itself — exit, die of a signal
// (it can send itself any), sleep, block, print "No space left on device"
// — is the candidate's.
func classifyProcess(r procResult, phase string, lim Limits, timeout time.Duration) (stage, cause string) {
	stderr := r.Stderr.String()
	cpuLimit := time.Duration(lim.CPUSeconds) * time.Second
	switch {
	case errors.Is(r.SandboxErr, sandbox.ErrJobDirTooLarge):
		return engine.StageResource, fmt.Sprintf("%s: %v", phase, r.SandboxErr)
	case r.SandboxErr != nil && errors.Is(r.SandboxErr, sandbox.ErrUnavailable):
		return engine.StageToolchainMissing, fmt.Sprintf("%s: cannot isolate the process: %v", phase, r.SandboxErr)
	case r.SandboxErr != nil:
		// The tree can neither see nor signal the sandbox's init: only
		// something outside (an operator, the OOM killer) ends it.
		return engine.StageWorkerCrash, fmt.Sprintf("%s: %v", phase, r.SandboxErr)
	case r.StartErr != nil:
		return engine.StageToolchainMissing, fmt.Sprintf("%s: cannot start: %v", phase, r.StartErr)
	case r.TimedOut && r.Starved:
		// Our wall clock fired while the tree was waiting on a run queue:
		// other load starved it, which says nothing about the candidate.
		return engine.StageWorkerCrash, fmt.Sprintf("%s: wall-clock limit of %s reached while starved of CPU (%.1fs waiting for a CPU, %.1fs of its %ds CPU budget used; machine overloaded)",
			phase, timeout, r.RunDelay.Seconds(), r.CPU.Seconds(), lim.CPUSeconds)
	case r.TimedOut:
		return engine.StageTimeout, fmt.Sprintf("%s: wall-clock limit of %s reached while blocked, not starved (%.1fs CPU, %.1fs waiting for a CPU)",
			phase, timeout, r.CPU.Seconds(), r.RunDelay.Seconds())
	case r.OutputExceeded:
		return engine.StageResource, fmt.Sprintf("%s: output passed the %d-byte limit", phase, lim.OutputKillBytes)
	case r.Signal == sigXCPU, r.Signal == syscall.SIGKILL && r.CPU >= cpuLimit:
		// SIGKILL after the CPU time is the hard RLIMIT_CPU (soft + 1 s).
		return engine.StageTimeout, fmt.Sprintf("%s: CPU-time limit of %ds reached", phase, lim.CPUSeconds)
	case r.Signal == sigXFSZ:
		return engine.StageResource, phase + ": file-size limit reached"
	case r.Disk.Full && r.Disk.JobBytes >= lim.FileSizeBytes:
		return engine.StageResource, fmt.Sprintf("%s: the job filled its filesystem (its directory holds %d bytes)", phase, r.Disk.JobBytes)
	case r.Disk.Full:
		return engine.StageDiskFull, fmt.Sprintf("%s: the job filesystem is full (%d bytes free by the verifier's statfs)", phase, r.Disk.Free)
	case reOutOfMemory.MatchString(stderr):
		return engine.StageResource, phase + ": address-space limit reached (out of memory)"
	case r.Signal != 0:
		if phase == "build" {
			return engine.StageCompile, fmt.Sprintf("build: compiler died of signal %v", r.Signal)
		}
		return engine.StageSimulate, fmt.Sprintf("run: simulator died of signal %v", r.Signal)
	}
	return "", ""
}

// classifyBuildFailure names the stage of a non-zero build exit.
func classifyBuildFailure(stderr string) string {
	if reElaborate.MatchString(stderr) {
		return engine.StageElaborate
	}
	return engine.StageCompile
}
