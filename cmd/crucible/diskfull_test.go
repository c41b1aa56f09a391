package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/crucible-data/crucible/decontam"
	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack"
)

// fullDisk is a disk with room for a fixed number of bytes, shared by every
// file written to it: the write that crosses the limit writes what fits and
// fails with ENOSPC, as write(2) does.
type fullDisk struct {
	mu   sync.Mutex
	left int64
}

func (d *fullDisk) wrap(w io.Writer) io.Writer { return &fullDiskFile{d: d, w: w} }

type fullDiskFile struct {
	d *fullDisk
	w io.Writer
}

func (f *fullDiskFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if int64(len(p)) <= f.d.left {
		f.d.left -= int64(len(p))
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.d.left])
	f.d.left = 0
	return n, &os.PathError{Op: "write", Path: "shard", Err: syscall.ENOSPC}
}

// tempFiles lists the uncommitted temp files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestDiskFullLeavesNoTempFile: ingest, pack, dedup and decontam check
// --purify on a disk that fills
// mid-shard exit 4 and leave no .tmp- file and no manifest; a run that died
// harder (its temp file planted by hand) is swept by the next run of the same
// output, which leaves other files' temp names alone.
func TestDiskFullLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	var items strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&items, `{"item_id":"it-%d","domain":"rtl","family":"f","instruction":"Build counter %d. %s","reference":"module RefModule(input clk); endmodule","verifier":{"kind":"differential","harness":"module tb; endmodule","top":"tb"}}`+"\n",
			i, i, strings.Repeat("Count clock edges. ", 1+i%9))
	}
	itemsIn := filepath.Join(dir, "items.jsonl")
	if err := os.WriteFile(itemsIn, []byte(items.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	packIn := writePackInput(t, dir)
	benchIn := filepath.Join(dir, "bench.jsonl") // shares no 13-gram with the items: a clean check
	if err := os.WriteFile(benchIn, []byte(`{"id":"b1","prompt":"Write a priority arbiter with four request lines, one grant line per requester, and round robin fairness across cycles."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	small := engine.WriterOptions{RowGroupBytes: 4 << 10, ShardBytes: 1 << 20}
	packCfg := pack.DefaultConfig()
	packCfg.SeqLen, packCfg.RowGroupBytes = 1024, 4<<10
	commands := map[string]struct {
		stem string // the temp-file stem of one of its shards
		run  func(out string, w engine.WriterOptions) error
	}{
		"ingest": {"items-00000.parquet", func(out string, w engine.WriterOptions) error {
			return runIngest(context.Background(), IngestOptions{Out: out, Paths: []string{itemsIn}, Writer: w, Stdout: io.Discard})
		}},
		"dedup": {"kept-00000.parquet", func(out string, w engine.WriterOptions) error {
			w.Compression = engine.CodecNone // without dictionaries the zstd output fits in 6000 bytes
			return runDedup(context.Background(), DedupOptions{In: []string{itemsIn}, IDField: "item_id", TextFields: []string{"instruction"},
				Out: out, Config: dedup.DefaultConfig(), Writer: w, Stdout: io.Discard})
		}},
		"decontam-purify": {"kept-00000.parquet", func(out string, w engine.WriterOptions) error {
			w.Compression = engine.CodecNone // the items compress to under 6000 bytes
			return runDecontamCheck(context.Background(), DecontamCheckOptions{Corpus: []string{itemsIn}, CorpusIDField: "item_id",
				CorpusFields: []string{"instruction"}, Benchmarks: []string{benchIn}, IDField: "id", Fields: []string{"prompt"},
				Out: out + "-matches", Purify: out, Workers: 1, Config: decontam.DefaultConfig(), Writer: w, Stdout: io.Discard})
		}},
		"pack": {"packed-00000.parquet", func(out string, w engine.WriterOptions) error {
			return runPack(context.Background(), PackOptions{In: []string{packIn}, Out: out, Config: packCfg, Writer: w, Stdout: &bytes.Buffer{}})
		}},
	}
	for name, c := range commands {
		out := filepath.Join(dir, name)
		// Small row groups fail inside Write; the default ones buffer every
		// row and fail when Close flushes them.
		for _, sizes := range []engine.WriterOptions{small, engine.DefaultWriterOptions()} {
			for _, room := range []int64{0, 1000, 6000} {
				w := sizes
				w.WrapFile = (&fullDisk{left: room}).wrap
				err := c.run(out, w)
				if code := exitCode(context.Background(), err); code != exitIO {
					t.Fatalf("%s with %d bytes free: exit %d (%v), want %d", name, room, code, err, exitIO)
				}
				if tmp := tempFiles(t, out); len(tmp) > 0 {
					t.Fatalf("%s with %d bytes free (row groups of %d) left temp files %v", name, room, sizes.RowGroupBytes, tmp)
				}
				if _, err := os.Stat(filepath.Join(out, "manifest.json")); !os.IsNotExist(err) {
					t.Fatalf("%s with %d bytes free committed a manifest (%v)", name, room, err)
				}
			}
		}
		stale := filepath.Join(out, "."+c.stem+".tmp-0123456789ab")
		foreign := filepath.Join(out, ".notes.txt.tmp-0123456789ab")
		for _, p := range []string{stale, foreign} {
			if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 1<<16), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.run(out, small); err != nil {
			t.Fatalf("%s after the disk was freed: %v", name, err)
		}
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Fatalf("%s: the next run did not sweep the stale %s", name, stale)
		}
		if _, err := os.Stat(foreign); err != nil {
			t.Fatalf("%s: the sweep removed a temp file that is not its own: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err != nil {
			t.Fatalf("%s: no manifest after a clean run: %v", name, err)
		}
	}
}

// TestIngestEmptyFileWritesEmptyShard: `crucible ingest --out X empty.jsonl`
// commits an empty, readable items shard and a manifest listing it.
func TestIngestEmptyFileWritesEmptyShard(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := runIngest(context.Background(), IngestOptions{Out: out, Paths: []string{in}, Writer: engine.DefaultWriterOptions(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	m, err := engine.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 1 || m.Shards[0].Kind != "items" || m.Shards[0].Rows != 0 {
		t.Fatalf("manifest shards %+v, want one empty items shard", m.Shards)
	}
	rows, err := engine.ReadRows[engine.Item](filepath.Join(out, m.Shards[0].Path))
	if err != nil || len(rows) != 0 {
		t.Fatalf("reading the empty shard: %d rows, %v", len(rows), err)
	}
}
