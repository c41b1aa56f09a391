package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrShardCorrupt: a committed shard's bytes no longer match the size or
// sha256 its manifest records (bit rot, a stray write, a partial copy).
var ErrShardCorrupt = fmt.Errorf("%w: shard does not match its manifest", ErrInput)

// ShardMismatch describes one shard that failed verification.
type ShardMismatch struct {
	Path   string // absolute
	Reason string // "missing: …", "size 10 != recorded 12", "sha256 ab… != recorded cd…"
	// Altered: the file has its recorded size but other bytes (a flipped
	// byte), rather than being missing, unreadable or truncated.
	Altered bool
}

func (m ShardMismatch) Error() string { return m.Path + ": " + m.Reason }

// shardVerifier hashes committed shards against their manifests, once per
// file state: a run checks a shard when it skips the stage that wrote it and
// again when a later stage reads it, and hashes it only the first time.
type shardVerifier struct {
	mu   sync.Mutex
	seen map[string]verified
}

type verified struct {
	size, mtime int64
	sha         string
}

// verify checks the file at path against s. A nil verifier does not cache.
func (v *shardVerifier) verify(path string, s ShardInfo) *ShardMismatch {
	st, err := os.Stat(path)
	if err != nil {
		return &ShardMismatch{Path: path, Reason: "missing: " + err.Error()}
	}
	if st.Size() != s.Bytes {
		return &ShardMismatch{Path: path, Reason: fmt.Sprintf("size %d != recorded %d", st.Size(), s.Bytes)}
	}
	key := verified{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if v != nil {
		v.mu.Lock()
		c, ok := v.seen[path]
		v.mu.Unlock()
		if ok && c.size == key.size && c.mtime == key.mtime {
			return mismatchSHA(path, c.sha, s.SHA256)
		}
	}
	sha, err := hashStream(path)
	if err != nil {
		return &ShardMismatch{Path: path, Reason: "unreadable: " + err.Error()}
	}
	if v != nil {
		key.sha = sha
		v.mu.Lock()
		if v.seen == nil {
			v.seen = map[string]verified{}
		}
		v.seen[path] = key
		v.mu.Unlock()
	}
	return mismatchSHA(path, sha, s.SHA256)
}

func mismatchSHA(path, got, want string) *ShardMismatch {
	if got == want {
		return nil
	}
	return &ShardMismatch{Path: path, Reason: fmt.Sprintf("sha256 %.12s… != recorded %.12s…", got, want), Altered: true}
}

func hashStream(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyShard checks one committed shard file against its manifest entry;
// the error wraps ErrShardCorrupt.
func VerifyShard(path string, s ShardInfo) error {
	if m := (*shardVerifier)(nil).verify(path, s); m != nil {
		return fmt.Errorf("%w: %v", ErrShardCorrupt, m)
	}
	return nil
}

// ManifestCheck is the verification of one manifest's shards.
type ManifestCheck struct {
	Manifest   string // path
	Shards     int
	Bytes      int64
	Mismatches []ShardMismatch
	Err        error // the manifest itself is unreadable
}

// VerifyWorkDir checks every manifest under dir (a pipeline work dir, one
// stage dir, or a standalone command's --out) against the shards it lists,
// hashing each file in full. Lock and temp files are not looked at.
func VerifyWorkDir(dir string) ([]ManifestCheck, error) {
	var manifests []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && isManifestName(d.Name()) {
			manifests = append(manifests, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if len(manifests) == 0 {
		return nil, fmt.Errorf("%w: %s: no manifest.json or manifest-*-of-*.json below it", ErrInput, dir)
	}
	sort.Strings(manifests)
	var out []ManifestCheck
	for _, mp := range manifests {
		c := ManifestCheck{Manifest: mp}
		m, err := ReadManifest(mp)
		if err != nil {
			c.Err = err
			out = append(out, c)
			continue
		}
		for _, s := range m.Shards {
			c.Shards++
			c.Bytes += s.Bytes
			if mm := (*shardVerifier)(nil).verify(filepath.Join(filepath.Dir(mp), s.Path), s); mm != nil {
				c.Mismatches = append(c.Mismatches, *mm)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func isManifestName(name string) bool {
	if name == "manifest.json" {
		return true
	}
	var i, n int
	_, err := fmt.Sscanf(name, "manifest-%04d-of-%04d.json", &i, &n)
	return err == nil && strings.HasSuffix(name, ".json")
}

// corruptShards lists the shards of m (in dir) that fail verification.
func (v *shardVerifier) corruptShards(dir string, m *Manifest) []ShardMismatch {
	var out []ShardMismatch
	for _, s := range m.Shards {
		if mm := v.verify(filepath.Join(dir, s.Path), s); mm != nil {
			out = append(out, *mm)
		}
	}
	return out
}
