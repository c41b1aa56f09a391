//go:build linux

package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The init side runs in C (init_linux.c), as a constructor of this binary
// that takes over before the Go runtime starts when the environment holds
// envInit. This file writes what it reads: the configuration as a sequence
// of "<length>:<bytes>" fields in a fixed order (parse_config), so no JSON
// parser is needed in C and any byte but NUL may appear in a field.

// maxInitConfig bounds the encoded configuration: it travels in one
// environment string, which the kernel limits to 32 pages.
const maxInitConfig = 120 << 10

func encodeInitConfig(cfg initConfig) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	num := func(v int64) { field(strconv.FormatInt(v, 10)) }
	flag := func(v bool) {
		if v {
			num(1)
		} else {
			num(0)
		}
	}
	list := func(l []string) {
		num(int64(len(l)))
		for _, s := range l {
			field(s)
		}
	}
	cwd := JobDir
	if cfg.WorkDir != "" {
		cwd = filepath.Join(JobDir, filepath.Clean("/"+cfg.WorkDir))
	}
	field(cfg.Dir)
	field(cwd)
	field(cfg.Hostname)
	flag(cfg.OwnUID)
	num(int64(cfg.ExtraFiles))
	flag(cfg.ForcePrlimit)
	num(int64(cfg.HoldFD))
	num(cfg.Limits.TmpBytes)
	rl := rlimits(cfg.Limits)
	num(int64(len(rl)))
	for _, r := range rl {
		num(int64(r.res))
		field(strconv.FormatUint(r.lim.Cur, 10))
		field(strconv.FormatUint(r.lim.Max, 10))
		field(r.name)
	}
	num(int64(len(cfg.Binds)))
	for _, bd := range cfg.Binds {
		field(bd.Source)
		field(bd.Target[1:])
		flag(bd.Writable)
	}
	list(cfg.Argv)
	list(cfg.Env)
	return b.String()
}

type rlimit struct {
	res  int
	name string // prlimit(1)'s option
	lim  unix.Rlimit
}

// rlimits are the limits the init sets on the job's main process.
func rlimits(l Limits) []rlimit {
	var out []rlimit
	add := func(res int, name string, soft, hard uint64) {
		out = append(out, rlimit{res, name, unix.Rlimit{Cur: soft, Max: hard}})
	}
	if l.AddressSpaceBytes > 0 {
		add(unix.RLIMIT_AS, "as", uint64(l.AddressSpaceBytes), uint64(l.AddressSpaceBytes))
	}
	if l.CPUSeconds > 0 {
		add(unix.RLIMIT_CPU, "cpu", uint64(l.CPUSeconds), uint64(l.CPUSeconds+1))
	}
	if l.FileSizeBytes > 0 {
		add(unix.RLIMIT_FSIZE, "fsize", uint64(l.FileSizeBytes), uint64(l.FileSizeBytes))
	}
	if l.Processes > 0 {
		add(unix.RLIMIT_NPROC, "nproc", uint64(l.Processes), uint64(l.Processes))
	}
	if l.OpenFiles > 0 {
		add(unix.RLIMIT_NOFILE, "nofile", uint64(l.OpenFiles), uint64(l.OpenFiles))
	}
	add(unix.RLIMIT_CORE, "core", 0, 0)
	return out
}
