package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IsDataName reports whether a directory walk picks a file up as a data
// file: JSONL plain or compressed (IsJSONLName) or Parquet.
func IsDataName(name string) bool { return IsJSONLName(name) || IsParquet(name) }

// ExpandDataPaths resolves the input paths a command is given: a file
// stands for itself (whatever its name); a pattern with *, ? or [ (quoted,
// so the shell leaves it to the command) for the paths it matches, in
// lexical order, names starting with a dot left out unless the pattern's
// last element starts with one; a directory, named or matched, for every data file below
// it (IsDataName; hidden files and directories, such as a writer's temp
// files, left out), in lexical order of their paths. Any number of each may
// be given; the order of the arguments is kept. A pattern matching nothing,
// a directory holding no data file, a missing path or a file reached twice
// is an ErrInput naming it.
func ExpandDataPaths(paths []string) ([]string, error) {
	var out []string
	from := map[string]string{} // cleaned path → the argument that gave it
	add := func(p, arg string) error {
		c := filepath.Clean(p)
		if prev, dup := from[c]; dup {
			return fmt.Errorf("%w: %s is given twice (by %s and by %s)", ErrInput, p, prev, arg)
		}
		from[c] = arg
		out = append(out, p)
		return nil
	}
	expand := func(p, arg string) error {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInput, arg, err)
		}
		if !st.IsDir() {
			return add(p, arg)
		}
		n := 0
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			hidden := path != p && strings.HasPrefix(d.Name(), ".")
			switch {
			case d.IsDir() && hidden:
				return filepath.SkipDir
			case d.IsDir() || hidden || !IsDataName(d.Name()):
				return nil
			}
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
				return nil // a link to nothing or to a directory
			}
			n++
			return add(path, arg)
		})
		if errors.Is(err, ErrInput) {
			return err
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInput, arg, err)
		}
		if n == 0 {
			return fmt.Errorf("%w: directory %s holds no .jsonl, .jsonl.gz, .jsonl.zst or .parquet file", ErrInput, p)
		}
		return nil
	}
	for _, arg := range paths {
		if _, err := os.Stat(arg); err == nil || !strings.ContainsAny(arg, "*?[") {
			if err := expand(arg, arg); err != nil {
				return nil, err
			}
			continue
		}
		m, err := filepath.Glob(arg)
		if err != nil {
			return nil, fmt.Errorf("%w: pattern %s: %v", ErrInput, arg, err)
		}
		if !strings.HasPrefix(filepath.Base(arg), ".") { // as a shell does: * does not match a leading dot
			m = slices.DeleteFunc(m, func(p string) bool { return strings.HasPrefix(filepath.Base(p), ".") })
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%w: pattern %s matches no file", ErrInput, arg)
		}
		for _, p := range m {
			if err := expand(p, arg); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
