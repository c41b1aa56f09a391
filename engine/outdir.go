package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crucible-data/crucible/engine/partlock"
)

// PrepareOutput readies a standalone command's output directory (`ingest
// --out DIR` and the like, which run outside a pipeline): it takes the
// directory's lock — the part lock of its one part, in DIR/.locks, so two
// commands writing the same DIR take turns — and, holding it, removes what
// an earlier run left: the manifests named in manifests (first, so a crash
// in between never leaves a manifest listing missing shards), the shards of
// the given kinds, and the temp files of those (a run that died on a full
// disk). Files of other kinds and other names are left alone. The caller
// keeps the lock until it has committed, then calls release.
func PrepareOutput(ctx context.Context, dir string, manifests []string, kinds ...string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	unlock, err := partlock.Lock(ctx, filepath.Join(dir, ".locks"), "manifest.json")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrIO, err)
	}
	if err := clearOutput(dir, manifests, kinds); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func clearOutput(dir string, manifests, kinds []string) error {
	for _, m := range manifests {
		if err := os.Remove(filepath.Join(dir, m)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	ours := func(name string) bool { return outputName(name, manifests, kinds) }
	for _, e := range ents {
		name := e.Name()
		temp := IsTempName(name)
		switch {
		case temp && ours(name[1:]):
		case !temp && strings.HasSuffix(name, ".parquet") && ours(name):
		default:
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	return syncDir(dir)
}

// outputName reports whether name (a file's base name, a temp file's
// without its leading dot) is one of a PrepareOutput's: a manifest's temp
// file or a shard of one of kinds.
func outputName(name string, manifests, kinds []string) bool {
	for _, m := range manifests {
		if strings.HasPrefix(name, m+".tmp-") {
			return true
		}
	}
	for _, k := range kinds {
		if strings.HasPrefix(name, k+"-") && strings.Contains(name, ".parquet") {
			return true
		}
	}
	return false
}

// ClobberedInput returns the first of inputs that PrepareOutput(dir,
// manifests, kinds...) would delete (a manifest or a shard of one of kinds
// in dir itself), or "" when none is. Commands call it before
// PrepareOutput, so an output directory that holds the input (an earlier
// run's kept-*.parquet, say) is refused rather than emptied.
func ClobberedInput(dir string, manifests, kinds, inputs []string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for _, in := range inputs {
		a, err := filepath.Abs(in)
		if err != nil || filepath.Dir(a) != d {
			continue
		}
		base := filepath.Base(a)
		if slices.Contains(manifests, base) || (strings.HasSuffix(base, ".parquet") && outputName(base, manifests, kinds)) {
			return in
		}
	}
	return ""
}
