package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

// InspectOptions are `crucible inspect`'s flags.
type InspectOptions struct {
	Path    string
	Samples int
	MaxText int
	Out     io.Writer
}

func newInspectCmd() *cobra.Command {
	o := InspectOptions{Samples: 3, MaxText: 120}
	c := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print schema, row counts, per-column stats and sample rows of Parquet shards or a stage directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path, o.Out = args[0], cmd.OutOrStdout()
			return runInspect(cmd.Context(), o)
		},
	}
	c.Flags().IntVar(&o.Samples, "samples", o.Samples, "sample rows to print per kind")
	c.Flags().IntVar(&o.MaxText, "max-text", o.MaxText, "truncate sample strings to this many characters (display only)")
	return c
}

func runInspect(ctx context.Context, o InspectOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	groups, err := inspectTargets(o.Path, o.Out)
	if err != nil {
		return err
	}
	kinds := make([]string, 0, len(groups))
	for k := range groups {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if err := inspectGroup(ctx, o, k, groups[k]); err != nil {
			return err
		}
	}
	return nil
}

// inspectTargets groups the Parquet files to inspect by kind: a stage
// directory's manifest gives kinds; loose files are grouped by name.
func inspectTargets(path string, w io.Writer) (map[string][]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	groups := map[string][]string{}
	if !st.IsDir() {
		groups[filepath.Base(path)] = []string{path}
		return groups, nil
	}
	if out, err := engine.LoadStageOutput(path); err == nil {
		for _, m := range out.Parts {
			fmt.Fprintf(w, "stage %s (type %s) manifest: %d shards, config %s…\n", m.Stage, m.Type, len(m.Shards), m.ConfigHash[:min(12, len(m.ConfigHash))])
			for _, s := range m.Shards {
				groups[s.Kind] = append(groups[s.Kind], filepath.Join(path, s.Path))
			}
			keys := make([]string, 0, len(m.Counts))
			for k := range m.Counts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(w, "  count %-28s %d\n", k, m.Counts[k])
			}
		}
		return groups, nil
	}
	files, _ := filepath.Glob(filepath.Join(path, "*.parquet"))
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s: no manifest and no .parquet files", engine.ErrInput, path)
	}
	for _, f := range files {
		kind := strings.TrimSuffix(filepath.Base(f), ".parquet")
		if i := strings.LastIndex(kind, "-"); i > 0 {
			kind = kind[:i]
		}
		groups[kind] = append(groups[kind], f)
	}
	return groups, nil
}

type colStats struct {
	name      string
	typ       string
	nulls     int64
	numeric   bool
	min, max  float64
	sum       float64
	count     int64
	totalLen  int64 // strings: bytes; lists: elements
	lenCount  int64
	distinct  map[string]struct{}
	saturated bool
}

const maxDistinct = 10000

func inspectGroup(ctx context.Context, o InspectOptions, kind string, files []string) error {
	mem := memory.DefaultAllocator
	var stats []*colStats
	var rows int64
	var samples []map[string]any
	var schema *arrow.Schema
	for _, f := range files {
		pf, err := file.OpenParquetFile(f, false)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", engine.ErrInput, f, err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, mem)
		if err != nil {
			pf.Close()
			return fmt.Errorf("%w: %s: %v", engine.ErrInput, f, err)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pf.Close()
			return fmt.Errorf("%w: %s: %v", engine.ErrInput, f, err)
		}
		if schema == nil {
			schema = rr.Schema()
			for _, fl := range schema.Fields() {
				stats = append(stats, &colStats{name: fl.Name, typ: fl.Type.String(), min: math.Inf(1), max: math.Inf(-1), distinct: map[string]struct{}{}})
			}
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			n := int(rec.NumRows())
			for ci := 0; ci < int(rec.NumCols()) && ci < len(stats); ci++ {
				accumulate(stats[ci], rec.Column(ci))
			}
			for r := 0; r < n && len(samples) < o.Samples; r++ {
				row := map[string]any{}
				for ci, fl := range rec.Schema().Fields() {
					row[fl.Name] = clip(rec.Column(ci).GetOneForMarshal(r), o.MaxText)
				}
				samples = append(samples, row)
			}
			rows += int64(n)
		}
		err = rr.Err()
		rr.Release()
		pf.Close()
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: %s: %v", engine.ErrInput, f, err)
		}
	}
	w := o.Out
	fmt.Fprintf(w, "\n== %s: %d rows in %d file(s)\n", kind, rows, len(files))
	if schema != nil {
		fmt.Fprintf(w, "schema:\n")
		for _, fl := range schema.Fields() {
			fmt.Fprintf(w, "  %-20s %s\n", fl.Name, fl.Type)
		}
	}
	fmt.Fprintf(w, "columns:\n")
	for _, s := range stats {
		fmt.Fprintf(w, "  %-20s nulls=%d", s.name, s.nulls)
		if s.numeric && s.count > 0 {
			fmt.Fprintf(w, " min=%g max=%g mean=%.4g", s.min, s.max, s.sum/float64(s.count))
		}
		if s.lenCount > 0 {
			fmt.Fprintf(w, " avg_len=%.1f", float64(s.totalLen)/float64(s.lenCount))
		}
		if s.distinct != nil {
			more := ""
			if s.saturated {
				more = "+"
			}
			fmt.Fprintf(w, " distinct=%d%s", len(s.distinct), more)
		}
		fmt.Fprintln(w)
	}
	for i, row := range samples {
		b, _ := json.Marshal(row)
		fmt.Fprintf(w, "sample %d: %s\n", i, b)
	}
	return nil
}

func accumulate(s *colStats, col arrow.Array) {
	s.nulls += int64(col.NullN())
	for i := 0; i < col.Len(); i++ {
		if col.IsNull(i) {
			continue
		}
		switch a := col.(type) {
		case *array.String:
			v := a.Value(i)
			s.totalLen += int64(len(v))
			s.lenCount++
			s.addDistinct(v)
		case *array.Int64:
			s.addNum(float64(a.Value(i)))
		case *array.Int32:
			s.addNum(float64(a.Value(i)))
		case *array.Float64:
			s.addNum(a.Value(i))
		case *array.Float32:
			s.addNum(float64(a.Value(i)))
		case *array.Boolean:
			s.addDistinct(fmt.Sprint(a.Value(i)))
		case array.ListLike:
			st, end := a.ValueOffsets(i)
			s.totalLen += end - st
			s.lenCount++
			s.distinct = nil
		default:
			s.distinct = nil
		}
	}
}

func (s *colStats) addNum(v float64) {
	s.numeric = true
	s.min, s.max = math.Min(s.min, v), math.Max(s.max, v)
	s.sum += v
	s.count++
	s.distinct = nil
}

func (s *colStats) addDistinct(v string) {
	if s.distinct == nil {
		return
	}
	if len(s.distinct) >= maxDistinct {
		s.saturated = true
		return
	}
	s.distinct[v] = struct{}{}
}

func clip(v any, n int) any {
	switch x := v.(type) {
	case string:
		if len(x) > n {
			return x[:n] + "…"
		}
	case map[string]any:
		for k, e := range x {
			x[k] = clip(e, n)
		}
	case []any:
		for i, e := range x {
			x[i] = clip(e, n)
		}
		if len(x) > 8 {
			return append(x[:8], fmt.Sprintf("…(%d more)", len(x)-8))
		}
	}
	return v
}
