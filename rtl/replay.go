package rtl

import (
	"fmt"
	"regexp"
	"strings"
)

// The two generated pieces of the trace design: the recorder, inserted into
// the reference copy that stands in the candidate's place in the trusted
// run, and the replay driver, the only other design in the candidate's own
// simulation. See trace.go for the record format.

// File names inside job directories.
const (
	traceFile    = "crucible_trace.txt"   // the trusted recorder's output
	samplesFile  = "crucible_samples.txt" // the trusted harness's sample instants
	stimulusFile = "crucible_stimulus.txt"
	replayFile   = "crucible_replay.txt" // the replay driver's record of the candidate
)

// timescaleMarker precedes the recorder's $printtimescale line on stdout.
const timescaleMarker = "crucible-timescale:"

// vIdent writes a name as a Verilog identifier (escaped when it is not plain).
func vIdent(name string) string {
	if reSafeName.MatchString(name) {
		return name
	}
	return `\` + name + ` `
}

// recorderText is the trusted recorder: it logs every input state change in
// execution order, the settled inputs at the end of time 0, the settled
// outputs at the end of every timestep in which one changed, and the end of
// the run. Times are femtoseconds computed from $realtime, so the trace is
// independent of the module's time unit.
func recorderText(in, out []modulePort, openInInitial bool) string {
	var b strings.Builder
	names := func(ps []modulePort) (fmtStr, args string) {
		var f, a []string
		for _, p := range ps {
			f = append(f, "%b")
			a = append(a, vIdent(p.Name))
		}
		if len(a) == 0 {
			return "", ""
		}
		return " " + strings.Join(f, " "), ", " + strings.Join(a, ", ")
	}
	inF, inA := names(in)
	outF, outA := names(out)
	// The input records are packed (one concatenated value, see trace.go):
	// the widths they are split by are written once, from $bits.
	widths := func(kind string, ps []modulePort) string {
		var f, a []string
		for _, p := range ps {
			f = append(f, "%0d")
			a = append(a, "$bits("+vIdent(p.Name)+")")
		}
		return fmt.Sprintf("    $fwrite(crucible_tfd, \"w %s %s\\n\", %s);\n", kind, strings.Join(f, " "), strings.Join(a, ", "))
	}
	concat := func(ps []modulePort) string {
		var a []string
		for _, p := range ps {
			a = append(a, vIdent(p.Name))
		}
		return strings.Join(a, ", ")
	}
	now := "$realtime * crucible_fs"
	b.WriteString("\n  // ---- crucible trace recorder (trusted run only) ----\n")
	// Icarus opens the file in the declaration, before any process runs;
	// Verilator takes no $fopen there (the settled time-0 record covers
	// what a later open misses).
	if openInInitial {
		b.WriteString("  integer crucible_tfd;\n  real crucible_fs;\n")
		b.WriteString("  initial begin\n    crucible_tfd = $fopen(\"" + traceFile + "\", \"w\");\n    crucible_fs = 1.0e15 / 1s;\n")
	} else {
		b.WriteString("  integer crucible_tfd = $fopen(\"" + traceFile + "\", \"w\");\n")
		b.WriteString("  real crucible_fs = 1.0e15 / 1s;\n")
		b.WriteString("  initial begin\n")
	}
	b.WriteString("    $display(\"" + timescaleMarker + "\");\n    $printtimescale;\n")
	if len(in) > 0 {
		b.WriteString(widths("i", in))
	}
	// $fstrobe takes only plain variables: the time goes through one.
	if len(in) > 0 {
		fmt.Fprintf(&b, "    $fstrobe(crucible_tfd, \"I 0%s\"%s);\n", inF, inA)
	}
	fmt.Fprintf(&b, "    $fstrobe(crucible_tfd, \"v 0%s\"%s);\n", outF, outA)
	b.WriteString("  end\n")
	if len(in) > 0 {
		// Each input state carries its phase within its timestep: 0 while
		// the active region that began the timestep runs (a clock edge and
		// whatever blocking assignments share its batch), 1 once that
		// region has drained (#0 reached): non-blocking stimulus behind an
		// edge. The replay applies the phase-0 states of a timestep as one
		// and each later state after a #0, which is what the design saw.
		// $realtime is a VPI call too: read once per event.
		b.WriteString("  real crucible_in_t = -1.0;\n  real crucible_rt;\n  reg crucible_late = 1'b0;\n  reg crucible_kick = 1'b0;\n")
		b.WriteString("  always @(crucible_kick) #0 crucible_late = 1'b1;\n")
		fmt.Fprintf(&b, "  always @(%s) begin\n", sensList(in))
		b.WriteString("    crucible_rt = $realtime;\n")
		b.WriteString("    if (crucible_rt != crucible_in_t) begin\n      crucible_in_t = crucible_rt;\n      crucible_late = 1'b0;\n      crucible_kick = ~crucible_kick;\n    end\n")
		fmt.Fprintf(&b, "    $fwrite(crucible_tfd, \"j %%0.0f %%b\\n\", crucible_rt * crucible_fs, {crucible_late, %s});\n  end\n", concat(in))
	}
	// Outputs stay one value per port: $fstrobe takes plain signals only,
	// and a net of the packed outputs would need their total width, which
	// Icarus 11 gets wrong from $bits in a declaration.
	b.WriteString("  real crucible_now;\n")
	fmt.Fprintf(&b, "  always @(%s) begin\n    crucible_now = %s;\n    $fstrobe(crucible_tfd, \"v %%0.0f%s\", crucible_now%s);\n  end\n", sensList(out), now, outF, outA)
	fmt.Fprintf(&b, "  final $fwrite(crucible_tfd, \"e %%0.0f\\n\", %s);\n", now)
	return b.String()
}

func sensList(ps []modulePort) string {
	var s []string
	for _, p := range ps {
		s = append(s, vIdent(p.Name))
	}
	return strings.Join(s, " or ")
}

// instrumentedReference is the reference in the candidate's place with the
// recorder inserted before its endmodule, and its ports.
func instrumentedReference(ref, dut string, openInInitial bool) (text string, in, out []modulePort, err error) {
	toks, err := lexVerilog(ref, lexOptions{skipDefines: true})
	if err != nil {
		return "", nil, nil, err
	}
	ports, err := modulePorts(toks, dut)
	if err != nil {
		return "", nil, nil, err
	}
	for _, p := range ports {
		switch p.Direction {
		case "input":
			in = append(in, p)
		case "output":
			out = append(out, p)
		default:
			return "", nil, nil, fmt.Errorf("%w: port %s is %s; traces support input and output ports", ErrParse, p.Name, p.Direction)
		}
	}
	if len(out) == 0 {
		return "", nil, nil, fmt.Errorf("%w: module %s has no outputs to compare", ErrParse, dut)
	}
	units, _ := designUnits(toks) // modulePorts succeeded, so this does
	for _, u := range units {
		if u.Name == dut {
			pos := toks[u.End].Pos
			return ref[:pos] + recorderText(in, out, openInInitial) + ref[pos:], in, out, nil
		}
	}
	return "", nil, nil, fmt.Errorf("%w: no module %s", ErrParse, dut)
}

// withSampler inserts, into the harness module holding the verdict
// statement at offset at, a monitor of the harness's sample counter expr
// that logs every instant at which the harness takes a sample. ok is false
// when the module's end cannot be found; the caller then samples at input
// changes.
func withSampler(harness string, at int, expr string, openInInitial bool) (string, bool) {
	toks, err := lexVerilog(harness, lexOptions{skipDefines: true})
	if err != nil {
		return harness, false
	}
	for _, t := range toks {
		if t.Pos > at && t.isKeyword("endmodule") {
			open := "  integer crucible_sfd = $fopen(\"" + samplesFile + "\", \"w\");\n"
			if openInInitial {
				open = "  integer crucible_sfd;\n  initial crucible_sfd = $fopen(\"" + samplesFile + "\", \"w\");\n"
			}
			// Samples are written run-length encoded (r records, trace.go):
			// a harness samples at every clock edge, so nearly every sample
			// extends a run of equal spacing, and the one $fwrite (a VPI
			// call costing several times the arithmetic) is paid once per
			// run instead of once per sample.
			s := "\n  // ---- crucible sample monitor (trusted run only) ----\n" + open +
				"  real crucible_s_now, crucible_s_last, crucible_s_t0, crucible_s_d;\n  integer crucible_s_n = 0;\n" +
				"  always @(" + expr + ") begin\n" +
				"    crucible_s_now = $realtime * (1.0e15 / 1s);\n" +
				"    if (crucible_s_n == 0) begin crucible_s_t0 = crucible_s_now; crucible_s_n = 1; end\n" +
				"    else if (crucible_s_n == 1) begin crucible_s_d = crucible_s_now - crucible_s_t0; crucible_s_n = 2; end\n" +
				"    else if (crucible_s_now - crucible_s_last == crucible_s_d) crucible_s_n = crucible_s_n + 1;\n" +
				"    else begin\n" +
				"      $fwrite(crucible_sfd, \"r %0.0f %0.0f %0d\\n\", crucible_s_t0, crucible_s_d, crucible_s_n);\n" +
				"      crucible_s_t0 = crucible_s_now; crucible_s_n = 1;\n" +
				"    end\n" +
				"    crucible_s_last = crucible_s_now;\n" +
				"  end\n" +
				"  final if (crucible_s_n > 0) $fwrite(crucible_sfd, \"r %0.0f %0.0f %0d\\n\", crucible_s_t0, crucible_s_d, crucible_s_n);\n"
			return harness[:t.Pos] + s + harness[t.Pos:], true
		}
	}
	return harness, false
}

// Icarus prints "Time scale of (tb.dut) is 1ps / 1ps", Verilator the scope
// without parentheses.
var reTimescaleLine = regexp.MustCompile(`(?m)^` + timescaleMarker + `\s*\nTime scale of [^\n]* is (\d+ ?[munpf]?s) / (\d+ ?[munpf]?s)\s*$`)

// recorderTimescale reads the reference's effective `timescale (the one a
// candidate compiled in its place inherits) from the trusted run's stdout.
func recorderTimescale(stdout string) (string, error) {
	m := reTimescaleLine.FindStringSubmatch(stdout)
	if m == nil {
		return "", fmt.Errorf("%w: the trusted run did not report the reference's timescale", ErrParse)
	}
	return strings.ReplaceAll(m[1], " ", "") + "/" + strings.ReplaceAll(m[2], " ", ""), nil
}

// replayDriver generates the candidate's simulation root: registers for
// the inputs, the candidate instantiated by port name, a loop applying the
// recorded input states from the stimulus file at their times (a second
// state at the same time after #0, so the design's processes woken by the
// first, a clock edge, run before the next, the data the harness changed
// behind the edge, as in the trusted run), and a recorder of the
// candidate's settled outputs. The driver's module name carries a fresh
// random suffix, so candidate code cannot name it; the candidate is
// compiled after the trailing `timescale, the one it would have inherited
// under the harness.
//
// With poll (Verilator) the outputs are not recorded by an always block
// but strobed after every stimulus state and 1 fs before every sample
// instant (probe lines in the stimulus file, kind 2): the value settled
// 1 fs before an instant is the value just before it, which is what
// compareTraces reads, so an output that changes between stimulus states
// (a candidate with its own delays) is seen where it is compared.
func replayDriver(rt *refTrace, dut, timescale, suffix string, poll bool) (top, driver, stimulus string) {
	return replayDriverN(rt, []string{dut}, []string{replayFile}, timescale, suffix, poll)
}

// replayDriverN is replayDriver for several designs side by side: duts[k]
// is instantiated as crucible_dut<k>, driven by the same input registers,
// and its outputs are recorded into files[k] in the format of one replay.
// The harness-strength audit uses it for its own candidates (strength_batch.go);
// a candidate under judgment always runs alone.
func replayDriverN(rt *refTrace, duts, files []string, timescale, suffix string, poll bool) (top, driver, stimulus string) {
	top = "crucible_replay_" + suffix
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	decl := func(kind string, width int, name string) {
		if width == 1 {
			w("  %s %s;", kind, name)
		} else {
			w("  %s [%d:0] %s;", kind, width-1, name)
		}
	}
	w("`timescale 1fs/1fs")
	w("module %s;", top)
	var inConns, ins []string
	total := 0
	for i, p := range rt.In {
		n := fmt.Sprintf("crucible_i%d", i)
		decl("reg", rt.InWidths[i], n)
		inConns = append(inConns, fmt.Sprintf(".%s(%s)", vIdent(p.Name), n))
		ins = append(ins, n)
		total += rt.InWidths[i]
	}
	outs := make([][]string, len(duts)) // outs[k]: the output wires of dut k
	for k, dut := range duts {
		conns := append([]string(nil), inConns...)
		for i, p := range rt.Out {
			n := fmt.Sprintf("crucible_o%d_%d", k, i)
			decl("wire", rt.OutWidths[i], n)
			conns = append(conns, fmt.Sprintf(".%s(%s)", vIdent(p.Name), n))
			outs[k] = append(outs[k], n)
		}
		w("  %s crucible_dut%d (%s);", vIdent(dut), k, strings.Join(conns, ", "))
		w("  integer crucible_fd%d;", k)
	}
	w("  integer crucible_sfd, crucible_k, crucible_nb;")
	w("  reg [63:0] crucible_dt;")
	if total > 0 {
		decl("reg", total, "crucible_v")
	} else if poll {
		decl("reg", 1, "crucible_v") // probe lines of a design without inputs carry one 0
	}
	// Outputs are recorded packed (trace.go): one concatenated value per
	// record, split by the widths the driver declared.
	var ow []string
	for _, wd := range rt.OutWidths {
		ow = append(ow, fmt.Sprint(wd))
	}
	vfmt := "u %0d %b"
	totalOut := 0
	for _, wd := range rt.OutWidths {
		totalOut += wd
	}
	cat := func(k int) string { return fmt.Sprintf("crucible_ocat%d", k) }
	for k := range duts { // $fstrobe takes plain signals only
		w("  wire [%d:0] crucible_ocat%d = {%s};", totalOut-1, k, strings.Join(outs[k], ", "))
	}
	each := func(format string, a func(k int) []any) {
		for k := range duts {
			w(format, a(k)...)
		}
	}
	badStimulus := func() {
		w("      if ($fscanf(crucible_sfd, \"%%d %%d %%b\\n\", crucible_dt, crucible_nb, crucible_v) != 3) begin")
		each("        $fwrite(crucible_fd%d, \"bad stimulus\\n\");", func(k int) []any { return []any{k} })
		w("        $finish;")
		w("      end")
	}
	w("  time crucible_now;")
	w("  initial begin")
	each("    crucible_fd%d = $fopen(%q, \"w\");", func(k int) []any { return []any{k, files[k]} })
	each("    $fwrite(crucible_fd%d, %q);", func(k int) []any { return []any{k, "w o " + strings.Join(ow, " ") + "\n"} })
	each("    $fstrobe(crucible_fd%d, %q, %s);", func(k int) []any { return []any{k, "u 0 %b", cat(k)} })
	var st strings.Builder
	last := int64(0)
	if poll {
		events := pollSchedule(rt)
		w("    crucible_sfd = $fopen(%q, \"r\");", stimulusFile)
		w("    for (crucible_k = 0; crucible_k < %d; crucible_k = crucible_k + 1) begin", len(events))
		badStimulus()
		w("      if (crucible_dt != 0) #(crucible_dt); else if (crucible_nb != 2) #0;")
		if total > 0 {
			w("      if (crucible_nb == 1) {%s} <= crucible_v;", strings.Join(ins, ", "))
			w("      else if (crucible_nb == 0) {%s} = crucible_v;", strings.Join(ins, ", "))
		}
		w("      crucible_now = $time;")
		each("      $fstrobe(crucible_fd%d, %q, crucible_now, %s);", func(k int) []any { return []any{k, vfmt, cat(k)} })
		w("    end")
		for _, e := range events {
			v := strings.Join(e.Vals, "")
			if total == 0 {
				v = "0"
			}
			fmt.Fprintf(&st, "%d %d %s\n", e.T-last, e.Phase, v)
			last = e.T
		}
	} else if total > 0 {
		w("    crucible_sfd = $fopen(%q, \"r\");", stimulusFile)
		w("    for (crucible_k = 0; crucible_k < %d; crucible_k = crucible_k + 1) begin", len(rt.States))
		badStimulus()
		w("      if (crucible_dt == 0) #0; else #(crucible_dt);")
		w("      if (crucible_nb) {%s} <= crucible_v;", strings.Join(ins, ", "))
		w("      else {%s} = crucible_v;", strings.Join(ins, ", "))
		w("    end")
		// A phase-1 state (stimulus updated behind an edge, in the NBA
		// region) is applied non-blocking after #0, so it lands in the same
		// NBA region, behind the design's own updates from the edge.
		for _, s := range rt.States {
			fmt.Fprintf(&st, "%d %d %s\n", s.T-last, s.Phase, strings.Join(s.Vals, ""))
			last = s.T
		}
	}
	w("    #%d;", rt.End-last)
	each("    $fwrite(crucible_fd%d, \"e %%0d\\n\", $time);", func(k int) []any { return []any{k} })
	each("    $fclose(crucible_fd%d);", func(k int) []any { return []any{k} })
	w("    $finish;")
	w("  end")
	if !poll {
		for k := range duts {
			w("  always @(%s) begin", strings.Join(outs[k], " or "))
			w("    crucible_now = $time;")
			w("    $fstrobe(crucible_fd%d, %q, crucible_now, %s);", k, vfmt, cat(k))
			w("  end")
		}
	}
	w("endmodule")
	w("`timescale %s", timescale)
	return top, b.String(), st.String()
}

// pollSchedule merges the stimulus states with probe events (Phase 2) 1 fs
// before every sample instant, in time order (a probe after the states of
// its time). A probe carries the input values in force, so every line of
// the stimulus file has the same shape; the driver assigns nothing for it.
func pollSchedule(rt *refTrace) []traceRec {
	var zero []string
	for _, w := range rt.InWidths {
		zero = append(zero, strings.Repeat("x", w))
	}
	out := make([]traceRec, 0, len(rt.States)+len(rt.Samples))
	cur := zero
	i := 0
	for _, s := range rt.Samples {
		p := s - 1
		if p < 0 {
			continue
		}
		for ; i < len(rt.States) && rt.States[i].T <= p; i++ {
			out = append(out, rt.States[i])
			cur = rt.States[i].Vals
		}
		out = append(out, traceRec{T: p, Phase: 2, Vals: cur})
	}
	return append(out, rt.States[i:]...)
}
