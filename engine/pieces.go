package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StagePieceWriters opens n writers of one kind for a stage that writes a
// kind's rows as n contiguous pieces in parallel (encoding and compressing
// Parquet costs as much as the work that makes the rows: the packer's
// packed rows). Piece p writes its own files; when the stage's writers are
// committed the pieces' shards are renamed, piece by piece and in each
// piece's order, to the names one writer of the kind gives
// (KIND-00000.parquet, ...), so reading the kind's files in name order reads
// the rows in piece order. A crash before the rename leaves piece files the
// runner clears with the rest of the stage's output (they are shards of the
// kind by name). With n <= 1 it is one ordinary writer.
//
// Where one piece ends, its last file ends, so the file boundaries (not the
// rows or their order) depend on n: a stage that wants the same files on
// every machine passes an n that does not depend on the machine.
//
// As with StageWriter the runner commits the writers after Run returns; a
// stage that needs the final shard names before that (the packer lists
// them in its own manifest) calls Close itself, and the runner's Close
// then returns the same shards.
func StagePieceWriters[T any](sc *StageContext, kind string, n int) (*PieceWriters[T], error) {
	if err := sc.declares(kind); err != nil {
		return nil, err
	}
	g := &PieceWriters[T]{dir: sc.Dir, prefix: sc.prefix + kind}
	for p := range max(n, 1) {
		prefix := fmt.Sprintf("%s-p%02d", g.prefix, p)
		if n <= 1 {
			prefix = g.prefix // one piece: its own names are the final ones
		}
		w, err := NewShardWriter[T](sc.Dir, prefix, kind, sc.writerOp)
		if err != nil {
			g.Abort()
			return nil, err
		}
		g.pieces = append(g.pieces, w)
	}
	sc.track(kind, g)
	return g, nil
}

// PieceWriters are a kind's piece writers, committed as one writer.
type PieceWriters[T any] struct {
	dir, prefix string
	pieces      []*ShardWriter[T]
	closed      bool
	shards      []ShardInfo
	err         error
}

// Piece is the writer of piece p.
func (g *PieceWriters[T]) Piece(p int) *ShardWriter[T] { return g.pieces[p] }

// Len is the number of pieces.
func (g *PieceWriters[T]) Len() int { return len(g.pieces) }

// Close closes every piece (all of them, so none keeps a temp file) and
// renames their shards into one sequence. A second call returns the
// first's result.
func (g *PieceWriters[T]) Close() ([]ShardInfo, error) {
	if !g.closed {
		g.closed = true
		g.shards, g.err = g.close()
	}
	return g.shards, g.err
}

func (g *PieceWriters[T]) close() ([]ShardInfo, error) {
	var all []ShardInfo
	var errs []error
	for _, w := range g.pieces {
		infos, err := w.Close()
		errs = append(errs, err)
		all = append(all, infos...)
	}
	if err := errors.Join(errs...); err != nil {
		g.removeAll(all)
		return nil, err
	}
	if len(g.pieces) == 1 {
		return all, nil
	}
	return RenumberShards(g.dir, g.prefix, all)
}

// RenumberShards renames committed shards (in dir, listed in the order
// their rows are read) to PREFIX-00000.parquet, PREFIX-00001.parquet, ...:
// the names one writer of the kind gives, for shards that several writers
// wrote in parallel. The directory is fsynced once the renames are done.
func RenumberShards(dir, prefix string, shards []ShardInfo) ([]ShardInfo, error) {
	for i := range shards {
		name := fmt.Sprintf("%s-%05d.parquet", prefix, i)
		if err := os.Rename(filepath.Join(dir, shards[i].Path), filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrIO, err)
		}
		shards[i].Path = name
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return shards, nil
}

// removeAll removes the committed shards of a group whose Close failed:
// without the manifest nothing lists them, and the stage failed.
func (g *PieceWriters[T]) removeAll(shards []ShardInfo) {
	for _, s := range shards {
		os.Remove(filepath.Join(g.dir, s.Path))
	}
}

// Abort aborts every piece.
func (g *PieceWriters[T]) Abort() {
	for _, w := range g.pieces {
		w.Abort()
	}
}
