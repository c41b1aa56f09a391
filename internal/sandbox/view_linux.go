//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The mount view. Every bind source is cloned (open_tree) before anything
// is mounted, so covering a path later cannot hide a source; the new root
// is a small tmpfs mounted over the job directory's own path (which exists
// by construction), filled, pivoted into, and made read-only.

// systemEntries are the top-level host entries mirrored read-only: a
// symbolic link (merged /usr) is recreated, a directory is bound.
var systemEntries = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcEntries are the /etc files the toolchains read (the dynamic loader's
// cache, alternatives links for cc/c++, perl's config for Verilator).
var etcEntries = []string{"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "perl", "localtime", "nsswitch.conf"}

// devEntries are the device nodes a job may open.
var devEntries = []string{"null", "zero", "full", "random", "urandom"}

const (
	roFlags = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rwFlags = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
)

type tree struct {
	fd     int
	target string // relative to the new root
	file   bool
}

// cloneTree detaches a copy of the mount tree at host path, with attrs set.
func cloneTree(host, target string, attrs uint64) (tree, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, host, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return tree{}, fmt.Errorf("open_tree %s: %w", host, err)
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs}); err != nil {
		unix.Close(fd)
		return tree{}, fmt.Errorf("mount_setattr %s: %w", host, err)
	}
	fi, err := os.Stat(host)
	if err != nil {
		unix.Close(fd)
		return tree{}, err
	}
	return tree{fd: fd, target: target, file: !fi.IsDir()}, nil
}

func buildView(cfg initConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	var trees []tree
	var links [][2]string // target, link text
	for _, e := range systemEntries {
		host := "/" + e
		fi, err := os.Lstat(host)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(host)
			if err != nil {
				return err
			}
			links = append(links, [2]string{e, l})
		case fi.IsDir():
			t, err := cloneTree(host, e, roFlags)
			if err != nil {
				return err
			}
			trees = append(trees, t)
		}
	}
	for _, e := range etcEntries {
		host := "/etc/" + e
		fi, err := os.Lstat(host)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(host)
			if err != nil {
				return err
			}
			links = append(links, [2]string{"etc/" + e, l})
		default:
			t, err := cloneTree(host, "etc/"+e, roFlags)
			if err != nil {
				return err
			}
			trees = append(trees, t)
		}
	}
	for _, e := range devEntries {
		t, err := cloneTree("/dev/"+e, "dev/"+e, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return err
		}
		trees = append(trees, t)
	}
	for _, b := range cfg.Binds {
		attrs := uint64(roFlags)
		if b.Writable {
			attrs = rwFlags
		}
		t, err := cloneTree(b.Source, b.Target[1:], attrs)
		if err != nil {
			return err
		}
		trees = append(trees, t)
	}
	job, err := cloneTree(cfg.Dir, JobDir[1:], rwFlags)
	if err != nil {
		return err
	}
	trees = append(trees, job)

	root := cfg.Dir
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,nr_inodes=4096,mode=0755"); err != nil {
		return fmt.Errorf("root tmpfs: %w", err)
	}
	for _, d := range []string{"etc", "dev", "proc", "tmp", JobDir[1:]} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(root, l[0])); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"dev/fd", "/proc/self/fd"}, {"dev/stdin", "/proc/self/fd/0"},
		{"dev/stdout", "/proc/self/fd/1"}, {"dev/stderr", "/proc/self/fd/2"}} {
		if err := os.Symlink(l[1], filepath.Join(root, l[0])); err != nil {
			return err
		}
	}
	passwd := "root:x:0:0:root:/:/usr/sbin/nologin\nsandbox:x:" + strconv.Itoa(InsideUID) + ":" + strconv.Itoa(InsideGID) + "::" + JobDir + ":/bin/sh\n"
	group := "root:x:0:\nsandbox:x:" + strconv.Itoa(InsideGID) + ":\n"
	for name, text := range map[string]string{"etc/passwd": passwd, "etc/group": group, "etc/hostname": cfg.Hostname + "\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, t := range trees {
		dst := filepath.Join(root, t.target)
		if t.file {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		} else if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("move_mount %s: %w", t.target, err)
		}
		unix.Close(t.fd)
	}
	if cfg.Limits.TmpBytes > 0 {
		opts := "size=" + strconv.FormatInt(cfg.Limits.TmpBytes, 10) + ",nr_inodes=65536,mode=01777"
		if err := unix.Mount("tmpfs", filepath.Join(root, "tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("/tmp tmpfs: %w", err)
		}
	}
	// procfs may be mounted in a user namespace only while a full /proc is
	// visible in it, so before the host root goes. It shows the new PID
	// namespace: ours.
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	// The old root is stacked under the new one: detach it, and with it
	// every host path.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the root read-only: %w", err)
	}
	return nil
}
