// Package kernels verifies kernel candidates: correctness on fresh inputs
// for every call, timing against the reference, a harness-strength audit
// and exploit gates, producing engine.Evidence rows. It is the judge behind
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
//     Roles: input (fresh random values every call), output (poisoned before every call),
//     scalar (an int64 passed by value; its shape holds the value, e.g. [1024]).
//     dtypes: float32, float64, float16, bfloat16, int32, int64. Triton tasks
//     take shapes from get_inputs().
//   - interface.tolerance: the relative tolerance (see Verification for the
//     bound); 0 means per dtype (1e-4 fp32, 1e-8 fp64, 1e-2 fp16/bf16);
//     ints are always exact.
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
// The verdict is computed here, in the verifier's process, from what the
// reference's and the candidate's processes send back; the two never share
// a process, an address space or a file. For every call (warm-up calls
// included) fresh inputs are drawn from a ChaCha8 stream keyed by a
// crypto/rand seed taken after both processes have started (triton: the
// reference's worker draws them with get_inputs() under a seed sent per
// call); the reference runs on them in its process, the candidate in its
// own, and every candidate output of every call is compared with the
// reference's output on the same inputs:
//
//	|c - r| <= atol + rtol*|r|,  rtol = interface.tolerance or the dtype default
//	                             (fp32 1e-4, fp64 1e-8, fp16/bf16 1e-2),
//	                             atol = rtol * rms(reference output) + the dtype's smallest normal
//
// so the absolute slack follows the output's magnitude (softmax values near
// 1e-3 get ~1e-7, not 1e-4). NaN and Inf match only the same value where the
// reference has it; int32/int64 outputs compare exactly as integers (never
// through float64). Output shapes must match. Anything a candidate writes to
// files or prints is ignored for the verdict.
//
// Timing: warm-up calls, then Trials groups of Reps timed calls, reference
// and candidate alternating which goes first per group (cpu, cuda); each
// call preceded by a cache flush and output poisoning. cpu calls are timed
// by the verifier between its "go" and the harness's "done"; cuda calls by
// the worker's CUDA events; triton calls by each worker's CUDA events (the
// candidate's own process: forgeable, see below). Reports: median,
// P10/P90, spread, a percentile-bootstrap interval of the median speedup;
// "faster" needs its lower bound >= SpeedupThreshold. Timings never decide
// pass or fail except through the suspicious_speedup gate, which is built
// to mean the same on a busy host: it is armed only with at least
// SuspiciousSamples timed calls per side (measurement
// suspicious_gate_armed) and fires when the reference's fastest call is
// more than SuspiciousSpeedup times the candidate's fastest and the
// interval says "faster" (preemption only lengthens calls, so the fastest
// call of each side is its least-disturbed one; medians move either way).
//
// Harness strength: before judging a task's candidates (cached per task
// like the reference build) its comparison is tried on trivial candidates
// built from the reference's own outputs: zeros, a constant (the mean of the
// reference's output), a copy of an input, the reference's answer for other
// inputs. The result is recorded on every evidence row of the task
// (verifier_strength = killed/tried, verifier_strength_survivors). A task
// whose tolerance accepts any of them is degenerate: a candidate's pass on
// it becomes unjudged at stage weak_verifier (infrastructure-side: the task
// is at fault). The audit also runs the reference twice on the same inputs:
// a reference that disagrees with itself fails reference_self_check.
//
// Exploit gates (recorded as exploit_<gate> measurements; any → fail at
// stage "exploit"): launch_evidence (output never written), identity_store
// (output equals an input), stale_output (an earlier call's answer),
// delegation (BLAS imports / the reference's framework ops when forbidden),
// forbidden_call (a system call the seccomp filter kills, or such an import
// on cpu), hidden_work (device busy after the timed stream finished on
// GPUs), suspicious_speedup (CI lower bound above SuspiciousSpeedup).
//
// Stages: compile, elaborate (load: no entry symbol/kernel), simulate
// (crash, exit, protocol violation), timeout, resource (memory limit of the
// candidate or of its compiler, too much shared memory), mismatch, exploit;
// measurement kernel_stage keeps the finer step. Blame comes only from what
// the verifier observed: which process failed (the reference's failures are
// reference_self_check, unjudged; any failure of the candidate's process —
// an exit(4), a crash, a blocked read past its wall budget — is the
// candidate's), its exit status or signal, the verifier's own timers, the
// compiler tree's peak RSS; never from text or files the candidate
// controls. Infrastructure stages (reference_self_check, device_fault,
// worker_crash, toolchain_missing: "no-device" when no GPU backend can run,
// weak_verifier) are unjudged; all but weak_verifier are retried up to
// MaxAttempts.
//
// # Threat model and isolation
//
// Every candidate is hostile: it wants to forge a pass (call or read the
// reference, replay or memorise answers, rewrite results, loosen the
// comparison), dodge a failure into unjudged (fake infrastructure faults),
// or escape (write or read outside its job, outlive it, kill the verifier).
//
// cpu: the candidate's source is compiled by the system C compiler inside
// internal/sandbox (fresh user, PID, mount, network and IPC namespaces, an
// unprivileged uid, the job directory the only writable path, the system
// directories read-only, so an #include or .incbin of any other path finds
// nothing; address-space, CPU and process limits on every compiler
// process). The reference is built the same way once per backend and kept
// in the verifier's memory; each job writes its own copy into a directory
// only that job's reference process is given, removed once loaded. Each
// side runs in its own harness process (embed/harness.c) in its own
// sandbox, which limits itself (address space, CPU, file size, no core),
// makes itself non-dumpable and installs a seccomp filter before the
// library (and so any code of the side, its constructors first) is loaded:
// process or thread creation, exec, ptrace, process_vm_*, signals to any
// process but itself, raising limits, sockets, namespaces, mounts, BPF,
// io_uring and file-system changes kill the process (SIGSYS → fail at
// exploit, gate forbidden_call); after loading, opening any file does. The
// harness talks to the verifier over its stdin/stdout pipes (the side's own
// prints go to stderr, the log); the side can tamper with its own harness
// but not with the other side or the verdict. cpu candidates are
// single-threaded.
//
// cuda: each side runs in a fresh worker process (this binary re-executed,
// see worker.go) pinned to a leased GPU: separate processes have separate
// CUDA contexts, so device code cannot reach the reference's buffers, and a
// sticky CUDA error or hung kernel ends only its own process. triton: each
// side in a fresh Python worker (embed/triton_worker.py); an outcome the
// candidate's worker reports after the candidate's code has run is never
// taken as an infrastructure fault. GPU jobs are leased one per GPU from a
// cuda.Manager (NVML health where available).
//
// Residual risks (trust limits that remain):
//   - GPU workers need the GPU's device nodes, which the sandbox's mount
//     view does not provide: they run in new user, PID, network and IPC
//     namespaces (they cannot see or signal the verifier, have no network,
//     die with it) under the verifier's own uid and see the host's files
//     with its rights. For cuda only device code and NVRTC see the
//     candidate (an #include of a host path reaches NVRTC); for triton the
//     candidate's Python runs there with those rights. Its timings and the
//     ops it reports for the delegation gate come from its own process and
//     can be forged; its outputs cannot reach the reference's.
//   - triton moves every call's tensors through the verifier (at most 2 GiB
//     per frame; larger tasks are toolchain_unsupported): full-size
//     KernelBench problems need device-side sharing, not implemented.
//   - cpu timings are taken around the call by the verifier, but a
//     candidate that rewrites the harness in its own process can move work
//     outside the timed window. Timings are measurements, not verdicts.
//   - The comparison is only as strong as the task's inputs: the strength
//     audit catches degenerate tolerances and input-independent references,
//     not every weak test distribution.
package kernels
