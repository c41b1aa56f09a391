// Package kernels verifies kernel candidates: correctness over several
// seeded trials, timing against the reference in the same process, and
// exploit gates, producing engine.Evidence rows. It is the judge behind
// `crucible verify kernel` and the "verify_kernel" pipeline stage.
//
// # Task contract (engine.Item, domain "kernel")
//
//   - verifier.kind "kernel"; verifier.harness names the backend: "cpu", "cuda"
//     or "triton"; verifier.top is the entry (C function, extern "C" CUDA
//     kernel, or the Python class, default ModelNew).
//   - reference: C (cpu), CUDA C++ (cuda) or a KernelBench module defining
//     Model, get_inputs and get_init_inputs (triton).
//   - interface.args (cpu, cuda): in call order, {name, role, shape, dtype}.
//     Roles: input (seeded values), output (poisoned before every call),
//     scalar (an int64 passed by value; its shape holds the value, e.g. [1024]).
//     dtypes: float32, float64, float16, bfloat16, int32, int64. Triton tasks
//     take shapes from get_inputs().
//   - interface.tolerance: abs and rel tolerance, |c-r| <= tol + tol*|r|;
//     0 means per dtype (1e-4 fp32, 1e-8 fp64, 1e-2 fp16/bf16, exact ints).
//   - interface.allow_delegation: whether calling a library that does the
//     work (BLAS; the reference's own framework ops) is allowed.
//
// Bundled tasks live in examples/seeds/kernel/<item_id>/ as task.json (the
// item fields), instruction.md and reference.c / reference.cu / reference.py
// (LoadSeedDir reads one, as the ingest stage's taskdir preset does).
//
// Calling conventions. cpu: `void top(T *arg0, ..., int64_t scalar...)` in
// the declared order. cuda: `extern "C" __global__ void top(...)` with the
// same argument order (scalars as long long), and the launch geometry in
// the source, one line per launch:
//
//	// crucible:launch [kernel=NAME] grid=(X,Y,Z) block=(X,Y,Z) [shared=BYTES] [stream=K]
//
// triton: a module defining ModelNew(*get_init_inputs()) whose forward takes
// get_inputs() (KernelBench's contract).
//
// # Verification
//
// Every trial draws fresh inputs from a PRNG seeded by the item id and trial
// (same task → same inputs → same verdicts); all trials must pass and output
// shapes must match. Warm-up calls precede timing; each timed call is
// preceded by an L2/LLC flush and output poisoning and synchronised around;
// reference and candidate alternate which goes first per trial. Timing
// reports median, P10/P90 and spread, and a percentile-bootstrap interval of
// the median speedup; "faster" needs its lower bound >= SpeedupThreshold.
//
// Exploit gates (recorded as exploit_<gate> measurements; any → fail at
// stage "exploit"): launch_evidence (output never written), identity_store
// (output equals an input), stale_output (an earlier trial's answer, or later
// repetitions skipping work), delegation (BLAS imports / the reference's
// framework ops when forbidden), forbidden_call (fork/exec/dlopen/syscall
// imports on cpu), hidden_work (threads left running on cpu; device busy after
// the timed stream finished on GPUs), suspicious_speedup (CI lower bound
// above SuspiciousSpeedup).
//
// Stages: compile, elaborate (load: no entry symbol/kernel), simulate
// (crash, illegal address, exit), timeout, resource (memory limit, too much
// shared memory), mismatch, exploit; measurement kernel_stage keeps the finer
// step (compile, load, launch, runtime, mismatch, timeout, exploit,
// resource). Infrastructure stages (reference_self_check, device_fault,
// worker_crash, toolchain_missing: "no-device" when no GPU backend can run)
// are unjudged and retried up to MaxAttempts.
//
// # Backends and isolation
//
// cpu: candidates are built by the system C compiler into a shared object
// and run by a C harness (embed/harness.c) in a child process with
// RLIMIT_AS/CPU/FSIZE/CORE, its own process group, and a state file that
// blames crashes on the side that was running. cuda: each candidate runs in
// a fresh worker process (this binary re-executed, see worker.go) pinned to
// a leased GPU, since a sticky CUDA error or hung kernel can only be cleared
// by ending the process. triton: a fresh Python worker per candidate
// (embed/triton_worker.py) pinned with CUDA_VISIBLE_DEVICES; its JSON result
// carries a nonce and is canonicalised (known stages and gates only, finite
// bounded numbers). GPU jobs are leased one per GPU from a cuda.Manager
// (NVML health where available).
//
// Trust limits: the cpu and triton backends run candidate code in-process
// with the harness; a deliberately hostile candidate could tamper with the
// harness's memory. The gates catch the common reward hacks, not a
// determined attacker; run untrusted code in a container.
package kernels
