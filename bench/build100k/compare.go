package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// compareWorkDirs checks that two builds wrote the same rows: every shard
// of every stage in a is in b with equal columns and values. The files'
// bytes need not match (the writer's page bytes vary from run to run), so
// it compares what they hold.
func compareWorkDirs(a, b string) error {
	paths, err := filepath.Glob(filepath.Join(a, "*", "*.parquet"))
	if err != nil {
		return err
	}
	others, err := filepath.Glob(filepath.Join(b, "*", "*.parquet"))
	if err != nil {
		return err
	}
	if len(paths) == 0 || len(paths) != len(others) {
		return fmt.Errorf("%s has %d shards, %s has %d", a, len(paths), b, len(others))
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		if !slices.Contains(others, q) {
			return fmt.Errorf("%s: not in %s", rel, b)
		}
		ta, err := readTable(p)
		if err != nil {
			return err
		}
		tb, err := readTable(q)
		if err != nil {
			return err
		}
		same := array.TableEqual(ta, tb)
		n := ta.NumRows()
		ta.Release()
		tb.Release()
		if !same {
			return fmt.Errorf("%s: rows differ", rel)
		}
		fmt.Printf("%s: %d rows equal\n", rel, n)
	}
	return nil
}

func readTable(path string) (arrow.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
}
