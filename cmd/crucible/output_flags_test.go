package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// parquetCodecs is the set of codecs of every column chunk of the files.
func parquetCodecs(t *testing.T, files []string) map[compress.Compression]int {
	t.Helper()
	out := map[compress.Compression]int{}
	for _, f := range files {
		pf, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		md := pf.MetaData()
		for g := range md.NumRowGroups() {
			rg := md.RowGroup(g)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				out[cc.Compression()]++
			}
		}
		pf.Close()
	}
	return out
}

func outputFiles(t *testing.T, dir string, kinds ...string) []string {
	t.Helper()
	so, err := engine.LoadStageOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, k := range kinds {
		files = append(files, so.Shards(k)...)
	}
	if len(files) == 0 {
		t.Fatalf("%s: no %v shards", dir, kinds)
	}
	return files
}

// --compression / --compression-level: every column chunk of dedup's and
// decontam check's outputs (matches and purify) uses the codec asked for;
// the rows are the same whatever the codec; bad values are exit 2 before
// any work; the flags default to the measured choice, zstd level 1
// (level 0, the flag's default, is zstd 1 and no level for snappy/none).
func TestDedupDecontamCompression(t *testing.T) {
	dir := t.TempDir()
	f := newPurifyFixture(t, dir)
	db := duckOpen(t)
	codecs := []struct {
		name  string
		c     string
		level int
		want  compress.Compression
	}{
		{"zstd-1", engine.CodecZstd, 1, compress.Codecs.Zstd},
		{"zstd-0", engine.CodecZstd, 0, compress.Codecs.Zstd}, // the flags' default: level 1
		{"zstd-9", engine.CodecZstd, 9, compress.Codecs.Zstd},
		{"snappy", engine.CodecSnappy, 0, compress.Codecs.Snappy},
		{"none", engine.CodecNone, 0, compress.Codecs.Uncompressed},
	}
	var first string
	size := map[string]int64{}
	for _, c := range codecs {
		o := DedupOptions{In: []string{f.corpus}, IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, "d-"+c.name),
			Config: dedup.DefaultConfig(), Writer: engine.WriterOptions{Compression: c.c, CompressionLevel: c.level}, Stdout: &discard{}}
		if err := runDedup(context.Background(), o); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		files := outputFiles(t, o.Out, "kept", "removed")
		for _, fl := range files {
			st, _ := os.Stat(fl)
			size[c.name] += st.Size()
		}
		if got := parquetCodecs(t, files); len(got) != 1 || got[c.want] == 0 {
			t.Errorf("dedup %s: column chunk codecs %v, want only %v", c.name, got, c.want)
		}
		rel := fmt.Sprintf("read_parquet(%s)", parquetList(files))
		if first == "" {
			first = rel
			continue
		}
		if n := duckInt(t, db, fmt.Sprintf("SELECT count(*) FROM ((SELECT * FROM %s EXCEPT ALL SELECT * FROM %s) UNION ALL (SELECT * FROM %s EXCEPT ALL SELECT * FROM %s))", rel, first, first, rel)); n != 0 {
			t.Errorf("dedup %s: %d rows differ from the zstd-1 output", c.name, n)
		}
	}
	// The level reaches the encoder: zstd 9 writes fewer bytes than zstd 1,
	// and level 0 is level 1.
	if !(size["zstd-9"] < size["zstd-1"] && size["zstd-1"] < size["snappy"] && size["snappy"] < size["none"]) || size["zstd-0"] != size["zstd-1"] {
		t.Errorf("output bytes %v: want zstd-9 < zstd-1 = zstd-0 < snappy < none", size)
	}
	for _, c := range codecs[3:] {
		o := purifyOpts(f, []string{f.corpus}, filepath.Join(dir, "m-"+c.name), filepath.Join(dir, "p-"+c.name))
		o.Writer.Compression, o.Writer.CompressionLevel = c.c, c.level
		if code := exitCode(context.Background(), runDecontamCheck(context.Background(), o)); code != exitFindings {
			t.Fatalf("decontam %s: exit %d", c.name, code)
		}
		for _, files := range [][]string{outputFiles(t, o.Out, "matches"), outputFiles(t, o.Purify, purifyKept, purifyRemoved)} {
			if got := parquetCodecs(t, files); len(got) != 1 || got[c.want] == 0 {
				t.Errorf("decontam %s: %s: codecs %v, want only %v", c.name, filepath.Dir(files[0]), got, c.want)
			}
		}
	}
	for _, bad := range []engine.WriterOptions{{Compression: "lz4"}, {Compression: engine.CodecSnappy, CompressionLevel: 3}, {Compression: engine.CodecZstd, CompressionLevel: 23}} {
		o := DedupOptions{In: []string{f.corpus}, IDField: "id", TextFields: []string{"text"}, Out: filepath.Join(dir, "bad"),
			Config: dedup.DefaultConfig(), Writer: bad, Stdout: &discard{}}
		if code := exitCode(context.Background(), runDedup(context.Background(), o)); code != exitUsage {
			t.Errorf("dedup %+v: exit %d, want %d", bad, code, exitUsage)
		}
		d := purifyOpts(f, []string{f.corpus}, filepath.Join(dir, "bad-m"), "")
		d.Writer = bad
		if code := exitCode(context.Background(), runDecontamCheck(context.Background(), d)); code != exitUsage {
			t.Errorf("decontam %+v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	for _, c := range [][]string{{"dedup"}, {"decontam", "check"}} {
		cmd, _, err := newRootCmd().Find(c)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmd.Flags().Lookup("compression").DefValue; d != "zstd" {
			t.Errorf("%v --compression defaults to %q", c, d)
		}
		if d := cmd.Flags().Lookup("compression-level").DefValue; d != "0" {
			t.Errorf("%v --compression-level defaults to %q", c, d)
		}
	}
	// --compression snappy alone (no level) on the command line.
	root := newRootCmd()
	out := filepath.Join(dir, "cli-snappy")
	root.SetArgs([]string{"dedup", "--in", f.corpus, "--id-field", "id", "--text-field", "text", "--out", out, "--compression", "snappy", "--no-progress"})
	root.SetOut(&discard{})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("dedup --compression snappy: %v", err)
	}
	if got := parquetCodecs(t, outputFiles(t, out, "kept")); got[compress.Codecs.Snappy] == 0 || len(got) != 1 {
		t.Errorf("dedup --compression snappy wrote %v", got)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
