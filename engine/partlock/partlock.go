// Package partlock serialises the runs of one stage shard part: two tasks
// that a scheduler started for the same part (a retried task overlapping the
// original, two submissions of the same pipeline) take turns, so the second
// finds the first's manifest committed instead of clearing its files while
// it writes them.
//
// The lock is flock(2) on <lock dir>/<manifest name>.lock; the runner keeps
// them in <work_dir>/.locks/<stage>/, out of the stage directories, whose
// every file belongs to some part's output. The kernel drops a lock when its
// holder dies, so a killed task never leaves a stale lock.
// On NFS, Linux maps flock to POSIX byte-range locks served by the NFS lock
// manager; Lustre needs the `flock` mount option and BeeGFS tuneUseGlobalFileLocks.
// It imports nothing from engine, so the runner can call it.
package partlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrLock: the lock file could not be created or locked.
var ErrLock = errors.New("part lock")

// Name is the lock file of the part whose manifest is manifestName.
func Name(manifestName string) string { return manifestName + ".lock" }

// Lock blocks until it holds the lock, in lockDir, of the part whose
// manifest is manifestName, or ctx ends. The returned function releases it.
// Waiting is polled (non-blocking flock every poll interval) so that a
// cancelled context stops the wait.
func Lock(ctx context.Context, lockDir, manifestName string) (unlock func(), err error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLock, err)
	}
	path := filepath.Join(lockDir, Name(manifestName))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLock, err)
	}
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("%w: flock %s: %v", ErrLock, path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait < 200*time.Millisecond {
			wait *= 2
		}
	}
	return func() {
		// Closing the descriptor releases the lock. The file stays: deleting
		// it would let a waiter hold a lock on an unlinked inode while a
		// newcomer locks a fresh file of the same name.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
