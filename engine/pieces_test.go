package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
)

// piecesRegistry has one stage type writing rows 0..rows-1 of kind nums as
// n pieces in parallel, each piece a contiguous range; fail makes the last
// piece fail after writing.
func piecesRegistry(n, rows int, fail bool) *Registry {
	reg := NewRegistry()
	reg.RegisterType(StageType{Name: "pieces", Parallelism: PerPart, Outputs: []string{"nums"},
		Factory: func(StageConfig) (Stage, error) {
			return StageFunc(func(ctx context.Context, sc *StageContext) error {
				pw, err := StagePieceWriters[numRow](sc, "nums", n)
				if err != nil {
					return err
				}
				var g errgroup.Group
				for p := range pw.Len() {
					lo, hi := p*rows/pw.Len(), (p+1)*rows/pw.Len()
					g.Go(func() error {
						for i := lo; i < hi; i++ {
							if err := pw.Piece(p).Write(numRow{N: int64(i), Text: strings.Repeat("x", 200)}); err != nil {
								return err
							}
						}
						if fail && p == pw.Len()-1 {
							return errors.New("piece failed")
						}
						return nil
					})
				}
				return g.Wait()
			}), nil
		}})
	return reg
}

// Piece writers commit as one kind: the pieces' files renamed to one
// sequence (nums-00000, ...) that reads back as rows 0..n-1 in order, the
// same rows whatever the number of pieces; a stage that fails commits
// nothing, and the next run clears the piece files it left.
func TestStagePieceWritersCommitOneSequence(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(in, []byte("x"), 0o644)
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			one := OneStage{Spec: StageSpec{Name: "pieces", Type: "pieces", Inputs: []string{in}}, Out: out}
			opts := RunOptions{Log: slog.New(slog.DiscardHandler), Writer: WriterOptions{RowGroupBytes: 4 << 10, ShardBytes: 8 << 10, Compression: CodecNone}}
			if _, err := (&Runner{Registry: piecesRegistry(n, 600, false)}).RunOne(context.Background(), one, opts); err != nil {
				t.Fatal(err)
			}
			m, err := ReadManifest(filepath.Join(out, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for i, s := range m.Shards {
				if want := fmt.Sprintf("nums-%05d.parquet", i); s.Path != want {
					t.Fatalf("shard %d is %s, want %s", i, s.Path, want)
				}
				rows, err := ReadRows[numRow](filepath.Join(out, s.Path))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					got = append(got, r.N)
				}
			}
			if len(m.Shards) < 2 || len(got) != 600 || !slices.IsSorted(got) || got[0] != 0 || got[599] != 599 {
				t.Fatalf("%d shards, %d rows, sorted %v", len(m.Shards), len(got), slices.IsSorted(got))
			}
			ents, _ := os.ReadDir(out)
			for _, e := range ents {
				if strings.Contains(e.Name(), "-p0") {
					t.Errorf("piece file %s left after the commit", e.Name())
				}
			}
		})
	}
	out := filepath.Join(t.TempDir(), "out")
	one := OneStage{Spec: StageSpec{Name: "pieces", Type: "pieces", Inputs: []string{in}}, Out: out}
	opts := RunOptions{Log: slog.New(slog.DiscardHandler), Writer: WriterOptions{RowGroupBytes: 4 << 10, ShardBytes: 8 << 10, Compression: CodecNone}}
	if _, err := (&Runner{Registry: piecesRegistry(3, 600, true)}).RunOne(context.Background(), one, opts); err == nil {
		t.Fatal("a failing piece committed")
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Fatal("a failed stage wrote its manifest")
	}
	// Its finished piece files are shards of the kind by name: the next run
	// clears them with the rest of the stage's output.
	if _, err := (&Runner{Registry: piecesRegistry(3, 600, false)}).RunOne(context.Background(), one, opts); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.Contains(e.Name(), "-p0") || strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("the run after a failed one left %s", e.Name())
		}
	}
}
