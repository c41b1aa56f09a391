//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular: a file the job left is a symbolic link, FIFO, device or
// directory, or it escapes the job directory.
var ErrNotRegular = errors.New("sandbox: not a regular file inside the job directory")

// ErrTooLarge: a file the job left is larger than the caller's bound.
var ErrTooLarge = errors.New("sandbox: file larger than the allowed size")

// ReadFile reads a file a job left in its directory dir (a host path) at
// the relative path name, at most max bytes. It follows no symbolic link
// (a job may plant one pointing at a host file), resolves nothing outside
// dir, does not block on a FIFO and refuses anything but a regular file.
// A missing file is reported with an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadFile(dir, name string, max int64) ([]byte, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat2(dfd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotRegular, name, err)
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %v", ErrNotRegular, name, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrTooLarge, name, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s grew past %d bytes", ErrTooLarge, name, max)
	}
	return b, nil
}
