package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// CompressedCopies writes a plain JSONL file's bytes as the shapes corpora
// arrive in, next to it: "gz" (name.jsonl.gz), "zst" (name.jsonl.zst) and
// "gz-as-jsonl" (gzip data under a .jsonl name, found by magic bytes only).
// Readers must give the same rows for every copy as for the plain file.
func CompressedCopies(t testing.TB, plain string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := enc.EncodeAll(data, nil)
	enc.Close()
	dir, base := filepath.Dir(plain), strings.TrimSuffix(filepath.Base(plain), ".jsonl")
	out := map[string]string{
		"gz":          filepath.Join(dir, base+".jsonl.gz"),
		"zst":         filepath.Join(dir, base+".jsonl.zst"),
		"gz-as-jsonl": filepath.Join(dir, base+".gzdata.jsonl"),
	}
	for k, b := range map[string][]byte{"gz": gz.Bytes(), "zst": zst, "gz-as-jsonl": gz.Bytes()} {
		if err := os.WriteFile(out[k], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// BadInputs writes files that are not JSONL in any supported encoding,
// keyed by what they are: bzip2, xz and zip magic, and binary garbage.
// Every reader must fail on each with one input error, not per-line rows.
func BadInputs(t testing.TB, dir string) map[string]string {
	t.Helper()
	garbage := make([]byte, 8192)
	x := uint32(2463534242)
	for i := range garbage {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		garbage[i] = byte(x)
	}
	files := map[string][]byte{
		"bzip2":   append([]byte("BZh91AY&SY"), garbage[:200]...),
		"xz":      append([]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, garbage[:200]...),
		"zip":     append([]byte{'P', 'K', 0x03, 0x04}, garbage[:200]...),
		"garbage": garbage,
	}
	out := map[string]string{}
	for k, b := range files {
		p := filepath.Join(dir, "bad-"+k+".jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out[k] = p
	}
	return out
}
