package rtl

import (
	"fmt"
	"strings"
	"testing"
)

var traceSeeds = []string{
	"i 0 0 0 x\nI 0 0 1\nv 0 xxxx\ni 5000 0 1 1\ni 5000 1 1 0\nv 5000 0001\ne 10000\n",
	"v 0 z\nv 0 1\ne 0\n",
	"i 0 0 1 0\nv 0 0\ni 10 1 1 1\nv 10 1\ne 20\n",
	"s 4000\ns 6000\ns 6000\n",
	"i 0 2 1\n",        // bad phase
	"v 5 01\nv 4 01\n", // time goes back
	"v 0 012\n",        // not bits
	"v 0 01\nv 1 0\n",  // width changes
	"e 5\nv 6 1\n",     // after the end
	"v -1 1\n",         // negative time
	"v 99999999999999999999 1\n",
	"q 0\n", "v\n", "v 0 \x00\n",
	// packed records (w, j, u)
	"j 0 00x\nw i 1 1\nI 0 0 1\nv 0 xxxx\nj 5000 011\nj 5000 110\nu 5000 0001\nw o 4\ne 10000\n",
	"w i 2 1\nj 0 0011\n",    // a packed input state
	"j 0 011\n",              // no width record
	"w i 1 1\nw i 1 1\n",     // repeated width record
	"w i 1\n",                // too few widths
	"w i 1 0\n", "w i 1 x\n", // bad widths
	"w i 1 1\nj 0 0111\n", // packed value of the wrong length
	"w o 2\nu 0 01 1\n",   // two values in a packed record
}

// FuzzParseTrace: the trace parser never panics, and whatever it accepts
// is consistent: values are 0/1/x/z of one width per port, times do not go
// back, and a trace compared with itself has no mismatches.
func FuzzParseTrace(f *testing.F) {
	for _, s := range traceSeeds {
		f.Add(s, 2, 1)
	}
	f.Fuzz(func(t *testing.T, data string, nIn, nOut int) {
		if nIn < 0 || nIn > 8 || nOut < 0 || nOut > 8 {
			return
		}
		tr, err := parseTrace([]byte(data), nIn, nOut)
		if err != nil {
			return
		}
		var last int64 = -1
		widths := map[int]int{}
		for _, r := range append(append([]traceRec{}, tr.Inputs...), tr.Outputs...) {
			for k, v := range r.Vals {
				if !isBits(v) || strings.ToLower(v) != v {
					t.Fatalf("accepted value %q", v)
				}
				_ = k
			}
		}
		for _, r := range tr.Outputs {
			if r.T < last {
				t.Fatalf("time went back: %d after %d", r.T, last)
			}
			last = r.T
			for k, v := range r.Vals {
				if w, ok := widths[k]; ok && w != len(v) {
					t.Fatalf("output %d width %d then %d", k, w, len(v))
				}
				widths[k] = len(v)
			}
		}
		in := make([]modulePort, nIn)
		out := make([]modulePort, nOut)
		for i := range in {
			in[i] = modulePort{Name: "i", Direction: "input"}
		}
		for i := range out {
			out[i] = modulePort{Name: "o", Direction: "output"}
		}
		rt, err := buildRefTrace(in, out, tr, tr.Samples, len(tr.Samples) > 0)
		if err != nil {
			return
		}
		if c := compareTraces(rt, rt.Outputs); c.Mismatches != 0 {
			t.Fatalf("a trace differs from itself: %+v", c)
		}
		outputActivity(rt)
		rt.racyTimes()
	})
}

// TestPackedRecordsParseAsUnpacked: the recorders' packed records (one
// concatenated value, split by the w records wherever those stand) parse to
// exactly the records of the one-value-per-port form, and a packed record
// the widths do not fit is an error, never a shorter or shifted value.
func TestPackedRecordsParseAsUnpacked(t *testing.T) {
	unpacked := "i 0 0 0 xx\nI 0 0 01\nv 0 xxxx 1\ni 5000 0 1 11\ni 5000 1 1 z0\nv 5000 0001 0\ne 10000\n"
	packed := "j 0 00xx\nw i 1 2\nI 0 0 01\nw o 4 1\nu 0 xxxx1\nj 5000 0111\nj 5000 11z0\nv 5000 0001 0\ne 10000\n"
	want, err := parseTrace([]byte(unpacked), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseTrace([]byte(packed), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !equalRecs(got.Inputs, want.Inputs) || !equalRecs(got.Outputs, want.Outputs) || !equalRecs(got.Settled, want.Settled) ||
		got.End != want.End || !got.HasEnd {
		t.Fatalf("packed parse\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []struct{ name, trace, why string }{
		{"no width record", "j 0 0011\n", "without its width record"},
		{"no output widths", "w i 1 2\nu 0 0\n", "without its width record"},
		{"short value", "w i 1 2\nj 0 001\n", "has 3 bits"},
		{"long value", "w i 1 2\nj 0 00111\n", "has 5 bits"},
		{"widths of the wrong count", "w i 1\nj 0 00\n", "1 widths, want 2"},
		{"repeated", "w i 1 2\nw i 1 2\n", "repeated"},
		{"zero width", "w i 1 0\n", "bad width"},
	} {
		if _, err := parseTrace([]byte(bad.trace), 2, 2); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("%s: err %v, want one saying %q", bad.name, err, bad.why)
		}
	}
}

// TestSampleRuns: a run record expands to its instants, the same as one s
// record each; a run that is empty, too long or past the largest time is
// an error.
func TestSampleRuns(t *testing.T) {
	got, err := parseTrace([]byte("r 5000 10000 3\nr 40000 0 2\ns 41000\nr 50000 0 1\n"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{5000, 15000, 25000, 40000, 40000, 41000, 50000}
	if fmt.Sprint(got.Samples) != fmt.Sprint(want) {
		t.Fatalf("samples %v, want %v", got.Samples, want)
	}
	for _, bad := range []string{"r 0 1 0\n", "r 0 1\n", "r 0 x 2\n", "r 1 4611686018427387904 3\n", "r 0 1 67108865\n"} {
		if _, err := parseTrace([]byte(bad), 0, 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func equalRecs(a, b []traceRec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || a[i].Phase != b[i].Phase || strings.Join(a[i].Vals, " ") != strings.Join(b[i].Vals, " ") {
			return false
		}
	}
	return true
}

// TestCompareFourState pins the 4-state rule: x in the reference is a
// don't-care; any other reference bit must be matched exactly, so x or z
// where the reference is defined is a mismatch, and z must meet z.
func TestCompareFourState(t *testing.T) {
	cases := []struct {
		ref, cand string
		match     bool
	}{
		{"0101", "0101", true},
		{"01x1", "0111", true},
		{"01x1", "01z1", true},
		{"xxxx", "zzzz", true},
		{"0101", "01x1", false},
		{"0101", "01z1", false},
		{"z", "z", true},
		{"z", "0", false},
		{"z", "x", false},
		{"01", "001", false},
	}
	for _, c := range cases {
		if got := bitsMatch(c.ref, c.cand); got != c.match {
			t.Errorf("bitsMatch(%q, %q) = %v, want %v", c.ref, c.cand, got, c.match)
		}
	}
}

// TestValuesBeforeSamples: a sample at t compares the settled values just
// before t (what a harness sees at a clock edge before its updates), and a
// run that records nothing before a sample compares all-x there.
func TestValuesBeforeSamples(t *testing.T) {
	outs := []traceRec{{T: 0, Vals: []string{"00"}}, {T: 10, Vals: []string{"01"}}, {T: 20, Vals: []string{"11"}}}
	got := valuesBefore(outs, []int64{0, 5, 10, 11, 25}, []int{2})
	want := []string{"xx", "00", "00", "01", "11"}
	for i := range want {
		if got[i][0] != want[i] {
			t.Errorf("sample %d: %s, want %s", i, got[i][0], want[i])
		}
	}
}

// TestReplaySchedule: phase-0 states of one timestep (an edge and blocking
// stimulus in its batch) collapse to one, unless the timestep is split;
// phase-1 states stay separate; duplicates go.
func TestReplaySchedule(t *testing.T) {
	data := "i 0 0 0 0\nI 0 0 0\nv 0 0\ni 5 0 1 0\ni 5 0 1 1\ni 5 1 1 0\ni 10 0 0 0\ni 10 0 0 0\nv 10 1\ne 20\n"
	tr, err := parseTrace([]byte(data), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	in := []modulePort{{"clk", "input"}, {"d", "input"}}
	rt, err := buildRefTrace(in, []modulePort{{"q", "output"}}, tr, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	render := func(rt *refTrace) string {
		var s []string
		for _, st := range rt.States {
			s = append(s, strings.Join(st.Vals, "")+"@"+itoa(int(st.T))+"/"+itoa(st.Phase))
		}
		return strings.Join(s, " ")
	}
	if got, want := render(rt), "00@0/0 11@5/0 10@5/1 00@10/0"; got != want {
		t.Errorf("schedule %s, want %s", got, want)
	}
	if r := rt.racyTimes(); len(r) != 1 || r[0] != 5 {
		t.Errorf("racy times %v, want [5]", r)
	}
	if got, want := render(rt.withSplit(map[int64]bool{5: true})), "00@0/0 10@5/0 11@5/0 10@5/1 00@10/0"; got != want {
		t.Errorf("split schedule %s, want %s", got, want)
	}
	if got, want := rt.Samples, []int64{5, 10, 20}; len(got) != len(want) || got[0] != 5 || got[2] != 20 {
		t.Errorf("input-change samples %v, want %v", got, want)
	}
}
