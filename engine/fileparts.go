package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Raw input files are cut into shard parts by rows, not by file index, for
// stage types that declare SplitsFiles (ingest): one 200k-row JSONL split in
// 4 gives 4 parts of ±1% of the rows instead of 200000, 0, 0, 0.
//
// Every file is a sequence of units in input order — an uncompressed JSONL
// file is one byte range that may be cut anywhere (a part reads the lines
// that start inside its range), a Parquet file is its row groups, a task
// folder (a directory holding task.json) is one unit with all its files,
// anything else (compressed JSONL: no random access) is one unit — weighed
// by bytes (where there are task folders: one per folder, other files 0). Part k of N covers global offsets [k·T/N, (k+1)·T/N); an uncut
// unit goes to the part holding its midpoint. The parts in order are the
// input in order, so their concatenation is what one unsharded run reads.

// Units of FileRange.
const (
	RangeWhole     = ""           // the whole file
	RangeBytes     = "bytes"      // lines starting at byte offsets [Start, End)
	RangeRowGroups = "row_groups" // Parquet row groups [Start, End)
)

// FileRange is the piece of one raw input file a shard part reads.
type FileRange struct {
	Path       string
	Unit       string // RangeWhole, RangeBytes or RangeRowGroups
	Start, End int64
}

// String is how the range is recorded in the manifest ("" for a whole file).
func (r FileRange) String() string {
	if r.Unit == RangeWhole {
		return ""
	}
	return r.Unit + "=" + strconv.FormatInt(r.Start, 10) + "-" + strconv.FormatInt(r.End, 10)
}

type fileUnit struct {
	files  []string // a task folder's files, else one
	unit   string
	start  int64 // row group index (RangeRowGroups)
	weight int64
	folder bool // a task folder
}

// PlanFileParts cuts files (in order) into n contiguous, balanced parts.
func PlanFileParts(files []string, n int) ([][]FileRange, error) {
	if n < 1 {
		n = 1
	}
	var units []fileUnit
	taskDirs := map[string]bool{}
	for i := 0; i < len(files); i++ {
		f := files[i]
		if dir := taskFolderOf(f, taskDirs); dir != "" {
			u := fileUnit{unit: RangeWhole, folder: true}
			for ; i < len(files) && isUnder(files[i], dir); i++ {
				u.files = append(u.files, files[i])
				u.weight += fileSize(files[i])
			}
			i--
			units = append(units, u)
			continue
		}
		kind, err := sniffSplittable(f)
		if err != nil {
			return nil, err
		}
		switch kind {
		case RangeRowGroups:
			sizes, err := rowGroupSizes(f)
			if err != nil {
				return nil, err
			}
			for g, w := range sizes {
				units = append(units, fileUnit{files: []string{f}, unit: RangeRowGroups, start: int64(g), weight: w})
			}
		default:
			units = append(units, fileUnit{files: []string{f}, unit: kind, weight: fileSize(f)})
		}
	}
	// Task folders are balanced by count: a folder is one task whatever its
	// size, and loose files beside them (a README, a script) are no rows.
	folders := false
	for _, u := range units {
		folders = folders || u.folder
	}
	var total int64
	for i := range units {
		if folders && units[i].folder {
			units[i].weight = 1
		} else if folders {
			units[i].weight = 0
			if units[i].unit == RangeBytes {
				units[i].unit = RangeWhole // read whole by the part it lands in
			}
		}
		total += units[i].weight
	}
	bound := func(k int) int64 { return int64(float64(total) * float64(k) / float64(n)) }
	parts := make([][]FileRange, n)
	var off int64
	for _, u := range units {
		if u.unit == RangeBytes {
			f := u.files[0]
			for k := 0; k < n; k++ {
				lo, hi := max(bound(k), off), min(bound(k+1), off+u.weight)
				if k == n-1 {
					hi = off + u.weight
				}
				if hi > lo || (u.weight == 0 && k == partOf(off, total, n)) {
					parts[k] = appendRange(parts[k], FileRange{Path: f, Unit: RangeBytes, Start: lo - off, End: hi - off})
				}
			}
		} else {
			k := partOf(off+u.weight/2, total, n)
			for _, f := range u.files {
				r := FileRange{Path: f, Unit: u.unit}
				if u.unit == RangeRowGroups {
					r.Start, r.End = u.start, u.start+1
				}
				parts[k] = appendRange(parts[k], r)
			}
		}
		off += u.weight
	}
	return parts, nil
}

// appendRange merges adjacent row-group ranges of one file.
func appendRange(rs []FileRange, r FileRange) []FileRange {
	if n := len(rs); n > 0 && r.Unit == RangeRowGroups && rs[n-1].Path == r.Path && rs[n-1].Unit == r.Unit && rs[n-1].End == r.Start {
		rs[n-1].End = r.End
		return rs
	}
	return append(rs, r)
}

func partOf(at, total int64, n int) int {
	if total <= 0 {
		return 0
	}
	return min(int(float64(at)*float64(n)/float64(total)), n-1)
}

// taskFolderOf is the task folder f belongs to: its directory or the one
// above, when it holds a task.json ("" if none).
func taskFolderOf(f string, cache map[string]bool) string {
	for dir, up := filepath.Dir(f), 0; up < 2; dir, up = filepath.Dir(dir), up+1 {
		has, ok := cache[dir]
		if !ok {
			_, err := os.Stat(filepath.Join(dir, "task.json"))
			has = err == nil
			cache[dir] = has
		}
		if has {
			return dir
		}
	}
	return ""
}

func isUnder(f, dir string) bool {
	rel, err := filepath.Rel(dir, f)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func fileSize(f string) int64 {
	st, err := os.Stat(f)
	if err != nil {
		return 0
	}
	return st.Size()
}

// sniffSplittable says how a file may be cut: Parquet by row groups, plain
// (uncompressed) JSONL by bytes, anything else not at all. The format is
// OpenInput's (the reader's own detection); a file it refuses is one whole
// unit, so the reader reports it once.
func sniffSplittable(f string) (string, error) {
	st, err := os.Stat(f)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInput, err)
	}
	if !st.Mode().IsRegular() {
		return RangeWhole, nil // a pipe: read whole, once
	}
	in, format, err := OpenInput(f)
	if err != nil {
		return RangeWhole, nil
	}
	in.Close()
	switch {
	case format.Kind == FormatParquet:
		return RangeRowGroups, nil
	case format.Compression != CompressionNone:
		return RangeWhole, nil
	}
	return RangeBytes, nil
}

// rowGroupSizes are the compressed sizes of a Parquet file's row groups.
func rowGroupSizes(f string) ([]int64, error) {
	_, pf, err := openParquetFile(f)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	md := pf.MetaData()
	out := make([]int64, md.NumRowGroups())
	for i := range out {
		rg := md.RowGroup(i)
		out[i] = max(rg.TotalCompressedSize(), rg.NumRows(), 1)
	}
	return out, nil
}

// ScanJSONLRange is ScanJSONL over the lines that start at byte offsets in
// [start, end) of an uncompressed JSONL file. Line numbers are the file's
// own (the lines before start are counted, not parsed), so rejection rows
// name the same line whatever the split.
func ScanJSONLRange(path string, start, end int64, fn func(line int64, raw []byte) error, bad func(*JSONLError)) error {
	// The same file-level check as ScanJSONL (binary data, Parquet, a
	// compression: one ErrInput, not a rejection per line).
	in, format, err := OpenInput(path)
	if err != nil {
		return err
	}
	in.Close()
	if format.Kind != FormatJSONL || format.Compression != CompressionNone {
		return fmt.Errorf("%w: %s: %s cannot be read by byte range", ErrInput, path, format)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	// Skip to the first line starting at or after start, counting lines.
	var pos, line int64
	atLineStart := true
	for pos < start || !atLineStart {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		atLineStart = len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if atLineStart {
			line++
		}
		if err != nil && err != bufio.ErrBufferFull {
			if errors.Is(err, io.EOF) {
				return nil // the file ends before the range: nothing of it is ours
			}
			return fmt.Errorf("%w: %s: read at byte %d: %v", ErrInput, path, pos, err)
		}
	}
	var buf []byte
	for pos < end {
		buf = buf[:0]
		var rerr error
		long := false
		for {
			chunk, err := br.ReadSlice('\n')
			pos += int64(len(chunk))
			if len(buf)+len(chunk) <= MaxJSONLLine {
				buf = append(buf, chunk...)
			} else {
				long = true
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			rerr = err
			break
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("%w: %s: read at line %d: %v", ErrInput, path, line+1, rerr)
		}
		if len(buf) == 0 && !long {
			return nil // EOF
		}
		line++
		if long {
			bad(&JSONLError{Path: path, Line: line, Err: fmt.Errorf("line longer than %d bytes", MaxJSONLLine)})
		} else if err := emitLine(path, line, buf, fn, bad); err != nil {
			return err
		}
		if rerr != nil {
			return nil
		}
	}
	return nil
}

// rangeRefs are the manifest's file refs of a part's ranges (whole files
// included): one per range, the file's hash and the range, so a rerun with
// the same N reads, and is checked against, the same rows.
func rangeRefs(cfgDir string, ranges []FileRange) ([]InputRef, error) {
	var refs []InputRef
	hashes := map[string]string{}
	for _, r := range ranges {
		h, ok := hashes[r.Path]
		if !ok {
			var err error
			if h, err = HashFile(r.Path); err != nil {
				return nil, err
			}
			hashes[r.Path] = h
		}
		rel, _ := filepath.Rel(cfgDir, r.Path)
		refs = append(refs, InputRef{Kind: "file", Path: rel, SHA256: h, Range: r.String()})
	}
	return refs, nil
}
