package rtl

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Port traces. The verdict on an RTL candidate is computed here, in Go,
// from two traces: the reference's, recorded by a trusted recorder inside
// the reference while the trusted harness drove it (no candidate compiled
// in), and the candidate's, recorded by a generated replay driver that
// applies the reference's recorded input states to the candidate alone. The
// trace files are plain text written with %b, one record per line:
//
//	i <fs> <p> <in>...  an input state, in the order the states occurred, with
//	                  its phase p (see recorderText) (trusted run)
//	I <fs> <in>...    the settled input state at the end of time 0 (trusted run)
//	v <fs> <out>...   the settled output values at the end of a timestep in
//	                  which an output changed ($fstrobe), and at time 0
//	e <fs>            the end of the run (its absence means the run was cut short)
//	s <fs>            (samples file) a harness sample instant
//	r <fs> <d> <n>    (samples file) n sample instants from fs, d apart
//
// and, as the recorders write them, the packed forms of the i and v records:
//
//	w i <width>...    the input ports' widths, w o <width>... the outputs'
//	                  (anywhere in the file: a record can precede them)
//	j <fs> <p><in>    an i record with the phase bit and every input value
//	                  concatenated into one value
//	u <fs> <out>      a v record with the output values concatenated
//
// One value per record instead of one per port: each value of a Verilog
// $fwrite or $fstrobe is a VPI value fetch, and in the trusted run of a long
// sequential task those fetches were most of the recorder's cost (the
// recorder itself most of the trusted run's cost over a plain run).
//
// Times are integral femtoseconds. A value is a string of 0 1 x z, one per
// bit, most significant first; each port keeps one width in a trace.

// traceRecords is one parsed trace file.
type traceRecords struct {
	Inputs  []traceRec // i records, in file order
	Settled []traceRec // I records
	Outputs []traceRec // v records, in file order
	Samples []int64    // s records
	End     int64
	HasEnd  bool
}

type traceRec struct {
	T     int64
	Vals  []string
	Phase int // input records: 0 in the timestep's first active region, 1 after it
}

// maxSampleRun bounds the samples a samples file may expand to (r
// records): more than any trace a simulation can write within its limits.
const maxSampleRun = 1 << 26

// maxTraceLine bounds one line: a port wider than this is not a design a
// trace can judge.
const maxTraceLine = 1 << 20

// parseTrace reads a trace file whose i/I records carry nIn values and
// whose v records carry nOut. Every malformed line is an error naming it:
// a trace that cannot be read is never a pass.
func parseTrace(data []byte, nIn, nOut int) (traceRecords, error) {
	var tr traceRecords
	inW := make([]int, nIn)
	outW := make([]int, nOut)
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 0, 64<<10), maxTraceLine)
	packedIn, packedOut, err := packedWidths(data, nIn, nOut)
	if err != nil {
		return tr, err
	}
	var last int64 = -1
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if line == "" {
			continue
		}
		if tr.HasEnd {
			return tr, fmt.Errorf("%w: trace line %d: record after the end record", ErrParse, lineNo)
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f[0]) != 1 {
			return tr, fmt.Errorf("%w: trace line %d: %q is not a record", ErrParse, lineNo, truncate(line, 80))
		}
		if f[0] == "w" { // read by packedWidths
			continue
		}
		if f[0] == "j" || f[0] == "u" {
			widths, kind, have := packedOut, "v", packedOut != nil
			if f[0] == "j" {
				widths, kind, have = append([]int{1}, packedIn...), "i", packedIn != nil || nIn == 0
			}
			if !have {
				return tr, fmt.Errorf("%w: trace line %d: packed record without its width record", ErrParse, lineNo)
			}
			if len(f) != 3 {
				return tr, fmt.Errorf("%w: trace line %d: a packed record holds one value", ErrParse, lineNo)
			}
			vals, err := unpackBits(f[2], widths)
			if err != nil {
				return tr, fmt.Errorf("%w: trace line %d: %v", ErrParse, lineNo, err)
			}
			f = append([]string{kind, f[1]}, vals...)
		}
		t, err := parseFS(f[1])
		if err != nil {
			return tr, fmt.Errorf("%w: trace line %d: %v", ErrParse, lineNo, err)
		}
		if f[0] != "s" && f[0] != "r" { // the samples file is separate and has its own order
			if t < last {
				return tr, fmt.Errorf("%w: trace line %d: time %d before %d", ErrParse, lineNo, t, last)
			}
			last = t
		}
		vals := f[2:]
		check := func(widths []int) error {
			if len(vals) != len(widths) {
				return fmt.Errorf("%w: trace line %d: %d values, want %d", ErrParse, lineNo, len(vals), len(widths))
			}
			for k, v := range vals {
				if !isBits(v) {
					return fmt.Errorf("%w: trace line %d: value %d is not 0/1/x/z bits", ErrParse, lineNo, k+1)
				}
				if widths[k] == 0 {
					widths[k] = len(v)
				} else if widths[k] != len(v) {
					return fmt.Errorf("%w: trace line %d: value %d has %d bits, earlier %d", ErrParse, lineNo, k+1, len(v), widths[k])
				}
			}
			return nil
		}
		switch f[0] {
		case "i", "I":
			phase := 1
			if f[0] == "i" {
				if len(vals) == 0 || (vals[0] != "0" && vals[0] != "1") {
					return tr, fmt.Errorf("%w: trace line %d: input record without its phase", ErrParse, lineNo)
				}
				phase = int(vals[0][0] - '0')
				vals = vals[1:]
			}
			if err := check(inW); err != nil {
				return tr, err
			}
			r := traceRec{T: t, Vals: normBits(vals), Phase: phase}
			if f[0] == "i" {
				tr.Inputs = append(tr.Inputs, r)
			} else {
				tr.Settled = append(tr.Settled, r)
			}
		case "v":
			if err := check(outW); err != nil {
				return tr, err
			}
			tr.Outputs = append(tr.Outputs, traceRec{T: t, Vals: normBits(vals)})
		case "s":
			if len(vals) != 0 {
				return tr, fmt.Errorf("%w: trace line %d: sample record with values", ErrParse, lineNo)
			}
			tr.Samples = append(tr.Samples, t)
		case "r":
			if len(vals) != 2 {
				return tr, fmt.Errorf("%w: trace line %d: a sample run holds its start, spacing and count", ErrParse, lineNo)
			}
			d, err := parseFS(vals[0])
			if err != nil {
				return tr, fmt.Errorf("%w: trace line %d: spacing: %v", ErrParse, lineNo, err)
			}
			n, err := strconv.Atoi(vals[1])
			if err != nil || n < 1 || n > maxSampleRun-len(tr.Samples) {
				return tr, fmt.Errorf("%w: trace line %d: sample count %q (at most %d samples in all)", ErrParse, lineNo, truncate(vals[1], 20), maxSampleRun)
			}
			if n > 1 && d > (math.MaxInt64-t)/int64(n-1) {
				return tr, fmt.Errorf("%w: trace line %d: sample run past the largest time", ErrParse, lineNo)
			}
			for k := 0; k < n; k++ {
				tr.Samples = append(tr.Samples, t+int64(k)*d)
			}
		case "e":
			if len(vals) != 0 {
				return tr, fmt.Errorf("%w: trace line %d: end record with values", ErrParse, lineNo)
			}
			tr.End, tr.HasEnd = t, true
		default:
			return tr, fmt.Errorf("%w: trace line %d: unknown record %q", ErrParse, lineNo, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return tr, fmt.Errorf("%w: trace: %v", ErrParse, err)
	}
	return tr, nil
}

// packedWidths reads the w records of a trace: the port widths its packed
// records (j, u) are split by. A packed record without its w record is an
// error where it is read.
func packedWidths(data []byte, nIn, nOut int) (in, out []int, err error) {
	seen := map[string]bool{}
	for off := 0; off < len(data); {
		end := off
		for end < len(data) && data[end] != '\n' {
			end++
		}
		line := data[off:end]
		off = end + 1
		if len(line) < 2 || line[0] != 'w' || line[1] != ' ' {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) < 2 || (f[1] != "i" && f[1] != "o") || seen[f[1]] {
			return nil, nil, fmt.Errorf("%w: trace: bad or repeated width record %q", ErrParse, truncate(string(line), 80))
		}
		seen[f[1]] = true
		want := nIn
		if f[1] == "o" {
			want = nOut
		}
		if len(f)-2 != want {
			return nil, nil, fmt.Errorf("%w: trace: width record %q: %d widths, want %d", ErrParse, truncate(string(line), 80), len(f)-2, want)
		}
		ws := make([]int, 0, want)
		for _, x := range f[2:] {
			n, err := strconv.Atoi(x)
			if err != nil || n < 1 || n > maxTraceLine {
				return nil, nil, fmt.Errorf("%w: trace: width record %q: bad width %q", ErrParse, truncate(string(line), 80), truncate(x, 20))
			}
			ws = append(ws, n)
		}
		if f[1] == "i" {
			in = ws
		} else {
			out = ws
		}
	}
	return in, out, nil
}

// unpackBits splits a packed value into one value per width, in order.
func unpackBits(v string, widths []int) ([]string, error) {
	total := 0
	for _, w := range widths {
		total += w
	}
	if len(v) != total {
		return nil, fmt.Errorf("packed value has %d bits, the width record %d", len(v), total)
	}
	out := make([]string, len(widths))
	at := 0
	for i, w := range widths {
		out[i] = v[at : at+w]
		at += w
	}
	return out, nil
}

func parseFS(s string) (int64, error) {
	// %0.0f of a non-negative real prints digits only; "-0" is time 0.
	if s == "-0" {
		return 0, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("time %q is not a non-negative integer", truncate(s, 40))
		}
	}
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q out of range", truncate(s, 40))
	}
	return t, nil
}

func isBits(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '0', '1', 'x', 'z', 'X', 'Z':
		default:
			return false
		}
	}
	return s != ""
}

func normBits(vals []string) []string {
	for i, v := range vals {
		vals[i] = strings.ToLower(v)
	}
	return vals
}

// refTrace is the reference's behaviour under its harness, as a candidate
// is judged against it.
type refTrace struct {
	In, Out   []modulePort
	InWidths  []int
	OutWidths []int
	States    []traceRec // the replay schedule: input states in order
	Outputs   []traceRec // settled output values, one per time (the last record of each)
	Samples   []int64    // sample instants, sorted, distinct
	End       int64
	// Sampling says where the sample instants come from: "harness" (where
	// the trusted harness takes its samples) or "input_changes" (every time
	// the reference's inputs change, and the end).
	Sampling string
	// Split lists the racy timesteps whose phase-0 states are applied one
	// after another (#0 between) instead of as one batch; see schedule.
	Split map[int64]bool
	raw   []traceRec
}

// schedule turns the recorded input states into the replay's: consecutive
// duplicates dropped, and the phase-0 states of a timestep (a clock edge and
// the blocking stimulus that raced it in the same active region) applied
// as one batch, so the design sees the data with the edge, unless the
// timestep is in Split, where they are applied in order with #0 between, so
// it sees the edge first. Which one the reference saw depends on the
// simulator's thread order in the trusted run; the self-check finds it
// (see findSplits).
func (rt *refTrace) schedule() []traceRec {
	var states []traceRec
	for _, r := range rt.raw {
		n := len(states)
		if n > 0 && equalVals(states[n-1].Vals, r.Vals) {
			continue
		}
		if n > 0 && r.Phase == 0 && states[n-1].T == r.T && states[n-1].Phase == 0 && !rt.Split[r.T] {
			states[n-1] = r
			continue
		}
		states = append(states, r)
	}
	return states
}

// racyTimes are the timesteps with more than one distinct phase-0 state.
func (rt *refTrace) racyTimes() []int64 {
	var out []int64
	for i := 1; i < len(rt.raw); i++ {
		a, b := rt.raw[i-1], rt.raw[i]
		if a.T == b.T && a.Phase == 0 && b.Phase == 0 && !equalVals(a.Vals, b.Vals) {
			if n := len(out); n == 0 || out[n-1] != b.T {
				out = append(out, b.T)
			}
		}
	}
	return out
}

// withSplit returns a copy of rt whose schedule uses split.
func (rt *refTrace) withSplit(split map[int64]bool) *refTrace {
	c := *rt
	c.Split = split
	c.States = c.schedule()
	return &c
}

// buildRefTrace assembles the reference trace from the trusted run's trace
// file and (when the harness's sample instants were recorded) its samples.
func buildRefTrace(in, out []modulePort, tr traceRecords, harnessSamples []int64, haveHarnessSamples bool) (*refTrace, error) {
	if !tr.HasEnd {
		return nil, fmt.Errorf("%w: the reference trace has no end record (the recorder's final block did not run)", ErrParse)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the design has no outputs to compare", ErrParse)
	}
	if len(tr.Outputs) == 0 {
		return nil, fmt.Errorf("%w: the reference trace has no output records", ErrParse)
	}
	rt := &refTrace{In: in, Out: out, End: tr.End}
	rt.OutWidths = widthsOf(tr.Outputs[0].Vals)
	// The input states in the order they occurred. The recorder's change
	// monitor may miss changes made at time 0 before it first waited; the
	// settled state at the end of time 0 closes that gap.
	var raw []traceRec
	settled0 := len(tr.Settled) > 0
	for _, r := range tr.Inputs {
		if settled0 && r.T > 0 {
			raw = append(raw, tr.Settled[0])
			settled0 = false
		}
		raw = append(raw, r)
	}
	if settled0 {
		raw = append(raw, tr.Settled[0])
	}
	rt.raw = raw
	if len(in) > 0 {
		if len(raw) == 0 {
			return nil, fmt.Errorf("%w: the reference trace has no input records", ErrParse)
		}
		rt.InWidths = widthsOf(raw[0].Vals)
	}
	states := rt.schedule()
	rt.States = states
	rt.Outputs = lastPerTime(tr.Outputs)
	if haveHarnessSamples {
		rt.Sampling = "harness"
		rt.Samples = distinctSorted(harnessSamples)
	} else {
		rt.Sampling = "input_changes"
		var ts []int64
		for _, s := range states {
			if s.T > 0 {
				ts = append(ts, s.T)
			}
		}
		rt.Samples = distinctSorted(append(ts, tr.End))
	}
	var kept []int64
	for _, t := range rt.Samples {
		if t > 0 && t <= tr.End {
			kept = append(kept, t)
		}
	}
	rt.Samples = kept
	return rt, nil
}

func widthsOf(vals []string) []int {
	w := make([]int, len(vals))
	for i, v := range vals {
		w[i] = len(v)
	}
	return w
}

func equalVals(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lastPerTime keeps the last record of each time: the settled value.
func lastPerTime(rs []traceRec) []traceRec {
	var out []traceRec
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].T == r.T {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

func distinctSorted(ts []int64) []int64 {
	s := append([]int64(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var out []int64
	for i, t := range s {
		if i == 0 || t != s[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// valuesBefore returns, for each sample instant, the settled output values
// just before it (the last record with an earlier time; all X before the
// first). That is what a harness sampling at that instant compares: at a
// clock edge, the outputs before the edge's updates.
func valuesBefore(outs []traceRec, samples []int64, widths []int) [][]string {
	res := make([][]string, len(samples))
	allX := make([]string, len(widths))
	for i, w := range widths {
		allX[i] = strings.Repeat("x", w)
	}
	j := -1
	for k, t := range samples {
		for j+1 < len(outs) && outs[j+1].T < t {
			j++
		}
		if j < 0 {
			res[k] = allX
		} else {
			res[k] = outs[j].Vals
		}
	}
	return res
}

// traceComparison is the verdict of comparing a candidate's trace with
// the reference's.
type traceComparison struct {
	Samples    int64 // samples compared
	Mismatches int64 // samples where some output differs
	FirstT     int64 // the first mismatching sample's time (-1: none)
	// PerOutput counts mismatching samples per output, in port order.
	PerOutput []int64
	First     string // the first mismatch, for the cause
}

// compareTraces compares the candidate's settled outputs with the
// reference's at every sample instant, bit by bit in 4-state: where the
// reference bit is x the candidate may hold anything (don't-care); every
// other reference bit (0, 1, z) must be matched exactly, so an x or z where
// the reference is defined is a mismatch.
func compareTraces(rt *refTrace, cand []traceRec) traceComparison {
	refV := valuesBefore(rt.Outputs, rt.Samples, rt.OutWidths)
	candV := valuesBefore(lastPerTime(cand), rt.Samples, rt.OutWidths)
	c := traceComparison{Samples: int64(len(rt.Samples)), PerOutput: make([]int64, len(rt.Out)), FirstT: -1}
	for k := range rt.Samples {
		bad := false
		for p := range rt.Out {
			if !bitsMatch(refV[k][p], candV[k][p]) {
				c.PerOutput[p]++
				if c.First == "" {
					c.FirstT = rt.Samples[k]
					c.First = fmt.Sprintf("output %s at %s: reference %s, candidate %s", rt.Out[p].Name,
						fmtFS(rt.Samples[k]), truncate(refV[k][p], 70), truncate(candV[k][p], 70))
				}
				bad = true
			}
		}
		if bad {
			c.Mismatches++
		}
	}
	return c
}

func bitsMatch(ref, cand string) bool {
	if len(ref) != len(cand) {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] != 'x' && ref[i] != cand[i] {
			return false
		}
	}
	return true
}

// fmtFS prints a femtosecond time in the largest unit that divides it.
func fmtFS(t int64) string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1e15, "s"}, {1e12, "ms"}, {1e9, "us"}, {1e6, "ns"}, {1e3, "ps"}} {
		if t != 0 && t%u.n == 0 {
			return strconv.FormatInt(t/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(t, 10) + "fs"
}

// outputActivity says whether the reference's outputs carry any
// information at its samples: how many outputs take more than one defined
// value, at how many samples some output is defined (an x is a don't-care,
// so a sample where every output is x compares nothing), and whether the
// inputs vary.
func outputActivity(rt *refTrace) (toggling, definedSamples int, inputsVary bool) {
	vals := valuesBefore(rt.Outputs, rt.Samples, rt.OutWidths)
	defined := make([]bool, len(vals))
	for p := range rt.Out {
		seen := map[string]bool{}
		for k := range vals {
			v := vals[k][p]
			if strings.Trim(v, "x") != "" {
				defined[k] = true
			}
			if !strings.Contains(v, "x") {
				seen[v] = true
			}
		}
		if len(seen) > 1 {
			toggling++
		}
	}
	for _, d := range defined {
		if d {
			definedSamples++
		}
	}
	distinct := map[string]bool{}
	for _, s := range rt.States {
		if v := strings.Join(s.Vals, " "); !strings.Contains(v, "x") {
			distinct[v] = true
		}
	}
	return toggling, definedSamples, len(distinct) > 1
}
