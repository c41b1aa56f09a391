package rtl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// strengthInner names the reference inside a stuck-at/inverted wrapper; a
// candidate may define any module but the harness's, and this name is
// neither RefModule nor the DUT.
const strengthInner = "crucible_strength_inner"

// TrivialCandidates are the audit's trivial candidates for a task whose
// reference, in candidate form, is ref (top module dut) with interface
// iface: empty, all_z, all_x, const_0, const_1 (all ones), and for every
// output o stuck0:o, stuck1:o and invert:o (the reference with o replaced).
func TrivialCandidates(ref, dut string, iface engine.Interface) ([]StrengthCandidate, error) {
	if !reSafeName.MatchString(dut) {
		return nil, fmt.Errorf("%w: DUT name %q", ErrInput, dut)
	}
	var outs []engine.Port
	for _, p := range iface.Ports {
		if !reSafeName.MatchString(p.Name) {
			return nil, fmt.Errorf("%w: port name %q is not a plain identifier", ErrInput, p.Name)
		}
		if p.Direction == "output" {
			outs = append(outs, p)
		}
	}
	if len(outs) == 0 {
		return nil, fmt.Errorf("%w: the interface has no outputs", ErrInput)
	}
	header := moduleHeader(dut, iface.Ports)
	constant := func(bit string) string {
		var b strings.Builder
		b.WriteString(header)
		for _, p := range outs {
			fmt.Fprintf(&b, "  assign %s = {%d{1'b%s}};\n", p.Name, width(p), bit)
		}
		b.WriteString("endmodule\n")
		return b.String()
	}
	out := []StrengthCandidate{
		{Name: StrengthTrivialPrefix + "empty", Code: header + "endmodule\n"},
		{Name: StrengthTrivialPrefix + "all_z", Code: constant("z")},
		{Name: StrengthTrivialPrefix + "all_x", Code: constant("x")},
		{Name: StrengthTrivialPrefix + "const_0", Code: constant("0")},
		{Name: StrengthTrivialPrefix + "const_1", Code: constant("1")},
	}
	inner, err := RenameModule(ref, dut, strengthInner)
	if err != nil {
		return nil, err
	}
	for _, p := range outs {
		for _, k := range []struct{ name, expr string }{
			{"stuck0", fmt.Sprintf("{%d{1'b0}}", width(p))},
			{"stuck1", fmt.Sprintf("{%d{1'b1}}", width(p))},
			{"invert", "~crucible_w_" + p.Name},
		} {
			out = append(out, StrengthCandidate{Name: StrengthTrivialPrefix + k.name + ":" + p.Name,
				Code: inner + "\n" + wrapOutput(dut, iface.Ports, p.Name, k.expr)})
		}
	}
	return out, nil
}

func width(p engine.Port) int32 { return max(p.Width, 1) }

func portDecl(p engine.Port) string {
	dir := p.Direction
	if dir == "" {
		dir = "input"
	}
	if p.Signed {
		dir += " signed"
	}
	if width(p) == 1 {
		return dir + " " + p.Name
	}
	return fmt.Sprintf("%s [%d:0] %s", dir, width(p)-1, p.Name)
}

func moduleHeader(name string, ports []engine.Port) string {
	var ds []string
	for _, p := range ports {
		ds = append(ds, "  "+portDecl(p))
	}
	return fmt.Sprintf("module %s (\n%s\n);\n", name, strings.Join(ds, ",\n"))
}

// wrapOutput is module dut instantiating the reference (renamed
// strengthInner) with every port connected, and output target driven by
// expr instead (crucible_w_<target> is the reference's value of it).
func wrapOutput(dut string, ports []engine.Port, target, expr string) string {
	var b strings.Builder
	b.WriteString(moduleHeader(dut, ports))
	var conns []string
	for _, p := range ports {
		if p.Direction != "output" {
			conns = append(conns, fmt.Sprintf(".%s(%s)", p.Name, p.Name))
			continue
		}
		w := "crucible_w_" + p.Name
		sign := ""
		if p.Signed {
			sign = " signed"
		}
		if width(p) == 1 {
			fmt.Fprintf(&b, "  wire%s %s;\n", sign, w)
		} else {
			fmt.Fprintf(&b, "  wire%s [%d:0] %s;\n", sign, width(p)-1, w)
		}
		conns = append(conns, fmt.Sprintf(".%s(%s)", p.Name, w))
		if p.Name == target {
			fmt.Fprintf(&b, "  assign %s = %s;\n", p.Name, expr)
		} else {
			fmt.Fprintf(&b, "  assign %s = %s;\n", p.Name, w)
		}
	}
	fmt.Fprintf(&b, "  %s crucible_u (%s);\nendmodule\n", strengthInner, strings.Join(conns, ", "))
	return b.String()
}

// strengthMutants are the netlist mutants and those of the registered
// sources, up to Config.StrengthMutants of each kind; notes say what could
// not be generated, nothing that the design has nothing to mutate at all.
func (v *Verifier) strengthMutants(ctx context.Context, item engine.Item, ref, dut string, iface engine.Interface) (_ []StrengthCandidate, notes []string, nothing bool) {
	n := v.cfg.StrengthMutants
	if n <= 0 {
		return nil, nil, false
	}
	var out []StrengthCandidate
	nm, err := NetlistMutants(ctx, ref, dut, n, v.cfg.Limits)
	if errors.Is(err, errNothingToMutate) {
		nothing = true
	} else if err != nil {
		notes = append(notes, "netlist mutants: "+truncate(err.Error(), 300))
	}
	out = append(out, nm...)
	names, fns := registeredSources()
	measured := item
	measured.Interface = iface
	for k, fn := range fns {
		ms := fn(measured, ref, dut, n)
		if len(ms) == 0 {
			notes = append(notes, names[k]+" mutants: none apply")
		}
		for _, m := range ms {
			out = append(out, StrengthCandidate{Name: StrengthMutantPrefix + m.Name, Code: m.Code})
		}
	}
	return out, notes, nothing && len(out) == 0
}

// errNothingToMutate: the netlist has no cell to mutate (a design that
// only drives constants); no mutant can exist, which is not a weakness.
var errNothingToMutate = errors.New("the netlist has no cell to mutate")

// NetlistMutants derives up to n MCY-style mutants of ref (top module dut):
// Yosys elaborates it to a flat coarse-grain netlist (proc, flatten, opt,
// memory), `mutate -list n -seed 1` picks cell port bits spread over the
// design and a mode for each (inv, const0, const1, cnot0, cnot1), and each
// mutation is applied to the netlist and written back as Verilog with its
// private names enumerated (no escaped identifiers). Names are
// "mutant:netlist_<k>".
func NetlistMutants(ctx context.Context, ref, dut string, n int, lim Limits) ([]StrengthCandidate, error) {
	if !reSafeName.MatchString(dut) {
		return nil, fmt.Errorf("%w: top module name %q", ErrInput, dut)
	}
	if n <= 0 {
		return nil, nil
	}
	prep := fmt.Sprintf("read_verilog -sv design.sv; hierarchy -check -top %s; %s; flatten; opt; memory; opt_clean", dut, procPasses)
	files, err := yosysFiles(ctx, ref, prep+fmt.Sprintf("; mutate -list %d -seed 1 -o list.ys", n), []string{"list.ys"}, lim)
	if err != nil {
		return nil, err
	}
	var cmds []string
	for _, l := range strings.Split(string(files["list.ys"]), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "mutate ") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) == 0 {
		return nil, errNothingToMutate
	}
	var script strings.Builder
	var names []string
	script.WriteString(prep + "; design -save crucible_base")
	for k, c := range cmds {
		fmt.Fprintf(&script, "; design -load crucible_base; %s; opt_clean; rename -enumerate; write_verilog -noattr m%d.v", c, k)
		names = append(names, fmt.Sprintf("m%d.v", k))
	}
	if files, err = yosysFiles(ctx, ref, script.String(), names, lim); err != nil {
		return nil, err
	}
	var out []StrengthCandidate
	for k := range cmds {
		if b, ok := files[fmt.Sprintf("m%d.v", k)]; ok {
			out = append(out, StrengthCandidate{Name: fmt.Sprintf("%snetlist_%d", StrengthMutantPrefix, k), Code: string(b)})
		}
	}
	return out, nil
}

// yosysFiles runs a Yosys script on src (as design.sv) in a fresh
// directory, sandboxed under the compile limits like runYosys, and returns
// the named files it wrote (a missing one is left out).
func yosysFiles(ctx context.Context, src, script string, names []string, lim Limits) (map[string][]byte, error) {
	if probeTool("yosys").Err != "" {
		return nil, fmt.Errorf("%w: yosys not found on PATH", ErrToolchain)
	}
	if _, cause := isolationUnavailable(); cause != "" {
		return nil, fmt.Errorf("%w: %s", ErrToolchain, cause)
	}
	dir, err := os.MkdirTemp("", "crucible-yosys-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "design.sv"), []byte(src), 0o600); err != nil {
		return nil, err
	}
	lim.CPUSeconds = lim.CompileCPUSeconds
	res, err := runLimited(ctx, dir, lim, lim.CompileTimeout, []string{"yosys", "-q", "-l", "yosys.log", "-p", script}, nil)
	if err != nil {
		return nil, err
	}
	logb, _ := sandbox.ReadFile(dir, "yosys.log", lim.OutputKillBytes)
	log := string(logb) + res.Stderr.String()
	if st, cause := classifyProcess(res, "yosys", lim, lim.CompileTimeout); st != "" {
		return nil, fmt.Errorf("%w: %s", ErrParse, cause)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%w: yosys: %s", ErrParse, yosysError(log))
	}
	files := map[string][]byte{}
	for _, n := range names {
		if b, err := sandbox.ReadFile(dir, n, lim.FileSizeBytes); err == nil {
			files[n] = b
		}
	}
	return files, nil
}
