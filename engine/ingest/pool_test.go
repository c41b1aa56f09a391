package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/crucible-data/crucible/engine"
)

// The pool's buffers read as zeros and are aligned like Go's allocator's,
// whatever a freed buffer held; Reallocate keeps the bytes and zeroes
// what it adds, in place or not.
func TestBufferPoolBuffersAreZeroedAndAligned(t *testing.T) {
	p := NewBufferPool()
	p.poison = 0xA5
	for _, size := range []int{1, 100, poolMin - 1, poolMin, poolMin + 1, 3 * poolMin, 1 << 20} {
		for round := 0; round < 3; round++ { // round 1 and 2 get freed (poisoned) buffers back
			b := p.Allocate(size)
			if len(b) != size || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment != 0 {
				t.Fatalf("Allocate(%d): len %d, address %p", size, len(b), unsafe.SliceData(b))
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("Allocate(%d) round %d: byte %d is %#x", size, round, i, c)
				}
			}
			for i := range b {
				b[i] = byte(i)
			}
			for _, to := range []int{size + size/3 + 1, 2*size + 7} {
				old := len(b)
				b = p.Reallocate(to, b)
				if len(b) != to {
					t.Fatalf("Reallocate(%d) of %d bytes: len %d", to, old, len(b))
				}
				for i := 0; i < size; i++ {
					if b[i] != byte(i) {
						t.Fatalf("Reallocate(%d) of %d bytes: byte %d is %#x, was %#x", to, old, i, b[i], byte(i))
					}
				}
				for i := size; i < to; i++ {
					if b[i] != 0 {
						t.Fatalf("Reallocate(%d) of %d bytes: added byte %d is %#x", to, old, i, b[i])
					}
				}
				clear(b[size:])
			}
			p.Free(b)
		}
	}
	if p.pooled == 0 {
		t.Fatal("no buffer was pooled")
	}
}

// Ingest through a pool that poisons every buffer it is given back writes
// byte for byte the shards of Go's allocator: no buffer is used after
// Arrow or Parquet freed it. Row groups are small so that many are built
// from freed buffers, and the texts long so that those are pooled ones.
func TestBufferPoolWritesTheSameShards(t *testing.T) {
	var b strings.Builder
	long := strings.Repeat("A counter that wraps at its modulus. ", 110) // ≈ 4 KB
	for i := 0; i < 3000; i++ {
		row := strings.Replace(goodRow, `"a1"`, fmt.Sprintf(`"id-%d"`, i), 1)
		row = strings.Replace(row, `"Build a counter."`, fmt.Sprintf(`"Task %d. %s"`, i, long[:len(long)-i%200]), 1)
		if i%17 == 0 {
			row = fmt.Sprintf(`{"item_id":"bad-%d","domain":"fpga","instruction":"%s"}`, i, long)
		}
		b.WriteString(row + "\n")
	}
	p := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	small := engine.WriterOptions{RowGroupBytes: 600 << 10}
	want, wstats, wrows := ingestShardsWith(t, shardRun{workers: 2, writer: small}, p)
	pool := NewBufferPool()
	pool.poison = 0x5A
	small.Allocator = pool
	got, gstats, grows := ingestShardsWith(t, shardRun{workers: 2, writer: small}, p)
	sameShards(t, 2, got, want, gstats, wstats, grows, wrows)
	if pool.reused < 10 {
		t.Fatalf("%d buffers reused: the test does not exercise reuse", pool.reused)
	}
}

// A buffer regrown past growFrom gets growTo's capacity at once, so its
// next doublings happen in place: same bytes, no new buffer.
func TestBufferPoolGrowsLargeBuffersToARowGroupAtOnce(t *testing.T) {
	p := NewBufferPool()
	b := p.Allocate(growFrom / 2)
	for i := range b {
		b[i] = byte(i * 7)
	}
	b = p.Reallocate(growFrom, b)
	if cap(b) != growTo {
		t.Fatalf("regrown to %d bytes: capacity %d, want %d", growFrom, cap(b), growTo)
	}
	at := unsafe.SliceData(b)
	b = p.Reallocate(growTo, b)
	if unsafe.SliceData(b) != at || len(b) != growTo {
		t.Fatalf("regrowing within the capacity moved the buffer or got len %d", len(b))
	}
	for i := range growFrom / 2 {
		if b[i] != byte(i*7) {
			t.Fatalf("byte %d lost in regrowth", i)
		}
	}
	for i := growFrom / 2; i < growTo; i++ {
		if b[i] != 0 {
			t.Fatalf("added byte %d is %#x", i, b[i])
		}
	}
}
