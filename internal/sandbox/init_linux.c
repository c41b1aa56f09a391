//go:build linux && cgo

// The sandbox's init: pid 1 of a job's namespaces (see doc.go). The parent
// (start_linux.go) re-executes this binary with the job's configuration in
// CRUCIBLE_SANDBOX_INIT; this constructor runs before the Go runtime starts,
// does the whole init in C and never returns to it. Why C in a Go program:
// the Go runtime's start-up and the package initialisers of an 84 MB binary
// cost about 23 of the 29 CPU-ms of a sandboxed /bin/true on a slow machine
// (a cgo constructor reaches this point in 5.6 ms with every namespace),
// and a cold RTL task starts five sandboxes (runc's nsexec does the same).
//
// It builds the mount view, starts the job's main process under the limits,
// reaps every process of the tree, reports the main process's wait status
// on fd 3 as one JSON object ({"stage":"exit","status":N}, or
// {"stage":"setup"|"exec","err":"..."}) and exits, which makes the kernel
// kill whatever is left in the namespace. It runs single-threaded (no
// runtime has started any thread), as uid 0 of the new user namespace.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define RW_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

// Kept in step with sandbox.go (JobDir, InsideUID, InsideGID, DefaultPath).
#define JOB_DIR "/job"
#define INSIDE_ID "1000"
#define INSIDE_UID 1000
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define REPORT_FD 3

struct cmount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

struct climit {
	int res;
	unsigned long long soft, hard;
	char *name;
};

struct cbind {
	char *source, *target;  // target without its leading slash
	int writable;
};

// The configuration, decoded from the environment (encodeInitConfig in
// start_linux.go writes it: a sequence of "<length>:<bytes>" fields).
struct config {
	char *dir, *cwd, *hostname;
	int own_uid, extra_files, force_prlimit, hold_fd;
	long long tmp_bytes;
	int nlimits;
	struct climit *limits;
	int nbinds;
	struct cbind *binds;
	char **argv;  // NULL-terminated
	char **env;   // NULL-terminated
};

static void report_json(const char *stage, const char *err, unsigned status) {
	// A short object; err is escaped for JSON (it may hold any path).
	char buf[8192];
	size_t n = 0;
	n += snprintf(buf + n, sizeof buf - n, "{\"stage\":\"%s\"", stage);
	if (err) {
		n += snprintf(buf + n, sizeof buf - n, ",\"err\":\"");
		// 40 bytes kept back: one escape (6), the closing quote and the
		// status member (at most 22) always fit, so n never passes buf.
		for (const unsigned char *p = (const unsigned char *)err; *p && n < sizeof buf - 40; p++) {
			if (*p == '"' || *p == '\\') {
				buf[n++] = '\\';
				buf[n++] = *p;
			} else if (*p < 0x20) {
				n += snprintf(buf + n, sizeof buf - n, "\\u%04x", *p);
			} else {
				buf[n++] = *p;
			}
		}
		buf[n++] = '"';
	}
	n += snprintf(buf + n, sizeof buf - n, ",\"status\":%u}", status);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(REPORT_FD, buf + off, n - off);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) break;
		off += (size_t)w;
	}
	close(REPORT_FD);
}

// fail reports a setup or exec failure and ends the init (exit 2).
static void fail(const char *stage, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void fail(const char *stage, const char *fmt, ...) {
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	report_json(stage, msg, 0);
	_exit(2);
}

static char *xstrdup(const char *s) {
	char *d = strdup(s);
	if (!d) fail("setup", "out of memory");
	return d;
}

static void *xcalloc(size_t n, size_t size) {
	void *p = calloc(n ? n : 1, size);
	if (!p) fail("setup", "out of memory");
	return p;
}

static char *path_join(const char *a, const char *b) {
	size_t la = strlen(a), lb = strlen(b);
	char *p = xcalloc(la + lb + 2, 1);
	memcpy(p, a, la);
	size_t n = la;
	if (n == 0 || p[n - 1] != '/') p[n++] = '/';
	while (*b == '/') b++, lb--;
	memcpy(p + n, b, lb);
	return p;
}

// ---- configuration ----

struct cursor {
	const char *p;
};

static char *next_field(struct cursor *c) {
	char *end;
	errno = 0;
	unsigned long len = strtoul(c->p, &end, 10);
	if (errno || end == c->p || *end != ':' || strnlen(end + 1, len) < len) fail("setup", "config: malformed field");
	char *s = xcalloc(len + 1, 1);
	memcpy(s, end + 1, len);
	c->p = end + 1 + len;
	return s;
}

static long long next_int(struct cursor *c) {
	char *s = next_field(c), *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *s == 0 || *end != 0) fail("setup", "config: %s is not a number", s);
	free(s);
	return v;
}

static unsigned long long next_uint(struct cursor *c) {
	char *s = next_field(c), *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *s == 0 || *end != 0) fail("setup", "config: %s is not a number", s);
	free(s);
	return v;
}

static char **next_list(struct cursor *c) {
	long long n = next_int(c);
	if (n < 0 || n > 1 << 20) fail("setup", "config: list of %lld", n);
	char **l = xcalloc((size_t)n + 1, sizeof(char *));
	for (long long i = 0; i < n; i++) l[i] = next_field(c);
	return l;
}

static void parse_config(const char *blob, struct config *cfg) {
	struct cursor c = {blob};
	cfg->dir = next_field(&c);
	cfg->cwd = next_field(&c);
	cfg->hostname = next_field(&c);
	cfg->own_uid = (int)next_int(&c);
	cfg->extra_files = (int)next_int(&c);
	cfg->force_prlimit = (int)next_int(&c);
	cfg->hold_fd = (int)next_int(&c);
	cfg->tmp_bytes = next_int(&c);
	cfg->nlimits = (int)next_int(&c);
	if (cfg->nlimits < 0 || cfg->nlimits > 64) fail("setup", "config: %d limits", cfg->nlimits);
	cfg->limits = xcalloc((size_t)cfg->nlimits, sizeof *cfg->limits);
	for (int i = 0; i < cfg->nlimits; i++) {
		cfg->limits[i].res = (int)next_int(&c);
		cfg->limits[i].soft = next_uint(&c);
		cfg->limits[i].hard = next_uint(&c);
		cfg->limits[i].name = next_field(&c);
	}
	cfg->nbinds = (int)next_int(&c);
	if (cfg->nbinds < 0 || cfg->nbinds > 4096) fail("setup", "config: %d binds", cfg->nbinds);
	cfg->binds = xcalloc((size_t)cfg->nbinds, sizeof *cfg->binds);
	for (int i = 0; i < cfg->nbinds; i++) {
		cfg->binds[i].source = next_field(&c);
		cfg->binds[i].target = next_field(&c);
		cfg->binds[i].writable = (int)next_int(&c);
	}
	cfg->argv = next_list(&c);
	cfg->env = next_list(&c);
	if (*c.p != 0) fail("setup", "config: trailing bytes");
	if (!cfg->argv[0]) fail("setup", "config: empty argv");
}

// ---- the mount view ----
//
// Every bind source is cloned (open_tree) before anything is mounted, so
// covering a path later cannot hide a source; the new root is a small tmpfs
// mounted over the job directory's own path (which exists by construction),
// filled, pivoted into, and made read-only.

// The top-level host entries mirrored read-only: a symbolic link (merged
// /usr) is recreated, a directory is bound.
static const char *system_entries[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL};
// The /etc files the toolchains read (the dynamic loader's cache,
// alternatives links for cc/c++, perl's config for Verilator).
static const char *etc_entries[] = {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "perl",
				    "localtime", "nsswitch.conf", NULL};
// The device nodes a job may open.
static const char *dev_entries[] = {"null", "zero", "full", "random", "urandom", NULL};

struct tree {
	int fd;
	char *target;  // relative to the new root
	int file;
};

struct link {
	char *target, *text;
};

static struct tree clone_tree(const char *host, const char *target, uint64_t attrs) {
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0) fail("setup", "open_tree %s: %s", host, strerror(errno));
	struct cmount_attr a = {.attr_set = attrs};
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0)
		fail("setup", "mount_setattr %s: %s", host, strerror(errno));
	struct stat st;
	if (stat(host, &st) < 0) fail("setup", "stat %s: %s", host, strerror(errno));
	return (struct tree){fd, xstrdup(target), !S_ISDIR(st.st_mode)};
}

static void mkdir_all(const char *path, mode_t mode) {
	char *p = xstrdup(path);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == 0) {
			char c = *s;
			*s = 0;
			if (mkdir(p, mode) < 0 && errno != EEXIST) fail("setup", "mkdir %s: %s", p, strerror(errno));
			*s = c;
			if (c == 0) break;
		}
	}
	free(p);
}

static void write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) fail("setup", "open %s: %s", path, strerror(errno));
	size_t n = strlen(text);
	if (write(fd, text, n) != (ssize_t)n) fail("setup", "write %s: %s", path, strerror(errno));
	close(fd);
}

static char *read_link(const char *path) {
	char buf[4096];
	ssize_t n = readlink(path, buf, sizeof buf - 1);
	if (n < 0) fail("setup", "readlink %s: %s", path, strerror(errno));
	buf[n] = 0;
	return xstrdup(buf);
}

static void build_view(const struct config *cfg) {
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) fail("setup", "making mounts private: %s", strerror(errno));
	int cap = 32 + cfg->nbinds;
	struct tree *trees = xcalloc((size_t)cap, sizeof *trees);
	struct link *links = xcalloc(32, sizeof *links);
	int nt = 0, nl = 0;
	struct stat st;
	char host[4096];
	for (const char **e = system_entries; *e; e++) {
		snprintf(host, sizeof host, "/%s", *e);
		if (lstat(host, &st) < 0) continue;
		if (S_ISLNK(st.st_mode))
			links[nl++] = (struct link){xstrdup(*e), read_link(host)};
		else if (S_ISDIR(st.st_mode))
			trees[nt++] = clone_tree(host, *e, RO_ATTRS);
	}
	for (const char **e = etc_entries; *e; e++) {
		char target[256];
		snprintf(host, sizeof host, "/etc/%s", *e);
		snprintf(target, sizeof target, "etc/%s", *e);
		if (lstat(host, &st) < 0) continue;
		if (S_ISLNK(st.st_mode))
			links[nl++] = (struct link){xstrdup(target), read_link(host)};
		else
			trees[nt++] = clone_tree(host, target, RO_ATTRS);
	}
	for (const char **e = dev_entries; *e; e++) {
		char target[256];
		snprintf(host, sizeof host, "/dev/%s", *e);
		snprintf(target, sizeof target, "dev/%s", *e);
		trees[nt++] = clone_tree(host, target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	}
	for (int i = 0; i < cfg->nbinds; i++)
		trees[nt++] = clone_tree(cfg->binds[i].source, cfg->binds[i].target, cfg->binds[i].writable ? RW_ATTRS : RO_ATTRS);
	trees[nt++] = clone_tree(cfg->dir, JOB_DIR + 1, RW_ATTRS);

	const char *root = cfg->dir;
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0)
		fail("setup", "root tmpfs: %s", strerror(errno));
	const char *dirs[] = {"etc", "dev", "proc", "tmp", JOB_DIR + 1, NULL};
	for (const char **d = dirs; *d; d++) mkdir_all(path_join(root, *d), 0755);
	links[nl++] = (struct link){"dev/fd", "/proc/self/fd"};
	links[nl++] = (struct link){"dev/stdin", "/proc/self/fd/0"};
	links[nl++] = (struct link){"dev/stdout", "/proc/self/fd/1"};
	links[nl++] = (struct link){"dev/stderr", "/proc/self/fd/2"};
	for (int i = 0; i < nl; i++) {
		char *dst = path_join(root, links[i].target);
		if (symlink(links[i].text, dst) < 0) fail("setup", "symlink %s: %s", dst, strerror(errno));
	}
	write_file(path_join(root, "etc/passwd"), "root:x:0:0:root:/:/usr/sbin/nologin\nsandbox:x:" INSIDE_ID ":" INSIDE_ID "::" JOB_DIR ":/bin/sh\n");
	write_file(path_join(root, "etc/group"), "root:x:0:\nsandbox:x:" INSIDE_ID ":\n");
	char hostname[512];
	snprintf(hostname, sizeof hostname, "%s\n", cfg->hostname);
	write_file(path_join(root, "etc/hostname"), hostname);
	for (int i = 0; i < nt; i++) {
		char *dst = path_join(root, trees[i].target);
		if (trees[i].file) {
			char *parent = xstrdup(dst);
			*strrchr(parent, '/') = 0;
			mkdir_all(parent, 0755);
			int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0) fail("setup", "open %s: %s", dst, strerror(errno));
			close(fd);
		} else {
			mkdir_all(dst, 0755);
		}
		if (syscall(SYS_move_mount, trees[i].fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			fail("setup", "move_mount %s: %s", trees[i].target, strerror(errno));
		close(trees[i].fd);
	}
	if (cfg->tmp_bytes > 0) {
		char opts[128];
		snprintf(opts, sizeof opts, "size=%lld,nr_inodes=65536,mode=01777", cfg->tmp_bytes);
		if (mount("tmpfs", path_join(root, "tmp"), "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
			fail("setup", "/tmp tmpfs: %s", strerror(errno));
	}
	// procfs may be mounted in a user namespace only while a full /proc is
	// visible in it, so before the host root goes. It shows the new PID
	// namespace: ours.
	if (mount("proc", path_join(root, "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("setup", "mounting /proc: %s", strerror(errno));
	if (chdir(root) < 0) fail("setup", "chdir %s: %s", root, strerror(errno));
	if (syscall(SYS_pivot_root, ".", ".") < 0) fail("setup", "pivot_root: %s", strerror(errno));
	// The old root is stacked under the new one: detach it, and with it
	// every host path.
	if (umount2(".", MNT_DETACH) < 0) fail("setup", "detaching the host root: %s", strerror(errno));
	if (chdir("/") < 0) fail("setup", "chdir /: %s", strerror(errno));
	if (mount("", "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		fail("setup", "making the root read-only: %s", strerror(errno));
}

// ---- the job ----

// look_path resolves name on env's PATH in the sandbox's view; NULL if it
// is not there.
static char *look_path(const char *name, char **env) {
	if (strchr(name, '/')) return xstrdup(name);
	const char *path = DEFAULT_PATH;
	for (char **e = env; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
	char *list = xstrdup(path);
	for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/') continue;
		char *p = path_join(d, name);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return p;
		free(p);
	}
	return NULL;
}

// Where a child failed before its exec: the stage codes it writes to its
// error pipe, with errno.
enum { CHILD_SETUP = 1, CHILD_CHDIR, CHILD_TRACEME, CHILD_EXEC };

static void child_fail(int errfd, int stage) __attribute__((noreturn));
static void child_fail(int errfd, int stage) {
	int msg[2] = {stage, errno};
	ssize_t w = write(errfd, msg, sizeof msg);
	(void)w;
	_exit(127);
}

static int write_proc(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

// run_child is the job's main process between fork and exec.
static void run_child(const struct config *cfg, const char *path, char **argv, int errfd, int traceme) {
	if (cfg->own_uid) {
		// One host uid only: a nested user namespace makes the job
		// unprivileged (InsideUID, no capabilities over our namespace).
		if (unshare(CLONE_NEWUSER) < 0 || write_proc("/proc/self/setgroups", "deny") < 0 ||
		    write_proc("/proc/self/uid_map", INSIDE_ID " 0 1") < 0 || write_proc("/proc/self/gid_map", INSIDE_ID " 0 1") < 0)
			child_fail(errfd, CHILD_SETUP);
	} else if (setgroups(0, NULL) < 0 || setgid(INSIDE_UID) < 0 || setuid(INSIDE_UID) < 0) {
		child_fail(errfd, CHILD_SETUP);
	}
	if (chdir(cfg->cwd) < 0) child_fail(errfd, CHILD_CHDIR);
	// The init's fds 4.. go to the job as 3..; nothing else of ours but
	// 0-2 survives the exec (the report fd 3 included).
	for (int i = 0; i < cfg->extra_files; i++)
		if (dup2(4 + i, 3 + i) < 0) child_fail(errfd, CHILD_SETUP);
	if (syscall(SYS_close_range, 3 + cfg->extra_files, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		for (int fd = 3 + cfg->extra_files; fd < 65536; fd++)
			if (fd != errfd) fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (traceme && ptrace(PTRACE_TRACEME, 0, 0, 0) < 0) child_fail(errfd, CHILD_TRACEME);
	execve(path, argv, cfg->env);
	child_fail(errfd, CHILD_EXEC);
}

// start_child forks the job's main process and waits for its exec. It
// returns the pid, or -1 with *stage and errno set where the child failed.
static pid_t start_child(const struct config *cfg, const char *path, char **argv, int traceme, int *stage) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) fail("setup", "pipe: %s", strerror(errno));
	// Above every fd the child moves into place.
	int errfd = fcntl(p[1], F_DUPFD_CLOEXEC, 64 + cfg->extra_files);
	if (errfd < 0) fail("setup", "fcntl: %s", strerror(errno));
	close(p[1]);
	pid_t pid = fork();
	if (pid < 0) fail("setup", "fork: %s", strerror(errno));
	if (pid == 0) run_child(cfg, path, argv, errfd, traceme);
	close(errfd);
	int msg[2];
	ssize_t n;
	do n = read(p[0], msg, sizeof msg);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == 0) return pid;  // the pipe closed at a successful exec
	int ws;
	while (waitpid(pid, &ws, __WALL) < 0 && errno == EINTR) {
	}
	if (n != sizeof msg) fail("setup", "job start: short error report");
	*stage = msg[0];
	errno = msg[1];
	return -1;
}

// limit_stopped sets the limits on a tracee stopped at its exec and lets it go.
static void limit_stopped(pid_t pid, const struct config *cfg) {
	int ws;
	for (;;) {
		if (waitpid(pid, &ws, __WALL) >= 0) break;
		if (errno == EINTR) continue;
		int e = errno;
		kill(pid, SIGKILL);
		fail("setup", "waiting for the exec stop: %s", strerror(e));
	}
	if (!WIFSTOPPED(ws)) fail("setup", "job ended before its exec stop (status %#x)", ws);
	for (int i = 0; i < cfg->nlimits; i++) {
		struct rlimit64 l = {cfg->limits[i].soft, cfg->limits[i].hard};
		if (prlimit64(pid, cfg->limits[i].res, &l, NULL) < 0) {
			int e = errno;
			kill(pid, SIGKILL);
			fail("setup", "prlimit: %s", strerror(e));
		}
	}
	if (ptrace(PTRACE_DETACH, pid, 0, 0) < 0) {
		int e = errno;
		kill(pid, SIGKILL);
		fail("setup", "ptrace detach: %s", strerror(e));
	}
}

// start_job starts the main process as the job's uid with the limits set
// before its first instruction: traced, it stops at its exec, the limits are
// set on it with prlimit(2) and it is let go. Where ptrace is refused, it is
// started through prlimit(1) instead (an extra exec of a small C program).
static pid_t start_job(const struct config *cfg) {
	char *path = look_path(cfg->argv[0], cfg->env);
	if (!path) fail("exec", "%s: executable file not found in $PATH in the sandbox's PATH", cfg->argv[0]);
	int stage = 0;
	if (!cfg->force_prlimit) {
		pid_t pid = start_child(cfg, path, cfg->argv, 1, &stage);
		if (pid > 0) {
			limit_stopped(pid, cfg);
			return pid;
		}
		if (stage != CHILD_TRACEME || (errno != EPERM && errno != ENOSYS)) goto child_failed;
	}
	char *pl = look_path("prlimit", cfg->env);
	if (!pl) fail("setup", "ptrace is refused and prlimit(1) is not in the sandbox: cannot set limits");
	int argc = 0;
	while (cfg->argv[argc]) argc++;
	char **argv = xcalloc((size_t)(cfg->nlimits + argc + 3), sizeof(char *));
	int n = 0;
	argv[n++] = pl;
	for (int i = 0; i < cfg->nlimits; i++) {
		char buf[128];
		snprintf(buf, sizeof buf, "--%s=%llu:%llu", cfg->limits[i].name, cfg->limits[i].soft, cfg->limits[i].hard);
		argv[n++] = xstrdup(buf);
	}
	argv[n++] = "--";
	argv[n++] = path;
	for (int i = 1; i < argc; i++) argv[n++] = cfg->argv[i];
	pid_t pid = start_child(cfg, pl, argv, 0, &stage);
	if (pid > 0) return pid;
child_failed:
	if (stage == CHILD_SETUP) fail("setup", "job credentials: %s", strerror(errno));
	fail("exec", "%s: %s", cfg->argv[0], strerror(errno));
}

// reset_signals sets every signal's action to SIG_DFL and unblocks them
// all. pid 1 of a namespace gets from inside it only the signals it has a
// handler for, and this init installs none: the kernel drops whatever the
// tree sends it (TestCannotKillParent sends every signal). An ignored
// signal inherited from the verifier's environment (a CI runner may leave
// SIGHUP or SIGRTMIN ignored) would stay ignored through the job's exec;
// default actions are what the job should start with.
static void reset_signals(void) {
	for (int sig = 1; sig < 65; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		uint64_t act[4] = {0, 0, 0, 0};  // the kernel's struct sigaction: SIG_DFL, no flags
		if (syscall(SYS_rt_sigaction, sig, act, NULL, 8) < 0 && errno != EINVAL)
			fail("setup", "rt_sigaction(%d, SIG_DFL): %s", sig, strerror(errno));
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

// run_pid1 is pid 1 of the job's PID namespace: it builds the view, starts
// the job and reaps the tree.
static void run_pid1(struct config *cfg) __attribute__((noreturn));
static void run_pid1(struct config *cfg) {
	build_view(cfg);
	if (sethostname(cfg->hostname, strlen(cfg->hostname)) < 0) fail("setup", "sethostname: %s", strerror(errno));
	// The job gains no capability at exec, whatever it runs: empty bounding
	// set (the init keeps its own effective set), no_new_privs.
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			fail("setup", "dropping capability %d: %s", c, strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) fail("setup", "no_new_privs: %s", strerror(errno));
	if (cfg->hold_fd > 0) {
		// Spec.Hold: wait for the parent's go (a byte, or EOF when it is
		// gone), then close the fd: the job never inherits it.
		char b;
		ssize_t n;
		do n = read(cfg->hold_fd, &b, 1);
		while (n < 0 && errno == EINTR);
		close(cfg->hold_fd);
	}
	pid_t pid = start_job(cfg);
	// Reap everything (orphans are reparented to us) until the main process
	// is gone.
	for (;;) {
		int ws;
		pid_t w = waitpid(-1, &ws, __WALL);
		if (w < 0) {
			if (errno == EINTR) continue;
			fail("setup", "wait: %s", strerror(errno));
		}
		if (w == pid && (WIFEXITED(ws) || WIFSIGNALED(ws))) {
			report_json("exit", NULL, (unsigned)ws);
			_exit(0);
		}
	}
}

static void ctl_write(const char *msg) {
	size_t n = strlen(msg);
	if (write(REPORT_FD, msg, n) != (ssize_t)n) _exit(2);
}

// ctl_ack waits for the verifier's go-ahead; anything else (it gave up on
// us and closed its end) ends the init.
static void ctl_ack(void) {
	char b = 0;
	ssize_t n;
	do n = read(REPORT_FD, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || b != 'A') _exit(2);
}

// run_init is the process the verifier started (with a plain vfork+exec;
// see sysProcAttr in ids_linux.go). It creates the namespaces, lets the
// verifier write the user namespace's id maps, forks pid 1 of the new PID
// namespace, tells the verifier its host pid (so the verifier can kill the
// tree through a pidfd of pid 1: the kernel kills every process of the
// namespace before pid 1 is reaped) and waits for it, so this process's
// rusage, as the verifier sees it, covers the whole tree. The messages on
// fd 3 (a socket) before the report: "U" (namespaces made; reply "A" once
// the maps are written) and "P<pid>\n" (reply "A" once the pidfd is open).
// A report ({...}) instead means the init failed.
static void run_init(const char *blob) __attribute__((noreturn));
static void run_init(const char *blob) {
	fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
	reset_signals();
	// A write to a reader that is gone (the verifier, or pid 1 killed
	// before our go) is an error here, not our end: pid 1 unblocks it.
	sigset_t pipe_only;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_only, NULL);
	prctl(PR_SET_NAME, "sandbox-init", 0, 0, 0);
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	parse_config(blob, &cfg);
	if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		    CLONE_NEWCGROUP) < 0)
		fail("setup", "unshare: %s", strerror(errno));
	ctl_write("U");
	ctl_ack();
	// pid 1 starts only on our byte on alive: after the verifier holds its
	// pidfd, and never if we are gone (EOF) before its PDEATHSIG was set.
	int alive[2];
	if (pipe2(alive, O_CLOEXEC) < 0) fail("setup", "pipe: %s", strerror(errno));
	pid_t pid1 = fork();
	if (pid1 < 0) fail("setup", "fork: %s", strerror(errno));
	if (pid1 == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(alive[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) _exit(2);
		char b;
		ssize_t n;
		do n = read(alive[0], &b, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1) _exit(2);
		close(alive[0]);
		run_pid1(&cfg);
	}
	close(alive[0]);
	char msg[32];
	snprintf(msg, sizeof msg, "P%d\n", (int)pid1);
	ctl_write(msg);
	ctl_ack();
	// If pid 1 is gone already (the verifier killed it), there is only it
	// to reap.
	ssize_t w = write(alive[1], "G", 1);
	(void)w;
	// Nothing of ours stays open: the tree holds the streams, the report
	// socket and the job's files, and they close when it ends.
	if (syscall(SYS_close_range, 0, ~0U, 0) < 0)
		for (int fd = 0; fd < 65536; fd++) close(fd);
	int ws;
	while (waitpid(pid1, &ws, 0) < 0)
		if (errno != EINTR) _exit(2);
	_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
}

__attribute__((constructor)) static void crucible_sandbox_init(void) {
	const char *blob = getenv("CRUCIBLE_SANDBOX_INIT");
	if (blob) run_init(blob);
}
