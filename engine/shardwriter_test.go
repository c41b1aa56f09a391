package engine

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// shardRows is enough rows of Item for several row groups and shards at
// the small sizes the tests below set (instructions of hex that does not
// compress away).
func shardRows(n int) []Item {
	rows := make([]Item, n)
	h := sha256.Sum256(nil)
	for i := range rows {
		var b strings.Builder
		for range 8 {
			h = sha256.Sum256(h[:])
			fmt.Fprintf(&b, "%x", h)
		}
		rows[i] = Item{ItemID: fmt.Sprintf("it-%05d", i), Domain: DomainRTL, Instruction: b.String(),
			Verifier: Verifier{Kind: VerifierDifferential, Harness: "module tb; endmodule"}, Difficulty: float64(i % 7)}
	}
	return rows
}

// Row groups written in the background keep the rows, their order, the
// row group cuts and the shard cuts: every shard but the last reached
// ShardBytes with its last row group and not before.
func TestShardWriterRowGroupsAndShards(t *testing.T) {
	dir := t.TempDir()
	opts := WriterOptions{RowGroupBytes: 64 << 10, ShardBytes: 256 << 10}
	rows := shardRows(3000)
	w, err := NewShardWriter[Item](dir, "items", "items", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 7 {
		if err := w.Write(rows[i:min(i+7, len(rows))]...); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 3 {
		t.Fatalf("%d shards, want several", len(infos))
	}
	var back []Item
	for i, s := range infos {
		p := filepath.Join(dir, s.Path)
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		groups, size := r.NumRowGroups(), s.Bytes
		r.Close()
		if groups < 2 && i < len(infos)-1 {
			t.Errorf("shard %d has %d row groups, want several", i, groups)
		}
		if i < len(infos)-1 && size < opts.ShardBytes {
			t.Errorf("shard %d committed at %d bytes, before ShardBytes %d", i, size, opts.ShardBytes)
		}
		data, _ := os.ReadFile(p)
		if fmt.Sprintf("%x", sha256.Sum256(data)) != s.SHA256 {
			t.Errorf("shard %d: sha256 in ShardInfo is not the file's", i)
		}
		got, err := ReadRows[Item](p)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != s.Rows {
			t.Errorf("shard %d: %d rows, ShardInfo says %d", i, len(got), s.Rows)
		}
		back = append(back, got...)
	}
	if len(back) != len(rows) {
		t.Fatalf("read back %d rows, wrote %d", len(back), len(rows))
	}
	for i := range rows {
		if back[i].ItemID != rows[i].ItemID || back[i].Instruction != rows[i].Instruction {
			t.Fatalf("row %d read back as %s", i, back[i].ItemID)
		}
	}
}

// failAfter fails every write once n bytes have been written.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// A row group that fails in the background fails a later Write or Close,
// and no temp file stays behind, at whatever byte the disk fills.
func TestShardWriterBackgroundWriteError(t *testing.T) {
	rows := shardRows(2000)
	for _, limit := range []int{10, 40 << 10, 100 << 10, 300 << 10} {
		dir := t.TempDir()
		opts := WriterOptions{RowGroupBytes: 32 << 10, ShardBytes: 1 << 30,
			WrapFile: func(w io.Writer) io.Writer { return &failAfter{w: w, n: limit} }}
		w, err := NewShardWriter[Item](dir, "items", "items", opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(rows) && err == nil; i++ {
			err = w.Write(rows[i])
		}
		if err == nil {
			_, err = w.Close()
		} else {
			w.Abort()
		}
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("limit %d: error %v, want the disk's", limit, err)
		}
		left, _ := os.ReadDir(dir)
		if len(left) != 0 {
			t.Fatalf("limit %d: files left behind: %v", limit, left)
		}
	}
}
