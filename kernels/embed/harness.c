// harness.c: the cpu backend's runner for ONE side (the reference or a
// candidate, never both). It is compiled once per verifier and started as
// its own process per side and job:
//
//   harness LIB.so SYMBOL          (stdin: commands from the verifier, stdout: replies)
//
// The verifier (the trusted Go process) drives it call by call: it sends
// the job header, then for every call the freshly generated inputs; the
// harness poisons the outputs, flushes the cache, says 'R', waits for 'G'
// (the verifier's clock starts), calls the kernel, says 'D' (the clock
// stops) and sends the outputs back. The verifier compares them with the
// other side's, which ran in another process: nothing in this process can
// see the other side, its outputs, or the inputs of later calls.
//
// Before the library is loaded (its constructors are the first code of the
// side to run) the harness limits itself (address space, CPU time, file
// size, no core dumps), makes itself non-dumpable, and installs a seccomp
// filter that kills the process on any attempt to create a process or
// thread, execute a program, trace or read/write another process, signal
// anything but itself, raise its limits, or reach namespaces, mounts,
// sockets, BPF or io_uring. The verifier sees the kill as SIGSYS.
//
// Replies: 'S' set up (limits and filter in place), 'L' library loaded,
// per call 'R' ready and 'D' done, 'M' whenever an allocation failed.
// Exit codes: 2 bad job or setup (before 'S'), 3 the library or symbol did
// not load.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JOB_MAGIC 0x324a4f4243555243ULL /* "CRUCBOJ2" little-endian */
/* The protocol's descriptors: stdin and stdout as started, moved away at
 * once so the side's own prints (stdout) go to stderr, i.e. the log. */
static int CMD_FD = 0, REPLY_FD = 1;

enum { ROLE_IN = 0, ROLE_OUT = 1, ROLE_SCALAR = 2 };
enum { CMD_QUIT = 0, CMD_CALL = 1 };

/* The candidate's malloc family is routed here (-Wl,--wrap at its link) so
 * an allocation failing under the memory limit is reported as it happens. */
static void note_alloc_failure(void) {
	char m = 'M';
	if (write(REPLY_FD, &m, 1) < 0) { /* nothing to do */
	}
}
void *__wrap_malloc(size_t n) {
	void *p = malloc(n);
	if (!p && n) note_alloc_failure();
	return p;
}
void *__wrap_calloc(size_t a, size_t b) {
	void *p = calloc(a, b);
	if (!p && a && b) note_alloc_failure();
	return p;
}
void *__wrap_realloc(void *q, size_t n) {
	void *p = realloc(q, n);
	if (!p && n) note_alloc_failure();
	return p;
}

typedef struct {
	uint32_t role;
	uint64_t bytes;
	int64_t scalar;
	uint8_t poison;
} arg_t;

static void die(int code, const char *what, const char *detail) {
	fprintf(stderr, "harness: %s: %s\n", what, detail ? detail : "");
	fflush(stderr);
	_exit(code);
}

static void readn(void *dst, size_t n) {
	char *p = dst;
	while (n) {
		ssize_t k = read(CMD_FD, p, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) _exit(0); /* the verifier went away */
		p += k;
		n -= (size_t)k;
	}
}

static void writen(const void *src, size_t n) {
	const char *p = src;
	while (n) {
		ssize_t k = write(REPLY_FD, p, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) _exit(0);
		p += k;
		n -= (size_t)k;
	}
}

static void say(char c) { writen(&c, 1); }

static void call(void *f, const uint64_t *a, int n) {
	typedef uint64_t u;
	switch (n) {
	case 0: ((void (*)(void))f)(); break;
	case 1: ((void (*)(u))f)(a[0]); break;
	case 2: ((void (*)(u, u))f)(a[0], a[1]); break;
	case 3: ((void (*)(u, u, u))f)(a[0], a[1], a[2]); break;
	case 4: ((void (*)(u, u, u, u))f)(a[0], a[1], a[2], a[3]); break;
	case 5: ((void (*)(u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4]); break;
	case 6: ((void (*)(u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
	case 7: ((void (*)(u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
	case 8: ((void (*)(u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
	case 9: ((void (*)(u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
	case 10: ((void (*)(u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
	case 11: ((void (*)(u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
	case 12: ((void (*)(u, u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
	case 13: ((void (*)(u, u, u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); break;
	case 14: ((void (*)(u, u, u, u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); break;
	case 15: ((void (*)(u, u, u, u, u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); break;
	case 16: ((void (*)(u, u, u, u, u, u, u, u, u, u, u, u, u, u, u, u))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break;
	default: die(2, "too many arguments", NULL);
	}
}

static volatile uint64_t flush_sink;
static unsigned char *flush_buf;
static uint64_t flush_bytes;
static void flush_cache(int salt) {
	if (!flush_bytes) return;
	memset(flush_buf, salt, flush_bytes);
	uint64_t s = 0;
	for (uint64_t i = 0; i < flush_bytes; i += 64) s += flush_buf[i];
	flush_sink += s;
}

/* ---- seccomp ---------------------------------------------------------- */

#if defined(__x86_64__)
#define CRUCIBLE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CRUCIBLE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp filter: unsupported architecture"
#endif

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define LD_ARG_HI(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4)
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define KILL RET(SECCOMP_RET_KILL_PROCESS)
#define ALLOW RET(SECCOMP_RET_ALLOW)

/* Calls that end the process at once. */
static const int killed_calls[] = {
#ifdef SYS_fork
	SYS_fork,
#endif
#ifdef SYS_vfork
	SYS_vfork,
#endif
	SYS_clone, SYS_clone3, SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
	SYS_tkill, SYS_pidfd_open, SYS_pidfd_send_signal, SYS_pidfd_getfd, SYS_kcmp, SYS_setrlimit, SYS_mount,
	SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns, SYS_bpf, SYS_perf_event_open,
	SYS_userfaultfd, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_keyctl, SYS_add_key,
	SYS_request_key, SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_reboot,
	SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_personality,
	/* Changing the file system: no kernel needs it (the mount view is what
	 * confines reads; this makes writes impossible even without one). */
	SYS_renameat, SYS_renameat2, SYS_unlinkat, SYS_mkdirat, SYS_symlinkat, SYS_linkat, SYS_fchmodat, SYS_fchownat,
	SYS_truncate, SYS_mknodat, SYS_utimensat, SYS_name_to_handle_at, SYS_open_by_handle_at,
#ifdef SYS_rename
	SYS_rename, SYS_unlink, SYS_mkdir, SYS_rmdir, SYS_symlink, SYS_link, SYS_chmod, SYS_chown, SYS_lchown, SYS_creat,
	SYS_mknod, SYS_utimes,
#endif
#ifdef SYS_open_tree
	SYS_open_tree, SYS_move_mount, SYS_fsopen, SYS_fsmount,
#endif
};

/* open/openat for writing (or creating) ends the process; after the
 * library is loaded, opening anything does (install_no_open). */
static int add_open_checks(struct sock_filter *f, int n, int no_open) {
	const uint32_t wr = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
	const struct { int nr, flags_arg; } opens[] = {
#ifdef SYS_open
		{SYS_open, 1},
#endif
		{SYS_openat, 2},
	};
	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		if (no_open) {
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)opens[i].nr, 0, 1);
			f[n++] = (struct sock_filter)KILL;
			continue;
		}
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)opens[i].nr, 0, 4);
		f[n++] = (struct sock_filter)LD_ARG_LO(opens[i].flags_arg);
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, wr, 0, 1);
		f[n++] = (struct sock_filter)KILL;
		f[n++] = (struct sock_filter)ALLOW;
	}
	/* openat2 carries its flags in a struct the filter cannot read. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1);
	f[n++] = (struct sock_filter)KILL;
	return n;
}

static void install_no_open(void) {
	struct sock_filter f[16];
	int n = 0;
	f[n++] = (struct sock_filter)LD_NR;
	n = add_open_checks(f, n, 1);
	f[n++] = (struct sock_filter)ALLOW;
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) die(2, "seccomp", strerror(errno));
}

static void install_seccomp(pid_t self) {
	struct sock_filter f[256];
	int n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CRUCIBLE_AUDIT_ARCH, 1, 0);
	f[n++] = (struct sock_filter)KILL;
	f[n++] = (struct sock_filter)LD_NR;
	size_t nk = sizeof(killed_calls) / sizeof(killed_calls[0]);
	for (size_t i = 0; i < nk; i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)killed_calls[i], 0, 1);
		f[n++] = (struct sock_filter)KILL;
	}
	/* Signals only to itself: kill(pid), tgkill(tgid, ...),
	 * rt_sigqueueinfo(tgid, ...), rt_tgsigqueueinfo(tgid, ...) with the first
	 * argument this process's own id; prlimit64 only to read (new == NULL). */
	const int self_calls[] = {SYS_kill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo};
	for (int i = 0; i < 4; i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self_calls[i], 0, 4);
		f[n++] = (struct sock_filter)LD_ARG_LO(0);
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self, 1, 0);
		f[n++] = (struct sock_filter)KILL;
		f[n++] = (struct sock_filter)ALLOW;
	}
	n = add_open_checks(f, n, 0);
	f[n++] = (struct sock_filter)LD_NR;
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 6);
	f[n++] = (struct sock_filter)LD_ARG_LO(2);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
	f[n++] = (struct sock_filter)LD_ARG_HI(2);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
	f[n++] = (struct sock_filter)KILL;
	f[n++] = (struct sock_filter)ALLOW;
	f[n++] = (struct sock_filter)ALLOW;
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(2, "no_new_privs", strerror(errno));
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) die(2, "seccomp", strerror(errno));
}

/* Started as root (no user namespace around it), become nobody: that drops
 * every capability, so the side cannot reach other processes' memory or
 * files it does not own. In a user namespace without that id mapped the
 * calls fail and the namespace's own mapping is what confines it. */
static void drop_privileges(void) {
	if (geteuid() != 0) return;
	if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0) return;
	if (getuid() == 0 && geteuid() == 0 && setresuid(65534, 65534, 65534) != 0) {
		/* still root: keep going under the filter (the sandbox is the boundary) */
	}
}

int main(int argc, char **argv) {
	if (argc != 3) die(2, "usage", "harness LIB.so SYMBOL (stdin commands, stdout replies)");
	CMD_FD = fcntl(0, F_DUPFD_CLOEXEC, 10);
	REPLY_FD = fcntl(1, F_DUPFD_CLOEXEC, 10);
	int nul = open("/dev/null", O_RDONLY);
	if (CMD_FD < 0 || REPLY_FD < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(2, 1) < 0) die(2, "descriptors", strerror(errno));
	close(nul);
	uint64_t magic, mem_limit;
	uint32_t nargs, pad, cpu_s;
	readn(&magic, 8);
	if (magic != JOB_MAGIC) die(2, "bad job magic", NULL);
	readn(&nargs, 4);
	readn(&pad, 4);
	readn(&flush_bytes, 8);
	readn(&mem_limit, 8);
	readn(&cpu_s, 4);
	readn(&pad, 4);
	if (nargs > 16) die(2, "bad job header", NULL);
	arg_t args[16];
	for (uint32_t i = 0; i < nargs; i++) {
		uint64_t p8;
		readn(&args[i].role, 4);
		readn(&pad, 4);
		readn(&args[i].bytes, 8);
		readn(&args[i].scalar, 8);
		readn(&p8, 8);
		args[i].poison = (uint8_t)p8;
	}
	unsigned char *buf[16];
	for (uint32_t i = 0; i < nargs; i++) {
		buf[i] = NULL;
		if (args[i].role != ROLE_SCALAR && !(buf[i] = malloc(args[i].bytes ? args[i].bytes : 1)))
			die(2, "out of memory", "argument buffers");
	}
	if (flush_bytes && !(flush_buf = malloc(flush_bytes))) die(2, "out of memory", "flush buffer");

	/* Limits and the filter apply from here on: buffers are allocated, the
	 * library (and so any code of the side) is not loaded yet. */
	struct rlimit rl = {0, 0};
	setrlimit(RLIMIT_CORE, &rl);
	if (mem_limit) {
		rl.rlim_cur = rl.rlim_max = mem_limit;
		setrlimit(RLIMIT_AS, &rl);
	}
	if (cpu_s) {
		rl.rlim_cur = cpu_s;
		rl.rlim_max = cpu_s + 1;
		setrlimit(RLIMIT_CPU, &rl);
	}
	rl.rlim_cur = rl.rlim_max = 64u << 20;
	setrlimit(RLIMIT_FSIZE, &rl);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Open the library while still allowed to, load it through the fd. */
	int lib_fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (lib_fd < 0) die(3, "open library", strerror(errno));
	char lib_path[64];
	snprintf(lib_path, sizeof lib_path, "/proc/self/fd/%d", lib_fd);
	drop_privileges();
	const char *lib = access(lib_path, R_OK) == 0 ? lib_path : argv[1]; /* no /proc: by path */
	install_seccomp(getpid());
	say('S'); /* from here on code of the side runs: its constructors first */

	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) die(3, "load", dlerror());
	void *fn = dlsym(h, argv[2]);
	if (!fn) die(3, "missing entry symbol", argv[2]);
	install_no_open(); /* the kernel itself has no file to open */
	say('L');

	uint64_t a[16];
	for (int k = 0;; k++) {
		uint32_t cmd;
		readn(&cmd, 4);
		if (cmd != CMD_CALL) _exit(0); /* quit before any destructor of the side runs */
		for (uint32_t i = 0; i < nargs; i++) {
			if (args[i].role == ROLE_IN) readn(buf[i], args[i].bytes);
			if (args[i].role == ROLE_OUT) memset(buf[i], args[i].poison, args[i].bytes);
			a[i] = args[i].role == ROLE_SCALAR ? (uint64_t)args[i].scalar : (uint64_t)(uintptr_t)buf[i];
		}
		flush_cache(k);
		say('R');
		char go;
		readn(&go, 1);
		call(fn, a, (int)nargs);
		say('D');
		for (uint32_t i = 0; i < nargs; i++)
			if (args[i].role == ROLE_OUT) writen(buf[i], args[i].bytes);
	}
}
