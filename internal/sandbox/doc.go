// Package sandbox starts one untrusted process tree (a candidate design's
// simulator, the compilers it drives, a kernel candidate's harness) inside
// kernel-enforced isolation, and reports what the tree did from the
// verifier's own observations only.
//
// # Threat model
//
// Everything a job runs is hostile: the candidate's text reaches compilers
// (`include, #include, .incbin), and its compiled code runs with the
// toolchain's full abilities (Verilog $fopen/$dumpfile/$readmemh, Verilator
// $c and `systemc_* C++, kernel C/CUDA). The attacker wants to (a) forge a
// verdict by reading or writing files the verifier trusts (the reference,
// the harness, other jobs' outputs, shared caches), (b) escape or outlive
// the job (a fork+setsid orphan, a process in the verifier's session),
// (c) harm the verifier or the machine (kill the parent, exhaust memory,
// processes or disk), or (d) dodge a verdict by making its failure look
// like an infrastructure fault (printing "No space left on device",
// blocking until the wall clock fires).
//
// What holds the line is the kernel, not text screening. Every Start
// creates, for the tree alone:
//
//   - a user namespace: the tree runs as an unprivileged uid (Inside uid
//     1000) with no capabilities and no_new_privs; when the verifier is root
//     that uid maps to a per-run host uid of its own, so RLIMIT_NPROC counts
//     this job's processes only and the tree owns no host file;
//   - a PID namespace whose init is our own small process (this binary
//     re-executed from /proc/self/exe, where a C constructor, init_linux.c,
//     takes over before the Go runtime starts): the tree sees only its own
//     processes, cannot name — and so cannot signal or trace — the verifier
//     or another job, and when the job's main process ends (or our timer
//     fires) the init exits and the kernel kills every process left in the
//     namespace (a setsid orphan included) before Wait returns. The process
//     the verifier starts is a plain vfork+exec that creates the namespaces
//     itself (unshare), lets the verifier write its id maps and forks pid 1;
//     the verifier kills the tree through a pidfd of pid 1 and waits for the
//     process it started, which reaps pid 1;
//   - a mount namespace whose root is a fresh read-only tmpfs holding
//     read-only, nosuid, nodev binds of the system directories (/usr and the
//     /bin, /lib* links or directories, a handful of /etc files the
//     toolchains read), a few /dev nodes, a private size-limited /tmp, /proc
//     of the new PID namespace, and the job directory at /job — the only
//     writable path that reaches the disk. Nothing else of the host exists
//     there: not the verifier's files, not the reference or the harness
//     unless the caller binds them (read-only) on purpose, not other jobs,
//     and compile-time includes resolve against this view only;
//   - network, IPC and UTS namespaces: no interface but a down loopback, no
//     shared SysV/POSIX IPC, a neutral hostname;
//   - resource limits set by the init before the job's first instruction and
//     inherited by every process of the tree, compilers included:
//     RLIMIT_AS, RLIMIT_CPU (soft; hard = soft+1), RLIMIT_FSIZE,
//     RLIMIT_NPROC and RLIMIT_CORE = 0.
//
// A machine where these namespaces cannot be created makes Check (and every
// Start) fail with ErrUnavailable; callers turn that into an unjudged
// verdict. Nothing here ever runs a job unsandboxed.
//
// # What the caller learns
//
// Result is built only from what this process saw: the wait status of the
// job's main process as reported by our init, whether our timer or the
// caller killed the tree, the tree's CPU time (rusage of the init, which
// reaps every descendant), and, when the wall-clock timer fired, whether the
// tree was waiting for a CPU (starved: an infrastructure fault) or sleeping
// (blocked: the candidate's fault) from /proc/<pid>/task/*/schedstat of the
// live processes. Nothing the candidate prints or writes feeds Result.
//
// Files the tree leaves in the job directory are the candidate's: read them
// back with ReadFile, which refuses symbolic links, FIFOs and devices and
// bounds the size, so a planted link cannot make the verifier read a host
// file into evidence.
//
// # Residual risks
//
// The kernel itself (a namespace or filesystem bug) is trusted. Disk usage
// of the job directory is bounded per file (RLIMIT_FSIZE), not in total;
// the caller's own statfs of the job filesystem tells a full disk from a
// candidate's claim. CPU and memory are bounded per process, not per tree
// (there are no cgroups here): a tree may use up to RLIMIT_NPROC times the
// per-process limits. When the verifier is not root, the tree's uid maps to
// the verifier's own uid (the only mapping an unprivileged user may write):
// the mount view still hides the verifier's files, but RLIMIT_NPROC then
// counts the user's other processes too.
package sandbox
