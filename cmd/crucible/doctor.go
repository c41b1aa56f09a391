package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/cuda"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// DoctorOptions are `crucible doctor`'s flags.
type DoctorOptions struct {
	Out io.Writer
}

// toolCheck is one toolchain probe: a command whose first output line is
// its version, and what finding it enables.
type toolCheck struct {
	Name    string
	Cmd     []string
	Enables string
	Filter  func(string) string
}

// ToolStatus is what doctor found for one toolchain.
type ToolStatus struct {
	Name    string
	Found   bool
	Version string
	Enables string
	Why     string
}

var toolChecks = []toolCheck{
	{Name: "iverilog", Cmd: []string{"iverilog", "-V"}, Enables: "RTL compile (default trusted simulator)"},
	{Name: "vvp", Cmd: []string{"vvp", "-V"}, Enables: "RTL simulation with Icarus"},
	{Name: "yosys", Cmd: []string{"yosys", "-V"}, Enables: "interface extraction, synthesis gate, mutation"},
	{Name: "verilator", Cmd: []string{"verilator", "--version"}, Enables: "RTL simulation with Verilator (2-state)"},
	{Name: "cc", Cmd: []string{"cc", "--version"}, Enables: "kernel cpu backend (C candidates)"},
	{Name: "python3", Cmd: []string{"python3", "--version"}, Enables: "triton backend worker"},
	{Name: "torch", Cmd: []string{"python3", "-c", "import torch; print(torch.__version__, 'cuda', torch.version.cuda)"}, Enables: "triton backend (KernelBench reference models)"},
	{Name: "triton", Cmd: []string{"python3", "-c", "import triton; print(triton.__version__)"}, Enables: "triton backend (Triton candidates)"},
}

func newDoctorCmd() *cobra.Command {
	var o DoctorOptions
	return &cobra.Command{
		Use:   "doctor",
		Short: "List the toolchains found, with versions, and what each enables",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out = cmd.OutOrStdout()
			return runDoctor(cmd.Context(), o)
		},
	}
}

func runDoctor(ctx context.Context, o DoctorOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	var all []ToolStatus
	for _, c := range toolChecks {
		all = append(all, probeTool(ctx, c))
	}
	all = append(all, sandboxDoctorCheck())
	all = append(all, gpuDoctorChecks()...)
	all = append(all, extraDoctorChecks(ctx)...)
	tw := tabwriter.NewWriter(o.Out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATUS\tVERSION\tENABLES")
	for _, s := range all {
		status, ver := "ok", s.Version
		if !s.Found {
			status, ver = "missing", s.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, status, ver, s.Enables)
	}
	return tw.Flush()
}

func probeTool(ctx context.Context, c toolCheck) ToolStatus {
	st := ToolStatus{Name: c.Name, Enables: c.Enables}
	if _, err := exec.LookPath(c.Cmd[0]); err != nil {
		st.Why = c.Cmd[0] + " not on PATH"
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.Cmd[0], c.Cmd[1:]...).CombinedOutput()
	line := firstLine(string(out))
	if err != nil {
		st.Why = "error: " + truncate(lastLine(string(out)), 60)
		return st
	}
	st.Found, st.Version = true, truncate(line, 60)
	return st
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// sandboxDoctorCheck reports whether candidate processes can be isolated
// (user, PID, mount and network namespaces); without it every RTL and
// kernel verdict is unjudged.
func sandboxDoctorCheck() ToolStatus {
	st := ToolStatus{Name: "sandbox", Enables: "isolating every candidate process (namespaces, limits); required to judge"}
	if err := sandbox.Check(); err != nil {
		st.Why = truncate(err.Error(), 80)
	} else {
		st.Found, st.Version = true, "user/pid/mount/net/ipc/uts namespaces"
	}
	return st
}

// gpuDoctorChecks reports the CUDA driver and NVML, which the kernel
// verifier's GPU backends and device manager need.
func gpuDoctorChecks() []ToolStatus {
	drv := ToolStatus{Name: "cuda driver", Enables: "cuda/triton kernel backends (libcuda.so.1, loaded at run time)"}
	if v, err := cuda.DriverVersion(); err != nil {
		drv.Why = truncate(err.Error(), 80)
	} else {
		drv.Found, drv.Version = true, fmt.Sprintf("CUDA driver API %d.%d", v/1000, v%1000/10)
	}
	nv := ToolStatus{Name: "nvml", Enables: "GPU inventory, health and one-job-per-GPU scheduling"}
	lib := cuda.NewNVML()
	if err := cuda.InitNVML(lib); err != nil {
		nv.Why = truncate(err.Error(), 80)
		return []ToolStatus{drv, nv}
	}
	defer lib.Shutdown()
	gpus, err := cuda.Inventory(lib)
	if err != nil {
		nv.Why = truncate(err.Error(), 80)
		return []ToolStatus{drv, nv}
	}
	nv.Found = true
	nv.Version = fmt.Sprintf("driver %s, %d GPU(s)", cuda.DriverVersionNVML(lib), len(gpus))
	return []ToolStatus{drv, nv}
}
