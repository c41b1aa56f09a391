package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// mixedJSONL writes n lines of
// good rows, rows every reject reason covers, duplicates across chunks,
// blank lines and invalid UTF-8.
func mixedJSONL(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		row := strings.Replace(goodRow, `"a1"`, fmt.Sprintf(`"id-%d"`, i), 1)
		switch i % 13 {
		case 1:
			row = `{"item_id":"broken",`
		case 2:
			row = fmt.Sprintf(`{"item_id":"bad-%d","domain":"fpga"}`, i)
		case 3:
			row = "{\"item_id\":\"caf\xff\"}"
		case 4:
			row = ""
		case 5:
			row = strings.Replace(goodRow, `"a1"`, fmt.Sprintf(`"id-%d"`, i/2), 1) // a duplicate, often in an earlier chunk
		case 6:
			row = strings.Replace(goodRow, `"a1"`, fmt.Sprintf(`"ID-%d","difficulty":"x"`, i), 1)
		case 7:
			row = "  " + strings.Replace(goodRow, `"a1"`, fmt.Sprintf(`"caf\u00e9-%d"`, i), 1) + "\t"
		}
		b.WriteString(row + "\n")
	}
	p := filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ingestShards ingests paths with the given workers into item and
// rejection shards and returns the shards' sha256s, the stats and the
// rejection rows (for a failure message that shows the first difference).
func ingestShards(t *testing.T, workers int, paths ...string) ([]string, Stats, []engine.Rejection) {
	t.Helper()
	return ingestShardsWith(t, shardRun{workers: workers}, paths...)
}

// shardRun is how ingestShardsWith runs: decoding goroutines, whether the
// sink promises to copy rows (Ingester.SinkCopies), and the writers'
// options (zero: the defaults).
type shardRun struct {
	workers    int
	sinkCopies bool
	writer     engine.WriterOptions
}

func ingestShardsWith(t *testing.T, r shardRun, paths ...string) ([]string, Stats, []engine.Rejection) {
	t.Helper()
	dir := t.TempDir()
	opts := r.writer.WithDefaultSizes()
	items, err := engine.NewShardWriter[engine.Item](dir, "items", "items", opts)
	if err != nil {
		t.Fatal(err)
	}
	rejects, err := engine.NewShardWriter[engine.Rejection](dir, "rejections", "rejections", opts)
	if err != nil {
		t.Fatal(err)
	}
	var rows []engine.Rejection
	g, err := New(PresetItems, Sink{
		Item: func(it engine.Item) error { return items.Write(it) },
		Reject: func(r engine.Rejection) error {
			// A copy: with SinkCopies the row's strings may point into a
			// buffer the reader fills again.
			rows = append(rows, engine.Rejection{ItemID: strings.Clone(r.ItemID), Stage: r.Stage, Gate: r.Gate, Reason: r.Reason, Detail: strings.Clone(r.Detail)})
			return rejects.Write(r)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Workers = r.workers
	g.SinkCopies = r.sinkCopies
	if err := g.IngestPaths(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, w := range []interface {
		Close() ([]engine.ShardInfo, error)
	}{items, rejects} {
		infos, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range infos {
			data, err := os.ReadFile(filepath.Join(dir, s.Path))
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, fmt.Sprintf("%s %x", s.Path, sha256.Sum256(data)))
		}
	}
	return sums, g.Stats, rows
}

// smallChunks makes the JSONL reader cut chunks of n lines for one test.
func smallChunks(t *testing.T, n int) {
	old := chunkLines
	chunkLines = n
	t.Cleanup(func() { chunkLines = old })
}

// Shard bytes are compared on inputs small enough that no column outgrows
// its dictionary: a column that falls back to plain pages gets arrow-go's
// page encoding stats in map order, which differ from run to run whatever
// the rows (metadata.ColumnChunkMetaDataBuilder.Finish).
func TestParallelDecodeWritesTheSameShards(t *testing.T) {
	smallChunks(t, 50)
	p := mixedJSONL(t, 7*chunkLines+23)
	want, wstats, wrows := ingestShards(t, 1, p)
	if wstats.Items == 0 || wstats.Rejected == 0 || wstats.Reasons["duplicate_id"] == 0 || wstats.Reasons["invalid_utf8"] == 0 || wstats.Reasons["invalid_json"] == 0 {
		t.Fatalf("the input does not exercise the reject paths: %+v", wstats)
	}
	for _, workers := range []int{2, 3, 8} {
		got, gstats, grows := ingestShards(t, workers, p, p) // the second copy: all duplicates, across files
		want2, wstats2, wrows2 := ingestShards(t, 1, p, p)
		sameShards(t, workers, got, want2, gstats, wstats2, grows, wrows2)
		got, gstats, grows = ingestShards(t, workers, p)
		sameShards(t, workers, got, want, gstats, wstats, grows, wrows)
	}
}

func sameShards(t *testing.T, workers int, got, want []string, gstats, wstats Stats, grows, wrows []engine.Rejection) {
	t.Helper()
	for i := range min(len(grows), len(wrows)) {
		if grows[i] != wrows[i] {
			t.Fatalf("workers %d: rejection %d is %+v; workers 1: %+v", workers, i, grows[i], wrows[i])
		}
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gstats, wstats) {
		t.Fatalf("workers %d: shards %v stats %+v; workers 1: %v %+v", workers, got, gstats, want, wstats)
	}
}

// A sink error stops a parallel ingest and is what it returns, with no
// goroutine left blocked (the test would hang).
func TestParallelDecodeStopsOnSinkError(t *testing.T) {
	smallChunks(t, 50)
	p := mixedJSONL(t, 20*chunkLines)
	boom := errors.New("disk full")
	n := 0
	g, err := New(PresetItems, Sink{
		Item: func(engine.Item) error {
			if n++; n == chunkLines+5 {
				return boom
			}
			return nil
		},
		Reject: func(engine.Rejection) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Workers = 4
	if err := g.IngestFile(context.Background(), p); !errors.Is(err, boom) {
		t.Fatalf("IngestFile: %v, want the sink's error", err)
	}
	if n != chunkLines+5 {
		t.Fatalf("the sink saw %d items after failing at %d", n, chunkLines+5)
	}
}

// With SinkCopies the reader fills admitted chunks' buffers again while
// the decoded strings of their rows pointed into them: the shards, stats
// and rejections must be those of a run that copies everything, and
// duplicates must still be found across chunks and files (the seen ids
// are copies, not strings into a reused buffer).
func TestSinkCopiesReusesBuffersWithTheSameOutput(t *testing.T) {
	smallChunks(t, 50)
	p := mixedJSONL(t, 9*chunkLines+17)
	want, wstats, wrows := ingestShards(t, 1, p, p)
	if wstats.Reasons["duplicate_id"] <= wstats.Items {
		t.Fatalf("the second copy of the file should be all duplicates: %+v", wstats)
	}
	for _, workers := range []int{2, 8} {
		got, gstats, grows := ingestShardsWith(t, shardRun{workers: workers, sinkCopies: true}, p, p)
		sameShards(t, workers, got, want, gstats, wstats, grows, wrows)
	}
}
