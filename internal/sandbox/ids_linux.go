//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Host uids for jobs. When the verifier is root, each running job gets a
// host uid (and gid) of its own, mapped to InsideUID: its processes own no
// host file, RLIMIT_NPROC counts this job's processes only (it is not
// enforced at all for host uid 0), and two jobs never share a uid. The
// range is split by the verifier's pid so that concurrent verifier
// processes on one machine pick different uids.
const (
	uidBase       = 1 << 30
	slotsPerProc  = 1 << 10
	procPartition = 1 << 12
)

type jobIDs struct {
	own            bool // not root: the job runs under the verifier's own uid
	jobUID, jobGID int
	slot           int
}

var slots struct {
	sync.Mutex
	used map[int]bool
	next int
}

var (
	modeOnce sync.Once
	rootMode bool
	// forceOwnUID makes Start behave as for an unprivileged verifier (tests).
	forceOwnUID bool
)

// allocIDs picks the host ids of one job.
func allocIDs() (jobIDs, error) {
	modeOnce.Do(func() {
		rootMode = os.Geteuid() == 0 && rangeMapped("/proc/self/uid_map") && rangeMapped("/proc/self/gid_map")
	})
	if !rootMode || forceOwnUID {
		return jobIDs{own: true, jobUID: os.Geteuid(), jobGID: os.Getegid(), slot: -1}, nil
	}
	slots.Lock()
	defer slots.Unlock()
	if slots.used == nil {
		slots.used = map[int]bool{}
	}
	for i := 0; i < slotsPerProc; i++ {
		s := (slots.next + i) % slotsPerProc
		if !slots.used[s] {
			slots.used[s] = true
			slots.next = s + 1
			id := uidBase + (os.Getpid()%procPartition)*slotsPerProc + s
			return jobIDs{jobUID: id, jobGID: id, slot: s}, nil
		}
	}
	return jobIDs{}, fmt.Errorf("sandbox: more than %d jobs running at once", slotsPerProc)
}

func (ids jobIDs) release() {
	if ids.slot < 0 {
		return
	}
	slots.Lock()
	delete(slots.used, ids.slot)
	slots.Unlock()
}

// rangeMapped reports whether this process's user namespace maps host ids
// 0 and the whole job-uid range (true on a host and in a full-range
// container).
func rangeMapped(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	lo, hi := uint64(uidBase), uint64(uidBase+procPartition*slotsPerProc)
	zero, job := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(fs[0], 10, 64)
		n, err2 := strconv.ParseUint(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if in == 0 && n > 0 {
			zero = true
		}
		if in <= lo && hi <= in+n {
			job = true
		}
	}
	return zero && job
}

// sysProcAttr is how the init's first process starts: a plain vfork and
// exec (no clone flags, so the verifier's address space is never copied:
// with a user namespace in the clone flags the Go runtime cannot use vfork
// and copies the whole parent, the largest single cost of a job start in a
// verifier with a large heap). The init creates its namespaces itself
// (unshare) and the verifier writes its id maps (idMaps), see handshake.
func (ids jobIDs) sysProcAttr() *syscall.SysProcAttr {
	// If the verifier dies, its jobs die with it.
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
}

// idMaps are the init's user namespace's uid_map and gid_map, and whether
// setgroups(2) must be denied first (the only way an unprivileged verifier
// may write a gid map). The init is uid 0 of the new user namespace with all
// capabilities there (it mounts the view and must reach the job
// directory); the job itself runs as InsideUID.
func (ids jobIDs) idMaps() (uidMap, gidMap string, denySetgroups bool) {
	if ids.own {
		return "0 " + strconv.Itoa(os.Geteuid()) + " 1\n", "0 " + strconv.Itoa(os.Getegid()) + " 1\n", true
	}
	// Host root stays root for the init alone (so it may traverse the
	// verifier's 0700 directories to bind the job directory); the job's uid
	// maps to its own unprivileged host uid.
	return "0 0 1\n" + strconv.Itoa(InsideUID) + " " + strconv.Itoa(ids.jobUID) + " 1\n",
		"0 0 1\n" + strconv.Itoa(InsideGID) + " " + strconv.Itoa(ids.jobGID) + " 1\n", false
}

// writeIDMaps writes ids's maps for the process pid, which has just created
// its user namespace.
func (ids jobIDs) writeIDMaps(pid int) error {
	uidMap, gidMap, deny := ids.idMaps()
	proc := "/proc/" + strconv.Itoa(pid) + "/"
	if deny {
		if err := os.WriteFile(proc+"setgroups", []byte("deny"), 0); err != nil {
			return err
		}
	}
	if err := os.WriteFile(proc+"uid_map", []byte(uidMap), 0); err != nil {
		return err
	}
	return os.WriteFile(proc+"gid_map", []byte(gidMap), 0)
}

// maxJobEntries bounds the walk that hands a job directory to a job.
var maxJobEntries = 200000

// ErrJobDirTooLarge: the job directory holds more entries than a run may hand
// over (maxJobEntries). A previous run of the same job created them: it is
// the job's doing, never an infrastructure failure.
var ErrJobDirTooLarge = errors.New("sandbox: the job directory holds too many entries")

// chownTree makes dir and everything below it owned by uid:gid, without
// following symbolic links (a previous job may have planted some).
func chownTree(dir string, uid, gid int) error {
	n := 0
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxJobEntries {
			return ErrJobDirTooLarge
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
}
