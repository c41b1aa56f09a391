package rtl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Hostile designs are compiled and simulated here through runLimited
// directly, below the screen: the screen rejects $fopen and friends by text,
// and these tests show that the kernel holds where a screen bypass (an
// escaped identifier, a pasted macro) would let them through.

func randToken(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// hostDirs makes a world-writable and world-readable host directory outside
// any job (so that only the sandbox, not permissions, can stop a write), with
// a secret file in it.
func hostDirs(t testing.TB, secret string) (dir, secretPath string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	secretPath = filepath.Join(dir, "secret.hex")
	if err := os.WriteFile(secretPath, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, secretPath
}

// simulateUnscreened builds and runs src (top module "top") with sim the way
// runJob does, in a fresh job directory.
func simulateUnscreened(t *testing.T, sim simulator, src string) (build, run procResult, jobDir string) {
	t.Helper()
	jobDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(jobDir, "design.sv"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	lim := testConfig(t).Limits
	blim := lim
	blim.CPUSeconds = lim.CompileCPUSeconds
	ctx := context.Background()
	build, err := runLimited(ctx, jobDir, blim, lim.CompileTimeout, sim.BuildArgs("top", []string{"design.sv"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if build.ExitCode != 0 {
		return build, procResult{ExitCode: -1, Stdout: newCapture(1024, 0, nil), Stderr: newCapture(1024, 0, nil)}, jobDir
	}
	run, err = runLimited(ctx, jobDir, lim, time.Minute, sim.RunArgs("top"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return build, run, jobDir
}

func assertAbsent(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists on the host: the job escaped (%v)", p, err)
			os.Remove(p)
		}
	}
}

// TestHostileIcarusDesignStaysInItsBox: $fopen of /tmp, of a host path and
// of ../, $dumpfile with an absolute path and $readmemh of a host file all
// stay inside the sandbox; printing "No space left on device" on a clean
// run is nobody's infrastructure failure.
func TestHostileIcarusDesignStaysInItsBox(t *testing.T) {
	requireTools(t, "iverilog", "vvp")
	tok := randToken(t)
	host, secret := hostDirs(t, tok[:8])
	hostTmp := filepath.Join(os.TempDir(), "crucible-escape-"+tok)
	src := `
module top;
  integer f;
  reg [31:0] m [0:3];
  initial begin
    f = $fopen("` + hostTmp + `", "w"); $display("fopen-tmp=%0d", f); if (f) begin $fdisplay(f, "escaped"); $fclose(f); end
    f = $fopen("` + filepath.Join(host, "fopen.txt") + `", "w"); $display("fopen-host=%0d", f); if (f) $fclose(f);
    f = $fopen("../escape-` + tok + `", "w"); $display("fopen-up=%0d", f); if (f) $fclose(f);
    f = $fopen("/etc/escape-` + tok + `", "w"); $display("fopen-etc=%0d", f); if (f) $fclose(f);
    m[0] = 32'h0;
    $readmemh("` + secret + `", m);
    $display("mem=%h", m[0]);
    $display("No space left on device");
    $dumpfile("` + filepath.Join(host, "dump.vcd") + `");
    $dumpvars(0, top);
    #1 $finish;
  end
endmodule
`
	build, run, job := simulateUnscreened(t, icarus{}, src)
	if build.ExitCode != 0 {
		t.Fatalf("build: %+v\n%s", build, build.Stderr.String())
	}
	out := run.Stdout.String() + run.Stderr.String()
	t.Logf("inside:\n%s", out)
	assertAbsent(t, hostTmp, filepath.Join(host, "fopen.txt"), filepath.Join(host, "dump.vcd"),
		filepath.Join(filepath.Dir(job), "escape-"+tok), "/etc/escape-"+tok)
	if strings.Contains(out, tok[:8]) {
		t.Errorf("$readmemh read a host file:\n%s", out)
	}
	for _, want := range []string{"fopen-host=0", "fopen-up=0", "fopen-etc=0", "No space left on device"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q inside:\n%s", want, out)
		}
	}
	if st, cause := classifyProcess(run, "run", testConfig(t).Limits, time.Minute); st != "" || run.ExitCode != 0 {
		t.Errorf("a clean run printing \"No space left on device\" classified %q (%s), exit %d", st, cause, run.ExitCode)
	}
}

// TestIncludeSeesOnlyTheJob: an `include of a host file (the reference, a
// secret) or of ../ does not resolve: the compiler sees the job directory
// and system headers only.
func TestIncludeSeesOnlyTheJob(t *testing.T) {
	requireTools(t, "iverilog", "vvp")
	tok := randToken(t)
	host := t.TempDir()
	os.Chmod(host, 0o755)
	leak := filepath.Join(host, "reference.sv")
	if err := os.WriteFile(leak, []byte("module leak; initial $display(\"LEAK-"+tok+"\"); endmodule\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, inc := range []string{leak, "../../" + filepath.Base(host) + "/reference.sv", "/etc/shadow"} {
		src := "`include \"" + inc + "\"\nmodule top; leak l(); endmodule\n"
		build, run, _ := simulateUnscreened(t, icarus{}, src)
		all := build.Stdout.String() + build.Stderr.String() + run.Stdout.String()
		if build.ExitCode == 0 || strings.Contains(all, "LEAK-"+tok) {
			t.Errorf("include %s resolved from inside the sandbox (build exit %d):\n%s", inc, build.ExitCode, all)
		}
	}
}

// TestNoSpaceTextIsNotDiskFull: a correct candidate that prints "No space left
// on device" passes; a wrong one that does fails; neither is excused.
func TestNoSpaceTextIsNotDiskFull(t *testing.T) {
	v := newTestVerifier(t, testConfig(t))
	runCases(t, v, counterItem(t, 50), []caseWant{
		{"correct-says-no-space", wrapCounter(`  initial $display("No space left on device");`), engine.StatusPass, ""},
		{"wrong-says-no-space", wrongCounter(`  initial $display("write error: No space left on device");`), engine.StatusFail, engine.StageMismatch},
	})
}

// TestHostileCandidatesThroughVerify: the hostile designs as candidates never
// pass and leave nothing outside their job directory, whatever stage stops
// them.
func TestHostileCandidatesThroughVerify(t *testing.T) {
	cfg := testConfig(t)
	v := newTestVerifier(t, cfg)
	tok := randToken(t)
	host, secret := hostDirs(t, tok[:8])
	hostTmp := filepath.Join(os.TempDir(), "crucible-escape-"+tok)
	cases := map[string]string{
		"fopen-tmp":     `  integer f; initial begin f = $fopen("` + hostTmp + `", "w"); $fdisplay(f, "x"); $fclose(f); end`,
		"fopen-host":    `  integer f; initial begin f = $fopen("` + filepath.Join(host, "w.txt") + `", "w"); $fclose(f); end`,
		"dumpfile-abs":  `  initial begin $dumpfile("` + filepath.Join(host, "d.vcd") + `"); $dumpvars; end`,
		"readmem-host":  `  reg [31:0] m [0:1]; initial begin $readmemh("` + secret + `", m); $display("%h", m[0]); end`,
		"system":        `  initial $system("touch ` + filepath.Join(host, "sys") + `");`,
		"include-host":  "`include \"" + secret + "\"",
		"fopen-escaped": `  integer \f$" ; initial \f$"  = $fopen("` + filepath.Join(host, "esc.txt") + `", "w");`,
	}
	var cands []engine.Candidate
	for name, extra := range cases {
		cands = append(cands, engine.Candidate{ItemID: "counter", CandidateID: name, Code: wrongCounter(extra)})
	}
	evs, err := v.Verify(context.Background(), []engine.Item{counterItem(t, 50)}, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Status != engine.StatusFail {
			t.Errorf("%s: %s/%s (%s), want fail", ev.CandidateID, ev.Status, ev.FailureStage, ev.Cause)
		}
		if strings.Contains(ev.LogExcerpt+ev.Cause, tok[:8]) {
			t.Errorf("%s: a host file's content reached the evidence", ev.CandidateID)
		}
	}
	assertAbsent(t, hostTmp, filepath.Join(host, "w.txt"), filepath.Join(host, "d.vcd"), filepath.Join(host, "sys"), filepath.Join(host, "esc.txt"))
}

// TestVerilatorCppStaysInItsBox: C++ pasted through `systemc_header and $c
// that writes a host file, kills its parent with kill and sigqueue, and
// leaves a setsid daemon: the parent (the sandbox's init, and we) survives,
// the file is not written, the daemon is gone, and the tree's end is the
// candidate's, not an excused infrastructure failure.
func TestVerilatorCppStaysInItsBox(t *testing.T) {
	if testing.Short() {
		t.Skip("Verilator builds take seconds each")
	}
	requireTools(t, "verilator")
	tok := randToken(t)
	host, _ := hostDirs(t, tok[:8])
	target := filepath.Join(host, "vl.txt")
	daemon := "vl" + tok[:10]
	src := "module top;\n`systemc_header\n#include <cstdio>\n#include <csignal>\n#include <unistd.h>\n#include <sys/prctl.h>\n`verilog\n" + `
  initial begin
    $c("{ FILE* f = fopen(\"` + target + `\", \"w\"); if (f) { fputs(\"x\", f); fclose(f); } std::printf(\"fopen=%d\\n\", f != 0); }");
    $c("{ union sigval v; v.sival_int = 0; std::printf(\"kill=%d sigqueue=%d\\n\", kill(getppid(), SIGKILL), sigqueue(getppid(), SIGKILL, v)); }");
    $c("{ pid_t p = fork(); if (p == 0) { setsid(); prctl(PR_SET_NAME, \"` + daemon + `\"); for (;;) pause(); } std::printf(\"forked=%d\\n\", p > 0); }");
    $display("alive");
    $finish;
  end
endmodule
`
	build, run, _ := simulateUnscreened(t, verilator{}, src)
	if build.ExitCode != 0 {
		t.Fatalf("verilator build: %+v\n%s%s", build, build.Stdout.String(), build.Stderr.String())
	}
	out := run.Stdout.String()
	t.Logf("inside:\n%s%s", out, run.Stderr.String())
	assertAbsent(t, target)
	if n := processesNamed(daemon); n > 0 {
		t.Errorf("%d daemons forked by the candidate outlived its run", n)
	}
	if run.SandboxErr != nil {
		t.Errorf("the candidate ended its sandbox: %v", run.SandboxErr)
	}
	if !strings.Contains(out, "fopen=0") || !strings.Contains(out, "kill=-1 sigqueue=-1") || !strings.Contains(out, "alive") || !strings.Contains(out, "forked=1") {
		t.Errorf("want failed fopen, kill and sigqueue and a finished run:\n%s", out)
	}
	if st, _ := classifyProcess(run, "run", testConfig(t).Limits, time.Minute); engine.IsInfraStage(st) {
		t.Errorf("classified as infrastructure failure %q", st)
	}
}

// processesNamed counts host processes whose comm is name.
func processesNamed(name string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == name {
			n++
		}
	}
	return n
}
