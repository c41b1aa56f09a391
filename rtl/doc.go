// Package rtl verifies RTL candidates against trusted harnesses with real
// simulators (Icarus Verilog by default, Verilator as an option) run in a
// bounded pool of sandboxed worker processes. A verdict is data
// (engine.Evidence); errors are reserved for a run that could not proceed.
//
// # Threat model
//
// A candidate is hostile. Its text reaches iverilog's preprocessor and
// elaborator, Yosys, and Verilator's C++ build (`include, $c and
// `systemc_* C++ compiled by g++); its simulation runs with every ability
// the simulator has ($fopen, $dumpfile, $readmem*, VPI, and under Verilator
// arbitrary C++: fork, kill, raw syscalls). It wants to forge a pass (read
// the harness, the reference or the verdict secret, write another job's
// outputs, kill or confuse the verifier), to escape or outlive its job, to
// exhaust the machine, or to dodge a fail by looking like an infrastructure
// fault.
//
// The screen (screen.go) is a cheap first filter, not the defence. Every
// process the verifier starts on candidate text — iverilog with ivlpp and
// ivl, vvp, verilator with make, g++ and cc1plus, the built model, Yosys —
// goes through runLimited, which runs it in its own internal/sandbox
// sandbox: fresh user, PID, mount, network, IPC and UTS namespaces; the job
// directory (harness, reference, candidate of this one job) bound at /job
// as the only writable path; the system directories read-only; no view of
// the verifier, other jobs, caches or the host's /tmp, so `include, -I and
// #include resolve against the job and the system headers only; an
// unprivileged uid of its own with no capabilities and no_new_privs; every
// process killed with the job (a setsid daemon included); RLIMIT_AS, CPU,
// FSIZE, NPROC and CORE on the whole tree, compilers included. A machine
// where the namespaces cannot be created gets unjudged verdicts
// (toolchain_missing, the cause says why), never an unsandboxed run.
//
// What the job directory holds is visible to the candidate by design (it
// is compiled with it); what it leaves there is read back only with
// sandbox.ReadFile (no links, FIFOs or devices).
//
// Infrastructure stages — the unjudged, retried ones — come only from what
// the verifier observed itself: the sandbox failing or its init being killed
// (which the tree cannot do), our wall clock firing on a tree that was
// waiting for a CPU rather than sleeping (schedstat run delay), its own
// statfs of the job filesystem, its own write errors. A candidate that
// blocks is a timeout; one that kills itself or prints "No space left on
// device" is judged like any other; the stderr text of a tool only ever
// chooses between two candidate stages.
package rtl
