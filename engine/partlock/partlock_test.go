package partlock

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLockExcludes has goroutines take the same part lock and checks that
// no two are ever inside at once, while a different part's lock is free.
func TestLockExcludes(t *testing.T) {
	dir := t.TempDir()
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := Lock(context.Background(), dir, "manifest-0001-of-0004.json")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	// Another part is not blocked by the first.
	unlock, err := Lock(context.Background(), dir, "manifest-0002-of-0004.json")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once, want 1", maxInside.Load())
	}
}

// TestLockWaitHonoursContext: a waiter gives up when its context ends.
func TestLockWaitHonoursContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(context.Background(), dir, "manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, dir, "manifest.json"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded while the lock is held, got %v", err)
	}
}

// TestLockReleasedWhenHolderDies: a process SIGKILLed while holding the
// lock does not leave it held (flock belongs to the open file, which dies
// with the process).
func TestLockReleasedWhenHolderDies(t *testing.T) {
	dir := t.TempDir()
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	holder.Env = append(os.Environ(), "PARTLOCK_HOLD_DIR="+dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper prints a line once it holds the lock.
	buf := make([]byte, 5)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("helper did not take the lock: %q %v", buf, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := Lock(ctx, dir, "manifest.json"); err == nil {
		t.Fatal("took the lock while the helper held it")
	}
	cancel()
	holder.Process.Kill()
	holder.Wait()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	unlock, err := Lock(ctx, dir, "manifest.json")
	if err != nil {
		t.Fatalf("lock still held after its holder was killed: %v", err)
	}
	unlock()
}

// TestHelperHoldLock is the child of TestLockReleasedWhenHolderDies.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv("PARTLOCK_HOLD_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	if _, err := Lock(context.Background(), dir, "manifest.json"); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Minute)
}
