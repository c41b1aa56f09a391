package synth

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

func journalLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}

func uninterrupted(t *testing.T, url string) *Result {
	t.Helper()
	items := loadSeeds(t, testSeeds...)
	res, err := newTestRunner(t, testConfig(url), realBackend(t), nil).Run(context.Background(), items, filepath.Join(t.TempDir(), "j.jsonl"), "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Cancel mid-run after 4 journaled turns, restart on the same journal: the
// result equals an uninterrupted run, and the journal holds each turn once.
func TestCancelAndResumeLosesNoTurn(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	srv := startServer(t, &scriptedGenerator{t: t, items: items})
	want := uninterrupted(t, srv.URL)

	path := filepath.Join(t.TempDir(), "j.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	r := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil)
	var n atomic.Int32
	r.AfterTurn = func(Turn) {
		if n.Add(1) == 4 {
			cancel()
		}
	}
	if _, err := r.Run(ctx, items, path, "rtl/icarus"); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	done := journalLines(t, path) - 1
	if done < 4 || done >= 9 {
		t.Fatalf("%d turns journaled before the cancel took effect", done)
	}
	r2 := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil)
	got, err := r2.Run(context.Background(), items, path, "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Trajectories, want.Trajectories) || !reflect.DeepEqual(got.Pack, want.Pack) {
		t.Fatal("resumed run differs from the uninterrupted one")
	}
	if l := journalLines(t, path); l != 1+9 || got.Counts["resumed_turns"] != int64(done) {
		t.Fatalf("journal has %d lines (want 10); resumed %d of %d", l, got.Counts["resumed_turns"], done)
	}
	// A third run has nothing left to do and changes nothing.
	r3 := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil)
	again, err := r3.Run(context.Background(), items, path, "rtl/icarus")
	if err != nil || !reflect.DeepEqual(again.Trajectories, want.Trajectories) || journalLines(t, path) != 10 {
		t.Fatalf("third run: %v", err)
	}
}

// The child process runs the synthesis and SIGKILLs itself right after the
// 4th turn is journaled (other turns may be mid-write: a torn tail).
func TestHelperSynthesizeThenSIGKILL(t *testing.T) {
	url, path := os.Getenv("SYNTH_CHILD_URL"), os.Getenv("SYNTH_CHILD_JOURNAL")
	if url == "" {
		t.Skip("helper process for TestSIGKILLAndResumeLosesNoTurn")
	}
	items := loadSeeds(t, testSeeds...)
	r := newTestRunner(t, testConfig(url), realBackend(t), nil)
	var n atomic.Int32
	r.AfterTurn = func(Turn) {
		if n.Add(1) == 4 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	r.Run(context.Background(), items, path, "rtl/icarus")
	t.Fatal("the run finished before the kill")
}

func TestSIGKILLAndResumeLosesNoTurn(t *testing.T) {
	items := loadSeeds(t, testSeeds...)
	srv := startServer(t, &scriptedGenerator{t: t, items: items})
	want := uninterrupted(t, srv.URL)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSynthesizeThenSIGKILL$")
	cmd.Env = append(os.Environ(), "SYNTH_CHILD_URL="+srv.URL, "SYNTH_CHILD_JOURNAL="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed: %v\n%s", err, out)
	}
	killed := journalLines(t, path) - 1
	got, err := newTestRunner(t, testConfig(srv.URL), realBackend(t), nil).Run(context.Background(), items, path, "rtl/icarus")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Trajectories, want.Trajectories) {
		t.Fatal("run resumed after SIGKILL differs from the uninterrupted one")
	}
	if l := journalLines(t, path); l != 10 || killed < 4 {
		t.Fatalf("journal: %d lines after resume (want 10), %d turns before", l, killed)
	}
}

// A torn last line is cut off on open; a corrupt line in the middle, or a
// journal of another configuration, is an error naming the file.
func TestJournalTornTailAndMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, turns, err := OpenJournal(path, "fp")
	if err != nil || len(turns) != 0 {
		t.Fatal(err)
	}
	for r := int32(1); r <= 2; r++ {
		if err := j.Append(Turn{TrajectoryID: "a", Round: r, Code: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"trajectory_id":"a","round":3,"co`)
	f.Close()
	j, turns, err = OpenJournal(path, "fp")
	if err != nil || len(turns["a"]) != 2 {
		t.Fatalf("torn tail: %v %d", err, len(turns["a"]))
	}
	j.Append(Turn{TrajectoryID: "a", Round: 3})
	j.Close()
	if _, turns, err = OpenJournal(path, "fp"); err != nil || len(turns["a"]) != 3 {
		t.Fatalf("after append: %v %v", err, turns)
	}
	if _, _, err := OpenJournal(path, "other"); !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), path) {
		t.Fatalf("fingerprint mismatch: %v", err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(path, []byte(lines[0]+"garbage\n"+strings.Join(lines[1:], "")), 0o644)
	if _, _, err := OpenJournal(path, "fp"); !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("corrupt middle line: %v", err)
	}
}
