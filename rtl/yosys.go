package rtl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/sandbox"
)

// procPasses are Yosys's proc sub-passes without proc_dlatch: Yosys 0.23's
// proc_dlatch rejects always_comb FSMs with "Latch inferred" although
// Icarus accepts them, and latches don't matter for reading an interface.
const procPasses = "proc_clean; proc_rmdead; proc_prune; proc_init; proc_arst; proc_rom; proc_mux; proc_dff; proc_memwr; proc_clean"

// runYosys runs a Yosys script on src in a fresh directory and returns the
// directory's output file (if any) and the log.
func runYosys(ctx context.Context, src, script, outName string, lim Limits) ([]byte, string, error) {
	if probeTool("yosys").Err != "" {
		return nil, "", fmt.Errorf("%w: yosys not found on PATH", ErrToolchain)
	}
	dir, err := os.MkdirTemp("", "crucible-yosys-*")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "design.sv"), []byte(src), 0o600); err != nil {
		return nil, "", err
	}
	argv := []string{"yosys", "-q", "-l", "yosys.log", "-p", script}
	lim.CPUSeconds = lim.CompileCPUSeconds
	if _, cause := isolationUnavailable(); cause != "" {
		return nil, "", fmt.Errorf("%w: %s", ErrToolchain, cause)
	}
	res, err := runLimited(ctx, dir, lim, lim.CompileTimeout, argv, nil)
	if err != nil {
		return nil, "", err
	}
	// Files in the job directory are read without following links Yosys
	// (or a design) could have left there.
	logb, _ := sandbox.ReadFile(dir, "yosys.log", lim.OutputKillBytes)
	log := string(logb) + res.Stderr.String()
	if st, cause := classifyProcess(res, "yosys", lim, lim.CompileTimeout); st != "" {
		return nil, log, fmt.Errorf("%w: %s", ErrParse, cause)
	}
	if res.ExitCode != 0 {
		return nil, log, fmt.Errorf("%w: yosys: %s", ErrParse, yosysError(log))
	}
	var out []byte
	if outName != "" {
		if out, err = sandbox.ReadFile(dir, outName, lim.FileSizeBytes); err != nil {
			return nil, log, fmt.Errorf("%w: yosys wrote no %s: %v", ErrParse, outName, err)
		}
	}
	return out, log, nil
}

func yosysError(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "ERROR") {
			return strings.TrimSpace(l)
		}
	}
	return firstErrorLine(log)
}

var reSafeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// ExtractInterface reads src with Yosys (read_verilog -sv; hierarchy -top;
// the proc_* passes; opt_dff; write_json) and returns top's ports in
// declaration order with direction and width, plus the clock and reset it
// can prove from flip-flop cells: an $adff* ARST pin is an async reset, an
// $sdff* SRST pin (a reset-named port) a sync one; polarity comes from the
// cell (and any inverter in front of it). A design Yosys cannot parse is
// an ErrParse error quoting Yosys.
func ExtractInterface(ctx context.Context, src, top string) (engine.Interface, error) {
	if !reSafeName.MatchString(top) {
		return engine.Interface{}, fmt.Errorf("%w: top module name %q", ErrInput, top)
	}
	script := fmt.Sprintf("read_verilog -sv design.sv; hierarchy -check -top %s; %s; opt_expr; opt_clean; opt_dff; opt_clean; write_json out.json", top, procPasses)
	out, _, err := runYosys(ctx, src, script, "out.json", DefaultConfig().Limits)
	if err != nil {
		return engine.Interface{}, fmt.Errorf("interface of %s: %w", top, err)
	}
	return interfaceFromJSON(out, top)
}

type yosysModule struct {
	Ports json.RawMessage `json:"ports"`
	Cells map[string]struct {
		Type        string                       `json:"type"`
		Parameters  map[string]json.RawMessage   `json:"parameters"`
		Connections map[string][]json.RawMessage `json:"connections"`
	} `json:"cells"`
}

type yosysPort struct {
	Direction string            `json:"direction"`
	Bits      []json.RawMessage `json:"bits"`
	Signed    int               `json:"signed"`
}

var reResetName = regexp.MustCompile(`(?i)^a?(reset|rst|clr|clear)(_?n|_b)?$|^(a?reset|a?rst)_?(n|ni|b)?$|^(s|a)rst(_?n)?$`)
var reClockName = regexp.MustCompile(`(?i)^(clk|clock|clk_i|i_clk)$`)

func interfaceFromJSON(data []byte, top string) (engine.Interface, error) {
	var doc struct {
		Modules map[string]yosysModule `json:"modules"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return engine.Interface{}, fmt.Errorf("%w: yosys json: %v", ErrParse, err)
	}
	mod, ok := doc.Modules[top]
	if !ok {
		return engine.Interface{}, fmt.Errorf("%w: module %s not in yosys output", ErrParse, top)
	}
	names, ports, err := orderedPorts(mod.Ports)
	if err != nil {
		return engine.Interface{}, err
	}
	iface := engine.Interface{Top: top}
	bitPort := map[string]string{} // single-bit input ports by bit id
	for _, n := range names {
		p := ports[n]
		iface.Ports = append(iface.Ports, engine.Port{Name: n, Direction: p.Direction, Width: int32(len(p.Bits)), Signed: p.Signed != 0})
		if p.Direction == "input" && len(p.Bits) == 1 {
			bitPort[string(p.Bits[0])] = n
		}
	}
	// Inverters in front of reset pins flip polarity.
	inverted := map[string]string{} // output bit -> input bit
	for _, c := range mod.Cells {
		if (c.Type == "$not" || c.Type == "$logic_not") && len(c.Connections["A"]) == 1 && len(c.Connections["Y"]) >= 1 {
			inverted[string(c.Connections["Y"][0])] = string(c.Connections["A"][0])
		}
	}
	clocks := map[string]int{}
	type rst struct {
		kind    string
		active1 bool
	}
	resets := map[string]rst{}
	for _, c := range mod.Cells {
		if !strings.HasPrefix(c.Type, "$") || !strings.Contains(c.Type, "dff") {
			continue
		}
		if clk := c.Connections["CLK"]; len(clk) == 1 {
			if p, ok := bitPort[string(clk[0])]; ok {
				clocks[p]++
			}
		}
		for pin, kind := range map[string]string{"ARST": "async", "SRST": "sync"} {
			bits := c.Connections[pin]
			if len(bits) != 1 {
				continue
			}
			active1 := paramBit(c.Parameters[pin+"_POLARITY"])
			b := string(bits[0])
			if src, ok := inverted[b]; ok {
				b, active1 = src, !active1
			}
			p, ok := bitPort[b]
			if !ok || (kind == "sync" && !reResetName.MatchString(p)) {
				continue
			}
			if prev, seen := resets[p]; !seen || prev.kind == "sync" {
				resets[p] = rst{kind, active1}
			}
		}
	}
	iface.Clock = pickMax(clocks)
	if iface.Clock == "" {
		for _, n := range names {
			if ports[n].Direction == "input" && len(ports[n].Bits) == 1 && reClockName.MatchString(n) {
				iface.Clock = n
			}
		}
	}
	var rnames []string
	for n := range resets {
		rnames = append(rnames, n)
	}
	sort.Strings(rnames)
	if len(rnames) > 0 {
		r := rnames[0]
		for _, n := range rnames {
			if reResetName.MatchString(n) {
				r = n
				break
			}
		}
		iface.Reset, iface.ResetKind = r, resets[r].kind
		iface.ResetPolarity = "low"
		if resets[r].active1 {
			iface.ResetPolarity = "high"
		}
	} else if iface.Clock != "" {
		// No flip-flop proves a reset (e.g. the reset only steers next-state
		// logic); fall back to a reset-named 1-bit input, polarity by name.
		for _, n := range names {
			if ports[n].Direction == "input" && len(ports[n].Bits) == 1 && reResetName.MatchString(n) {
				iface.Reset, iface.ResetKind, iface.ResetPolarity = n, "sync", "high"
				if strings.HasSuffix(strings.ToLower(n), "n") || strings.HasSuffix(strings.ToLower(n), "_b") {
					iface.ResetPolarity = "low"
				}
				break
			}
		}
	}
	return iface, nil
}

// paramBit reads a Yosys parameter (a binary string or a number) as a bool.
func paramBit(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.HasSuffix(s, "1")
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n != 0
	}
	return true
}

func pickMax(m map[string]int) string {
	best, bestN := "", 0
	for k, n := range m {
		if n > bestN || n == bestN && k < best {
			best, bestN = k, n
		}
	}
	return best
}

// orderedPorts decodes the "ports" object keeping declaration order (a Go
// map would lose it).
func orderedPorts(raw json.RawMessage) ([]string, map[string]yosysPort, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("%w: yosys json: ports is not an object", ErrParse)
	}
	var names []string
	ports := map[string]yosysPort{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: yosys json ports: %v", ErrParse, err)
		}
		name, _ := t.(string)
		var p yosysPort
		if err := dec.Decode(&p); err != nil {
			return nil, nil, fmt.Errorf("%w: yosys json port %s: %v", ErrParse, name, err)
		}
		names = append(names, name)
		ports[name] = p
	}
	return names, ports, nil
}

// SynthReport is the optional synthesis gate's finding.
type SynthReport struct {
	Cells   int64
	Latches []string // signals Yosys inferred latches for
	Loops   []string // combinational loops `check` found
}

var (
	reCells = regexp.MustCompile(`Number of cells:\s+(\d+)`)
	reLatch = regexp.MustCompile(`Latch inferred for signal ` + "`" + `([^']+)'`)
	reLoop  = regexp.MustCompile(`found logic loop[^\n]*`)
)

// Synthesize runs Yosys `synth` on src and reports the cell count of top
// plus inferred latches and combinational loops (from `check`).
func Synthesize(ctx context.Context, src, top string, lim Limits) (SynthReport, error) {
	if !reSafeName.MatchString(top) {
		return SynthReport{}, fmt.Errorf("%w: top module name %q", ErrInput, top)
	}
	script := fmt.Sprintf("read_verilog -sv design.sv; hierarchy -check -top %s; synth -flatten -top %s; check; tee -o stat.txt stat", top, top)
	stat, log, err := runYosys(ctx, src, script, "stat.txt", lim)
	if err != nil {
		return SynthReport{}, fmt.Errorf("synth of %s: %w", top, err)
	}
	var rep SynthReport
	ms := reCells.FindAllStringSubmatch(string(stat), -1)
	if len(ms) == 0 {
		return rep, fmt.Errorf("%w: synth of %s: no cell count in stat output", ErrParse, top)
	}
	rep.Cells, _ = strconv.ParseInt(ms[len(ms)-1][1], 10, 64)
	seen := map[string]bool{}
	for _, m := range reLatch.FindAllStringSubmatch(log, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			rep.Latches = append(rep.Latches, m[1])
		}
	}
	rep.Loops = reLoop.FindAllString(log, -1)
	return rep, nil
}
