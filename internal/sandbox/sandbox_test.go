//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The attack programs are small C files compiled on the host into the job
// directory (the job's own files) and run in a sandbox. Each prints what it
// managed; the tests check the host side, which is what matters.

func requireSandbox(t testing.TB) {
	t.Helper()
	if err := Check(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// compile builds C source into dir/name with gcc.
func compile(t testing.TB, dir, name, src string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc not found")
		}
		t.Skip("gcc not found")
	}
	c := filepath.Join(t.TempDir(), name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-o", filepath.Join(dir, name), c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
}

func token(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

var testLimits = Limits{AddressSpaceBytes: 512 << 20, CPUSeconds: 20, FileSizeBytes: 16 << 20, Processes: 64, TmpBytes: 1 << 20}

type run struct {
	Result
	out, err string
}

func runIn(t testing.TB, dir string, lim Limits, timeout time.Duration, argv ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	res := Run(context.Background(), Spec{Argv: argv, Dir: dir, Stdout: &out, Stderr: &errb, Limits: lim, Timeout: timeout})
	if res.SandboxErr != nil {
		t.Fatalf("sandbox failed: %v\nstderr: %s", res.SandboxErr, errb.String())
	}
	return run{res, out.String(), errb.String()}
}

const writeOutside = `#include <stdio.h>
#include <errno.h>
#include <string.h>
int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "w");
		if (!f) { printf("%s: %s\n", argv[i], strerror(errno)); continue; }
		fputs("escaped\n", f);
		printf("%s: %s\n", argv[i], fclose(f) == 0 ? "written" : strerror(errno));
	}
	return 0;
}
`

// TestCannotWriteOutsideJobDir: absolute host paths, /tmp, ../ and the
// system directories are not writable from inside; nothing appears on the
// host outside the job directory.
func TestCannotWriteOutsideJobDir(t *testing.T) {
	requireSandbox(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "job")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.Chmod(other, 0o777); err != nil {
		t.Fatal(err)
	}
	compile(t, dir, "w", writeOutside)
	tok := token(t)
	hostTmp := filepath.Join(os.TempDir(), "crucible-escape-"+tok)
	targets := []string{filepath.Join(other, "x"), hostTmp, "../escape-" + tok, "/job/../escape-" + tok,
		filepath.Join(dir, "abs-host-path"), "/etc/escape-" + tok, "/usr/escape-" + tok, "/escape-" + tok, "/proc/escape", "/job/inside"}
	r := runIn(t, dir, testLimits, time.Minute, append([]string{"./w"}, targets...)...)
	t.Logf("inside:\n%s%s", r.out, r.err)
	for _, p := range []string{filepath.Join(other, "x"), hostTmp, filepath.Join(parent, "escape-"+tok), "/etc/escape-" + tok,
		"/usr/escape-" + tok, "/escape-" + tok} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists on the host after the job (err %v)", p, err)
			os.Remove(p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "inside")); err != nil || string(b) != "escaped\n" {
		t.Errorf("the job could not write its own directory: %q %v", b, err)
	}
	if !strings.Contains(r.out, "/tmp/") && !strings.Contains(r.out, hostTmp) {
		t.Errorf("no report for the /tmp target:\n%s", r.out)
	}
}

const readFiles = `#include <stdio.h>
int main(int argc, char **argv) {
	char buf[256];
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "r");
		if (!f) { printf("%s: cannot open\n", argv[i]); continue; }
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = 0;
		printf("%s: read %s\n", argv[i], buf);
		fclose(f);
	}
	return 0;
}
`

// TestCannotReadOutsideJobDir: a world-readable file in another directory,
// the verifier's files and /etc/shadow are not in the job's view.
func TestCannotReadOutsideJobDir(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "r", readFiles)
	other := t.TempDir()
	os.Chmod(other, 0o755)
	tok := token(t)
	secret := filepath.Join(other, "reference.sv")
	if err := os.WriteFile(secret, []byte("SECRET-"+tok), 0o644); err != nil {
		t.Fatal(err)
	}
	shadow := filepath.Join(other, "shadow")
	if err := os.WriteFile(shadow, []byte("SHADOW-"+tok), 0o644); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	r := runIn(t, dir, testLimits, time.Minute, "./r", secret, shadow, "/etc/shadow", self, "/proc/1/environ", "/proc/1/exe", "../"+filepath.Base(other))
	t.Logf("inside:\n%s", r.out)
	if strings.Contains(r.out, tok) {
		t.Errorf("the job read a host file:\n%s", r.out)
	}
	for _, p := range []string{secret, shadow, "/etc/shadow", self, "/proc/1/environ"} {
		if !strings.Contains(r.out, p+": cannot open") {
			t.Errorf("%s was opened from inside:\n%s", p, r.out)
		}
	}
}

// TestBindIsReadOnly: a file the caller binds read-only is readable and not
// writable.
func TestBindIsReadOnly(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "w", writeOutside)
	ref := t.TempDir()
	os.Chmod(ref, 0o755)
	if err := os.WriteFile(filepath.Join(ref, "ref.txt"), []byte("ref\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res := Run(context.Background(), Spec{Argv: []string{"./w", "/ref/ref.txt", "/ref/new"}, Dir: dir, Stdout: &out,
		Binds: []Bind{{Source: ref, Target: "/ref"}}, Limits: testLimits, Timeout: time.Minute})
	if !res.Exited0() {
		t.Fatalf("%+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ref, "ref.txt")); string(b) != "ref\n" {
		t.Errorf("read-only bind was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ref, "new")); err == nil {
		t.Error("file created in a read-only bind")
	}
	if !strings.Contains(out.String(), "Read-only file system") {
		t.Errorf("want EROFS inside:\n%s", out.String())
	}
	if _, err := Start(Spec{Argv: []string{"true"}, Dir: dir, Binds: []Bind{{Source: ref, Target: "/usr/x"}}}); err == nil {
		t.Error("a bind over a system directory was accepted")
	}
}

const killParent = `#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
int main(int argc, char **argv) {
	union sigval v = {0};
	pid_t host = atoi(argv[1]);
	printf("ppid %d\n", (int)getppid());
	printf("kill ppid: %s\n", kill(getppid(), SIGKILL) ? strerror(errno) : "sent");
	printf("sigqueue ppid: %s\n", sigqueue(getppid(), SIGKILL, v) ? strerror(errno) : "sent");
	printf("kill 1 TERM: %s\n", kill(1, SIGTERM) ? strerror(errno) : "sent");
	/* Every other signal too, through kill and sigqueue: none may end the init. */
	for (int s = 1; s < 65; s++) {
		if (s == SIGKILL || s == SIGSTOP) continue;
		int k = kill(1, s), q = sigqueue(1, s, v);
		printf("signal %d to pid 1: kill %s, sigqueue %s\n", s, k ? strerror(errno) : "sent", q ? strerror(errno) : "sent");
	}
	usleep(20000); /* let a fatal signal land before the job ends */
	printf("kill host verifier: %s\n", kill(host, SIGKILL) ? strerror(errno) : "sent");
	printf("sigqueue host verifier: %s\n", sigqueue(host, SIGKILL, v) ? strerror(errno) : "sent");
	signal(SIGTERM, SIG_IGN);
	printf("kill -1: %s\n", kill(-1, SIGTERM) ? strerror(errno) : "sent");
	printf("alive\n");
	return 0;
}
`

// TestCannotKillParent: kill and sigqueue of the parent (our init), of pid
// 1 and of the verifier's host pid reach nothing; the job finishes and the
// init reports its status.
func TestCannotKillParent(t *testing.T) {
	requireSandbox(t)
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "job-uid", true: "own-uid"}[own], func(t *testing.T) {
			defer func(old bool) { forceOwnUID = old }(forceOwnUID)
			forceOwnUID = own
			dir := t.TempDir()
			compile(t, dir, "k", killParent)
			r := runIn(t, dir, testLimits, time.Minute, "./k", strconv.Itoa(os.Getpid()))
			t.Logf("inside:\n%s", r.out)
			if !r.Exited0() || !strings.Contains(r.out, "alive") {
				t.Fatalf("job did not finish normally: %+v\n%s%s", r.Result, r.out, r.err)
			}
			if !strings.Contains(r.out, "kill host verifier: No such process") {
				t.Errorf("the verifier's pid was reachable:\n%s", r.out)
			}
		})
	}
}

const orphan = `#define _GNU_SOURCE
#include <stdio.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
	int p[2];
	pipe(p);
	/* a raw-syscall fork, then setsid and a second fork: a daemon */
	if (syscall(SYS_fork) == 0) {
		setsid();
		if (fork() == 0) {
			signal(SIGHUP, SIG_IGN); signal(SIGTERM, SIG_IGN);
			prctl(PR_SET_NAME, argv[1]);
			write(p[1], "x", 1);
			for (;;) pause();
		}
		_exit(0);
	}
	char c;
	read(p[0], &c, 1); /* the daemon is up */
	printf("daemon started\n");
	return 0;
}
`

// procsNamed lists host processes whose comm is name.
func procsNamed(name string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == name {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestOrphanDiesWithJob: a double-forked setsid daemon does not outlive the
// job: when Run returns it is gone.
func TestOrphanDiesWithJob(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "o", orphan)
	name := "orph" + token(t)[:8]
	r := runIn(t, dir, testLimits, time.Minute, "./o", name)
	if !r.Exited0() || !strings.Contains(r.out, "daemon started") {
		t.Fatalf("%+v\n%s%s", r.Result, r.out, r.err)
	}
	if pids := procsNamed(name); len(pids) > 0 {
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.Fatalf("the job's daemon outlived it: pids %v", pids)
	}
}

const connect = `#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
int main(int argc, char **argv) {
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	printf("tcp: %s\n", connect(s, (struct sockaddr *)&a, sizeof a) ? strerror(errno) : "connected");
	int u = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un ua = {0};
	ua.sun_family = AF_UNIX;
	strcpy(ua.sun_path + 1, argv[2]); /* abstract */
	printf("abstract: %s\n", connect(u, (struct sockaddr *)&ua, sizeof(sa_family_t) + 1 + strlen(argv[2])) ? strerror(errno) : "connected");
	return 0;
}
`

// TestNoNetwork: a loopback TCP listener and an abstract unix socket of the
// test are unreachable from inside.
func TestNoNetwork(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "c", connect)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	abs := "crucible-test-" + token(t)
	u, err := net.Listen("unix", "@"+abs)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	port := l.Addr().(*net.TCPAddr).Port
	r := runIn(t, dir, testLimits, time.Minute, "./c", strconv.Itoa(port), abs)
	t.Logf("inside:\n%s", r.out)
	if strings.Contains(r.out, "connected") || !strings.Contains(r.out, "tcp: ") || !strings.Contains(r.out, "abstract: ") {
		t.Errorf("the job reached the host's network:\n%s", r.out)
	}
}

const memBomb = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
	size_t total = 0;
	for (int i = 0; i < 64; i++) {
		char *p = malloc(64 << 20);
		if (!p) { printf("malloc failed after %zu MiB\n", total >> 20); return 3; }
		memset(p, 1, 64 << 20);
		total += 64 << 20;
	}
	printf("allocated %zu MiB\n", total >> 20);
	return 0;
}
`

// TestMemoryBombStopped: RLIMIT_AS stops a 4 GiB allocation, also in a
// grandchild started through a shell.
func TestMemoryBombStopped(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "m", memBomb)
	lim := testLimits
	lim.AddressSpaceBytes = 256 << 20
	r := runIn(t, dir, lim, time.Minute, "sh", "-c", "./m; echo status $?")
	t.Logf("inside:\n%s%s", r.out, r.err)
	if strings.Contains(r.out, "allocated") || !strings.Contains(r.out, "malloc failed") {
		t.Errorf("memory bomb not stopped by RLIMIT_AS:\n%s", r.out)
	}
}

// TestCompilerIsLimited: the limits hold for compilers too: cc1 under a
// small address space fails instead of growing.
func TestCompilerIsLimited(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.c"), []byte("int main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lim := testLimits
	lim.AddressSpaceBytes = 16 << 20
	r := runIn(t, dir, lim, time.Minute, "gcc", "-c", "x.c", "-o", "x.o")
	if r.Exited0() {
		t.Fatalf("gcc compiled under a 16 MiB address space: limits do not reach the compiler")
	}
	lim.AddressSpaceBytes = 1 << 30
	if r := runIn(t, dir, lim, time.Minute, "gcc", "-c", "x.c", "-o", "x.o"); !r.Exited0() {
		t.Fatalf("gcc fails in the sandbox with 1 GiB: %+v\n%s", r.Result, r.err)
	}
}

const forkBomb = `#include <stdio.h>
#include <unistd.h>
#include <sys/prctl.h>
int main(int argc, char **argv) {
	int n = 0;
	for (int i = 0; i < 100000; i++) {
		pid_t p = fork();
		if (p < 0) break;
		if (p == 0) { prctl(PR_SET_NAME, argv[1]); for (;;) pause(); }
		n++;
	}
	printf("forked %d\n", n);
	return 0;
}
`

// TestForkBombBounded: RLIMIT_NPROC bounds the tree, and every child dies
// with the job.
func TestForkBombBounded(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "f", forkBomb)
	name := "fb" + token(t)[:8]
	lim := testLimits
	lim.Processes = 20
	r := runIn(t, dir, lim, time.Minute, "./f", name)
	var n int
	if _, err := fmt.Sscanf(r.out, "forked %d", &n); err != nil {
		t.Fatalf("%v: %+v\n%s%s", err, r.Result, r.out, r.err)
	}
	if n <= 0 || n >= lim.Processes {
		t.Errorf("forked %d processes under RLIMIT_NPROC=%d", n, lim.Processes)
	}
	if pids := procsNamed(name); len(pids) > 0 {
		t.Errorf("%d fork-bomb children outlived the job", len(pids))
	}
}

const blockOnStdout = `#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
int main(void) {
	char c;
	int p[2];
	/* the read end of our own stdout pipe, where the kernel allows it */
	int fd = open("/proc/self/fd/1", O_RDONLY);
	if (fd >= 0)
		while (read(fd, &c, 1) > 0)
			;
	/* else a pipe of our own: we hold its write end, so no EOF ever */
	pipe(p);
	read(p[0], &c, 1);
	return 0;
}
`

// TestBlockedTimeoutIsNotStarved: a job that blocks reading its own stdout
// hits the wall clock while sleeping: TimedOut, and not starved (the
// candidate's timeout, never an excused infrastructure fault).
func TestBlockedTimeoutIsNotStarved(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "b", blockOnStdout)
	// 5 s: a start-up delayed by load (run-queue time) stays a small share
	// of the off-CPU time, which is what Starved compares; the job spends
	// the rest asleep on its read, however busy the machine is.
	r := runIn(t, dir, testLimits, 5*time.Second, "./b")
	if !r.TimedOut || r.Signal != syscall.SIGKILL {
		t.Fatalf("want our timer to kill it: %+v", r.Result)
	}
	if !r.SchedKnown {
		t.Fatalf("no scheduler statistics at the timeout: %+v", r.Result)
	}
	if r.Starved() {
		t.Errorf("a blocked job was judged starved: %+v", r.Result)
	}
}

// TestStarved checks the starved/blocked rule on observed figures.
func TestStarved(t *testing.T) {
	for _, c := range []struct {
		r    Result
		want bool
	}{
		{Result{TimedOut: true, SchedKnown: true, Wall: 60 * time.Second, CPU: 5 * time.Second, RunDelay: 50 * time.Second}, true},
		{Result{TimedOut: true, SchedKnown: true, Wall: 60 * time.Second, CPU: 10 * time.Millisecond, RunDelay: time.Millisecond}, false},
		{Result{TimedOut: true, SchedKnown: true, Wall: 60 * time.Second, CPU: 20 * time.Second, RunDelay: 10 * time.Second}, false},
		{Result{TimedOut: false, SchedKnown: true, Wall: 60 * time.Second, RunDelay: 59 * time.Second}, false},
		{Result{TimedOut: true, SchedKnown: false, Wall: 60 * time.Second, RunDelay: 59 * time.Second}, false},
		// Eight spinning children on two cores: the waiting is its own.
		{Result{TimedOut: true, SchedKnown: true, Wall: 60 * time.Second, CPU: 120 * time.Second, RunDelay: 360 * time.Second}, false},
		{Result{TimedOut: true, SchedKnown: true, Wall: 60 * time.Second, CPU: 2 * time.Second, RunDelay: 400 * time.Second}, false},
	} {
		if got := c.r.Starved(); got != c.want {
			t.Errorf("%+v: Starved() = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestCPULimit: RLIMIT_CPU ends a busy loop with SIGXCPU, observed as the
// main process's signal.
func TestCPULimit(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "spin", "int main(void){ volatile unsigned long x = 0; for (;;) x++; }\n")
	lim := testLimits
	lim.CPUSeconds = 1
	r := runIn(t, dir, lim, 10*time.Minute, "./spin")
	if r.Signal != syscall.SIGXCPU || r.TimedOut {
		t.Fatalf("want SIGXCPU: %+v", r.Result)
	}
	if r.CPU < 500*time.Millisecond {
		t.Errorf("CPU %v under a 1 s limit that fired", r.CPU)
	}
}

// TestPrlimitFallback: where ptrace is refused the limits are set by
// prlimit(1); they hold the same.
func TestPrlimitFallback(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit not found")
	}
	defer func(old bool) { forcePrlimit = old }(forcePrlimit)
	for _, force := range []bool{false, true} {
		forcePrlimit = force
		dir := t.TempDir()
		r := runIn(t, dir, testLimits, time.Minute, "cat", "/proc/self/limits")
		for _, want := range []string{"Max address space         536870912            536870912",
			"Max cpu time              20                   21", "Max processes             64                   64",
			"Max core file size        0                    0", "Max file size             16777216             16777216"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("prlimit=%v: limit %q not set:\n%s", force, want, r.out)
			}
		}
	}
}

// TestIdentity: unprivileged uid, no capabilities, no_new_privs, own PID
// namespace with our init as pid 1.
func TestIdentity(t *testing.T) {
	requireSandbox(t)
	// A verifier started with a signal ignored (CI runners leave signal 32
	// ignored, which the Go runtime keeps) must not hand that to the job.
	restore := ignoreSignal(t, 32)
	defer restore()
	for _, own := range []bool{false, true} {
		defer func(old bool) { forceOwnUID = old }(forceOwnUID)
		forceOwnUID = own
		dir := t.TempDir()
		r := runIn(t, dir, testLimits, time.Minute, "sh", "-c", "id -u; grep -E '^(Cap(Prm|Eff|Bnd|Amb)|NoNewPrivs|SigIgn)' /proc/self/status; cat /proc/1/comm; hostname")
		want := []string{"1000\n", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
			"CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "sandbox-init\n", "sandbox\n",
			// The job starts with no signal ignored (the init's own signal
			// set-up is not inherited).
			"SigIgn:\t0000000000000000"}
		if !own {
			// In a nested user namespace (own uid) the bounding set is the
			// new namespace's full one; it grants nothing under no_new_privs.
			want = append(want, "CapBnd:\t0000000000000000")
		}
		for _, w := range want {
			if !strings.Contains(r.out, w) {
				t.Errorf("own=%v: want %q in:\n%s%s", own, w, r.out, r.err)
			}
		}
	}
}

// ignoreSignal sets sig to SIG_IGN in this process (directly: the Go
// runtime does not manage signal 32) and returns the restore.
func ignoreSignal(t *testing.T, sig int) func() {
	t.Helper()
	ign, old := [4]uint64{1}, [4]uint64{}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&ign)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction(%d): %v", sig, e)
	}
	return func() {
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	}
}

// TestExecErr: a program missing from the sandbox's view is ExecErr, not a
// sandbox failure; a host binary outside the view is missing too.
func TestExecErr(t *testing.T) {
	requireSandbox(t)
	self, _ := os.Executable()
	for _, prog := range []string{"no-such-tool-" + token(t), self} {
		res := Run(context.Background(), Spec{Argv: []string{prog}, Dir: t.TempDir(), Limits: testLimits, Timeout: time.Minute})
		if res.ExecErr == nil || res.SandboxErr != nil || res.Exited0() {
			t.Errorf("%s: %+v", prog, res)
		}
	}
}

// TestReadFileRefusesPlantedFiles: a symlink to a host file, a FIFO and an
// oversized file left by a job are refused without blocking.
func TestReadFileRefusesPlantedFiles(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	other := t.TempDir()
	os.Chmod(other, 0o755)
	tok := token(t)
	if err := os.WriteFile(filepath.Join(other, "secret"), []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, testLimits, time.Minute, "sh", "-c",
		"ln -s "+filepath.Join(other, "secret")+" link; ln -s ../../../../../../"+filepath.Join(other, "secret")+" rel; mkfifo fifo; head -c 5000 /dev/zero > big; echo ok > good; mkdir d; ln -s /proc/self/root d/root")
	if !r.Exited0() {
		t.Fatalf("%+v %s", r.Result, r.err)
	}
	for _, name := range []string{"link", "rel", "fifo", "d/root/etc/passwd"} {
		b, err := ReadFile(dir, name, 1<<20)
		if err == nil || strings.Contains(string(b), tok) {
			t.Errorf("%s: read %q, err %v", name, b, err)
		}
	}
	if _, err := ReadFile(dir, "big", 4096); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(dir, "missing", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist", err)
	}
	if b, err := ReadFile(dir, "good", 10); err != nil || string(b) != "ok\n" {
		t.Errorf("good: %q %v", b, err)
	}
}

// TestKillAndCancel: Kill and a cancelled context end the tree and say so.
func TestKillAndCancel(t *testing.T) {
	requireSandbox(t)
	p, err := Start(Spec{Argv: []string{"sleep", "1000"}, Dir: t.TempDir(), Limits: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	res := p.Wait(context.Background())
	if !res.Killed || res.TimedOut || res.Signal != syscall.SIGKILL || res.SandboxErr != nil {
		t.Errorf("after Kill: %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = Run(ctx, Spec{Argv: []string{"sleep", "1000"}, Dir: t.TempDir(), Limits: testLimits})
	if !res.Killed {
		t.Errorf("after cancel: %+v", res)
	}
}

// TestExitStatus: exit codes and signals of the main process come through.
func TestExitStatus(t *testing.T) {
	requireSandbox(t)
	r := runIn(t, t.TempDir(), testLimits, time.Minute, "sh", "-c", "exit 7")
	if r.ExitCode != 7 || r.Signal != 0 {
		t.Errorf("exit 7: %+v", r.Result)
	}
	r = runIn(t, t.TempDir(), testLimits, time.Minute, "sh", "-c", "kill -SEGV $$")
	if r.Signal != syscall.SIGSEGV || r.ExitCode != -1 {
		t.Errorf("SIGSEGV: %+v", r.Result)
	}
}

// TestExtraFiles: a pipe handed over as fd 3 carries the job's result out.
func TestExtraFiles(t *testing.T) {
	requireSandbox(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo result >&3; ls /proc/self/fd"}, Dir: t.TempDir(),
		ExtraFiles: []*os.File{w}, Limits: testLimits, Timeout: time.Minute})
	w.Close()
	if !res.Exited0() {
		t.Fatalf("%+v", res)
	}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "result\n" {
		t.Errorf("fd 3 carried %q (%v)", b, err)
	}
}

const selfStarve = `#include <unistd.h>
int main(void) {
	for (int i = 0; i < 8; i++)
		if (fork() == 0) { volatile unsigned long x = 0; for (;;) x++; }
	pause();
	return 0;
}
`

// TestSelfStarvedTreeIsNotStarved: a tree whose own spinning children keep
// each other waiting for a CPU is not excused as starved at its timeout.
func TestSelfStarvedTreeIsNotStarved(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	compile(t, dir, "s", selfStarve)
	r := runIn(t, dir, testLimits, time.Second, "./s")
	if !r.TimedOut || !r.SchedKnown {
		t.Fatalf("want a timeout with scheduler statistics: %+v", r.Result)
	}
	if r.Starved() {
		t.Errorf("a tree that starved itself was judged starved: %+v", r.Result)
	}
	t.Logf("%+v", r.Result)
}

// TestJobDirTooLarge: a job that leaves more entries than a run may hand over
// gets ErrJobDirTooLarge from the next Start (its own doing).
func TestJobDirTooLarge(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	r := runIn(t, dir, testLimits, time.Minute, "sh", "-c", "mkdir d && cd d && i=0; while [ $i -lt 400 ]; do : > f$i; i=$((i+1)); done")
	if !r.Exited0() {
		t.Fatalf("%+v %s", r.Result, r.err)
	}
	defer func(old int) { maxJobEntries = old }(maxJobEntries)
	maxJobEntries = 100
	if _, err := Start(Spec{Argv: []string{"true"}, Dir: dir, Limits: testLimits}); !errors.Is(err, ErrJobDirTooLarge) {
		t.Errorf("Start after 400 files: %v, want ErrJobDirTooLarge", err)
	}
}

// A held tree runs none of its job until Release: a kill before it leaves
// no trace of the job; after Release the job runs as usual.
func TestHoldRunsNothingUntilRelease(t *testing.T) {
	requireSandbox(t)
	for _, release := range []bool{false, true} {
		dir := t.TempDir()
		p, err := Start(Spec{Argv: []string{"sh", "-c", "echo ran > ran"}, Dir: dir, Limits: testLimits, Timeout: time.Minute, Hold: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
			t.Fatalf("held job ran before Release (stat: %v)", err)
		}
		if release {
			p.Release()
		} else {
			p.Kill()
		}
		res := p.Wait(context.Background())
		_, err = os.Stat(filepath.Join(dir, "ran"))
		switch {
		case release && (!res.Exited0() || err != nil):
			t.Fatalf("released job: %+v, ran: %v", res, err)
		case !release && (!res.Killed || !os.IsNotExist(err)):
			t.Fatalf("killed while held: %+v, ran: %v", res, err)
		}
	}
}
