package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"
)

// ManifestVersion is bumped when the manifest layout changes. Version 2
// added content hashes (and fingerprints upstreams by them).
const ManifestVersion = 2

// InputRef fingerprints one input of a stage: a raw file by the sha256 of
// its bytes, an upstream manifest by its ContentHash (so an upstream redone
// with the same verdicts but new timings leaves this stage current). A
// named pipe or device is a "stream" with a fingerprint that never matches
// (it cannot be hashed without being consumed).
type InputRef struct {
	Kind   string `json:"kind"` // "manifest", "file" or "stream"
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Range is the piece of a raw file a shard part read (FileRange.String;
	// empty: the whole file).
	Range string `json:"range,omitempty"`
}

// Manifest is a stage's commit marker. It is written last and atomically;
// a stage (or one shard part of it) is complete exactly when its manifest
// exists. Its only wall-clock times are Seconds (a stage's own phase
// timings, set through StageContext.Timing), which ContentHash leaves out,
// so a resumed run commits the same content as an uninterrupted one.
type Manifest struct {
	Version    int              `json:"version"`
	Stage      string           `json:"stage"`
	Type       string           `json:"type"`
	ConfigHash string           `json:"config_hash"`
	Shard      string           `json:"shard,omitempty"` // "i/N" for a shard part
	Inputs     []InputRef       `json:"inputs"`
	Shards     []ShardInfo      `json:"shards"`
	Counts     map[string]int64 `json:"counts,omitempty"`
	// Seconds are wall-clock phase timings of the command that wrote the
	// manifest (e.g. crucible dedup: total, read, sign, index, verify,
	// write). They vary run to run, so ContentHash leaves them out.
	Seconds map[string]float64 `json:"seconds,omitempty"`
	// ContentHash covers what downstream stages may depend on: each shard's
	// path, kind, rows and deterministic content (ShardInfo.ContentSHA256,
	// timings excluded), and the counts. WriteManifest fills it.
	ContentHash string `json:"content_hash"`
}

// ComputeContentHash returns the content hash of m's shards and counts.
func (m *Manifest) ComputeContentHash() string {
	type shardContent struct {
		Path, Kind string
		Rows       int64
		Content    string
	}
	shards := make([]shardContent, len(m.Shards))
	for i, s := range m.Shards {
		shards[i] = shardContent{s.Path, s.Kind, s.Rows, s.Content()}
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Path < shards[j].Path })
	// encoding/json sorts map keys, so the counts encode canonically.
	data, _ := json.Marshal(struct {
		Shards []shardContent
		Counts map[string]int64
	}{shards, m.Counts})
	return HashString(string(data))
}

// Rows returns the total rows of a kind.
func (m *Manifest) Rows(kind string) int64 {
	var n int64
	for _, s := range m.Shards {
		if s.Kind == kind {
			n += s.Rows
		}
	}
	return n
}

// ManifestName returns the manifest file name of a stage run for a shard.
func ManifestName(sh Shard) string {
	if sh.Count <= 1 {
		return "manifest.json"
	}
	return fmt.Sprintf("manifest-%04d-of-%04d.json", sh.Index, sh.Count)
}

// WriteManifest commits m as dir/name.
func WriteManifest(dir, name string, m *Manifest) error {
	m.ContentHash = m.ComputeContentHash()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, name), append(data, '\n'))
}

// ReadManifest reads a manifest file.
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", ErrInput, path, err)
	}
	return &m, nil
}

// StageOutput is the committed output of a stage: one manifest, or the
// complete set of N shard-part manifests.
type StageOutput struct {
	Dir       string
	Manifests []string // paths, sorted
	Parts     []*Manifest
}

// Shards lists every committed shard of a kind, as absolute paths in a
// deterministic order.
func (o *StageOutput) Shards(kind string) []string {
	var out []string
	for _, m := range o.Parts {
		for _, s := range m.Shards {
			if kind == "" || s.Kind == kind {
				out = append(out, filepath.Join(o.Dir, s.Path))
			}
		}
	}
	return out
}

// Rows totals rows of a kind over all parts.
func (o *StageOutput) Rows(kind string) int64 {
	var n int64
	for _, m := range o.Parts {
		n += m.Rows(kind)
	}
	return n
}

// LoadStageOutput finds the committed output in a stage directory. It is
// ErrIncomplete when there is no manifest, or when shard parts are missing.
func LoadStageOutput(dir string) (*StageOutput, error) {
	if m, err := ReadManifest(filepath.Join(dir, "manifest.json")); err == nil {
		return &StageOutput{Dir: dir, Manifests: []string{filepath.Join(dir, "manifest.json")}, Parts: []*Manifest{m}}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "manifest-*-of-*.json"))
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no manifest in %s", ErrIncomplete, dir)
	}
	sort.Strings(parts)
	var n int
	if _, err := fmt.Sscanf(filepath.Base(parts[0]), "manifest-%04d-of-%04d.json", new(int), &n); err != nil {
		return nil, fmt.Errorf("%w: bad manifest name %s", ErrInput, parts[0])
	}
	out := &StageOutput{Dir: dir}
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, ManifestName(Shard{Index: i, Count: n}))
		m, err := ReadManifest(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has %d of %d shard parts (missing %d/%d)", ErrIncomplete, dir, len(parts), n, i, n)
		}
		if err != nil {
			return nil, err
		}
		out.Manifests = append(out.Manifests, p)
		out.Parts = append(out.Parts, m)
	}
	return out, nil
}

// HashFile returns the hex sha256 of a file's bytes.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%w: read %s: %v", ErrInput, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashString returns the hex sha256 of s. It hashes s's own bytes: a
// []byte(s) copied every text ingest hashes (three per item) to the heap.
func HashString(s string) string {
	h := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h[:])
	return string(out[:])
}

// Shard selects a deterministic subset of a stage's inputs: Index of Count.
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/N".
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{0, 1}, nil
	}
	var sh Shard
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d/%d", &sh.Index, &sh.Count); err != nil {
		return sh, fmt.Errorf("%w: --shard %q: want i/N", ErrConfig, s)
	}
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return sh, fmt.Errorf("%w: --shard %q: need 0 <= i < N", ErrConfig, s)
	}
	return sh, nil
}

func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether input number i belongs to this shard.
func (s Shard) Owns(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }
