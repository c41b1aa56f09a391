package engine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// tempName returns a hidden temp file name next to final, so the rename that
// commits it stays within one directory (and one file system).
func tempName(final string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".tmp-"+hex.EncodeToString(b[:]))
}

// IsTempName reports whether a file name is an uncommitted temp file.
func IsTempName(name string) bool {
	base := filepath.Base(name)
	return len(base) > 0 && base[0] == '.' && filepath.Ext(base) != "" && containsTmp(base)
}

func containsTmp(s string) bool {
	for i := 0; i+5 <= len(s); i++ {
		if s[i:i+5] == ".tmp-" {
			return true
		}
	}
	return false
}

// commitFile makes a fully written temp file durable under its final name:
// fsync the file, close it, rename, then fsync the directory so the rename
// itself survives a crash (the restic local-backend protocol).
func commitFile(f *os.File, final string) error {
	tmp := f.Name()
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%w: fsync %s: %v", ErrIO, tmp, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%w: close %s: %v", ErrIO, tmp, err)
	}
	crashPoint(CrashSynced, final)
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%w: rename %s: %v", ErrIO, final, err)
	}
	crashPoint(CrashRenamed, final)
	if err := syncDir(filepath.Dir(final)); err != nil {
		return err
	}
	crashPoint(CrashCommitted, final)
	return nil
}

// PublishFile commits a finished file written under another name (a
// builder's work directory on the same file system) as final, with
// commitFile's protocol: fsync, rename, fsync the directory.
func PublishFile(src, final string) error {
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	return commitFile(f, final)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: open dir %s: %v", ErrIO, dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w: fsync dir %s: %v", ErrIO, dir, err)
	}
	return nil
}

// RemoveStaleTemps removes the temp files that earlier, killed writes of
// final left beside it. Call it only for a file that no other process is
// writing at the same time (a stage's own files, under its part lock).
func RemoveStaleTemps(final string) error {
	stale, err := filepath.Glob(filepath.Join(filepath.Dir(final), "."+globEscape(filepath.Base(final))+".tmp-*"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("%w: remove stale temp file: %v", ErrIO, err)
		}
	}
	return nil
}

func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '*' || c == '?' || c == '[' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// WriteFileAtomic writes data to path crash-safely: readers see either the
// old file or the complete new one, never a torn write.
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	f, err := os.OpenFile(tempName(path), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("%w: write %s: %v", ErrIO, path, err)
	}
	return commitFile(f, path)
}
