package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
	"github.com/crucible-data/crucible/verify"
)

// VerifyRTLOptions are `crucible verify rtl`'s inputs.
type VerifyRTLOptions struct {
	Items      string // item shards/JSONL, or a VerilogEval JSONL with Preset verilog-eval
	Candidates string // JSONL/Parquet rows {item_id, candidate_id, code}
	Out        string
	Preset     string // items | verilog-eval
	SelfCheck  bool   // submit each item's reference as its candidate
	Force      bool   // judge even when the manifest in Out is current
	Config     rtl.StageConfig
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

// verifyRTLFlags keep the names and help texts `verify rtl`'s flags had
// before they were derived from rtl.StageConfig.
var verifyRTLFlags = map[string]flagDoc{
	"strength_audit":    {Help: "audit each item's harness with trivial candidates and mutants first; passes on a weak harness are unjudged"},
	"simulator":         {Help: "icarus (4-state, trusted for pass) | verilator (2-state)"},
	"workers":           {Help: "concurrent simulator jobs (default: number of cores)"},
	"retries":           {Help: "retries of infrastructure failures (worker crash, disk full)"},
	"cpu_seconds":       {Help: "CPU-time ceiling: the reference's budget and the most any candidate gets"},
	"cpu_floor_seconds": {Name: "cpu-floor", Help: "the least CPU-time budget a candidate gets (seconds)"},
	"cpu_factor":        {Help: "a candidate's CPU budget is this many times its reference's CPU time (within floor and ceiling); spending it is a timeout"},
	"sim_timeout":       {Help: "wall-clock backstop per simulation (a starved run is retried, not failed)"},
	"trust_two_state":   {Help: "let a Verilator run issue pass verdicts"},
	"synth":             {Help: "add a Yosys synth cell count (and latch/loop findings) to passing candidates"},
	"cache_dir":         {Help: "persist reference self-check results per (task, toolchain) here"},
	"strength_mutants":  {Help: "mutants of each kind in the strength audit"},
}

const verifyRTLLong = `Judge RTL candidates with a pool of sandboxed simulators and write one
evidence row per (item, candidate).

Each item's verifier names its harness contract: differential (VerilogEval: tb
drives RefModule and TopModule and prints "Mismatches: N in M samples"),
self_checking (the testbench prints its configured pass marker) or completion
(a module body joined to the trusted header from the instruction). The harness's
verdict statement is rewritten to print a per-run secret; a candidate passes only
on that line, printed once as the harness's last word, with zero mismatches and
the sample count the reference produced. Candidates are screened first (file I/O,
$system, $finish, plusargs, hierarchical references into the harness, shadowed
harness modules, ` + "`include" + `): a screened candidate fails at stage static.

Every item's reference is first run as its own candidate under the same
toolchain; a reference that fails makes that item's candidates unjudged
(reference_self_check), never fail. Worker crashes and full disks are retried;
unresolved infrastructure failures are unjudged with their cause.

Every item's harness is first audited (cached per task and toolchain): trivial
candidates (empty, all Z/X, constant 0/1, each output stuck at 0/1 or inverted)
and mutants of the reference are judged like candidates. When any trivial
candidate passes, the harness is weak and that item's passes become unjudged
(weak_verifier). --strength-audit=false skips the audit.

--items: item shards (an ingest or stage output directory), item JSONL/Parquet,
or with --preset verilog-eval a VerilogEval JSONL ({id, prompt, ref, test}).
--candidates: JSONL or Parquet rows {item_id, candidate_id, code}, or a directory
of them. --self-check instead submits each item's reference (RefModule renamed
TopModule) as candidate "reference".

Writes evidence-*.parquet and manifest.json to --out and prints counts by status
and failure stage. Exit 0 when the run completed, whatever the verdicts.`

func newVerifyRTLCmd() *cobra.Command {
	o := VerifyRTLOptions{Writer: engine.DefaultWriterOptions(), Config: rtl.DefaultStageConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "rtl --items PATH (--candidates PATH | --self-check) --out DIR [--simulator icarus|verilator] [--workers N] [--preset verilog-eval]",
		Short: "Judge RTL candidates in sandboxed Icarus/Verilator workers; write evidence shards",
		Long:  verifyRTLLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runVerifyRTL(cmd.Context(), o)
		},
	}
	f := c.Flags()
	verifyIOFlags(c, &o.Items, &o.Candidates, &o.Out, &o.SelfCheck, &o.Force,
		"item shards directory, item JSONL/Parquet, or VerilogEval JSONL with --preset verilog-eval (required)")
	f.StringVar(&o.Preset, "preset", ingest.PresetItems, "layout of --items files: items|verilog-eval")
	sf = bindStageFlags(f, &o.Config, verifyRTLFlags)
	return c
}

func runVerifyRTL(ctx context.Context, o VerifyRTLOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	switch {
	case verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck) != nil:
		return verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck)
	case o.Preset != ingest.PresetItems && o.Preset != ingest.PresetVerilogEval:
		return fmt.Errorf("%w: --preset %q (want items or verilog-eval)", errUsage, o.Preset)
	}
	cfg, err := o.Config.VerifierConfig(func(p string) string { return p })
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	load := func(ctx context.Context) ([]engine.Item, []engine.Candidate, int64, error) {
		items, _, rejected, err := loadRTLItems(ctx, o.Items, o.Preset)
		if err != nil {
			return nil, nil, 0, err
		}
		// Kernel items belong to `crucible verify kernel`; leave them out
		// rather than report them as unjudged RTL tasks.
		rtlItems := items[:0:0]
		for _, it := range items {
			if it.Domain == engine.DomainRTL {
				rtlItems = append(rtlItems, it)
			}
		}
		if skipped := len(items) - len(rtlItems); skipped > 0 {
			fmt.Fprintf(o.Stdout, "skipped %d non-RTL items (verify them with `crucible verify kernel`)\n", skipped)
		}
		cands, err := verifyCandidates(o.SelfCheck, o.Candidates, rtlItems)
		return rtlItems, cands, rejected, err
	}
	judges := func(items []engine.Item) (*engine.Judges, error) {
		return verify.JudgesFor(items, cfg.Workers, cfg, kernels.DefaultConfig(), nil)
	}
	header := func(evs []engine.Evidence, items []engine.Item, _ *engine.Judges, elapsed time.Duration) string {
		return fmt.Sprintf("verified %d candidates for %d items in %.1fs (%s, %d workers)",
			len(evs), len(items), elapsed.Seconds(), cfg.Simulator, cfg.Workers)
	}
	return runEvidenceCommand(ctx, o.Stdout, evidenceCommand{name: "verify-rtl", typ: "verify_rtl",
		config: verifyRTLConfig{o.Config, o.Preset, o.SelfCheck}, items: o.Items, candidates: o.Candidates,
		out: o.Out, force: o.Force, writer: o.Writer, load: load, judges: judges, header: header})
}

// verifyRTLConfig is what decides `verify rtl`'s verdicts: its manifest's
// config hash.
type verifyRTLConfig struct {
	rtl.StageConfig `yaml:",inline"`
	Preset          string `yaml:"preset"`
	SelfCheck       bool   `yaml:"self_check"`
}

// loadRTLItems reads --items: a stage/ingest output directory's item
// shards as they are, anything else through ingest (validating each row;
// rejected rows are counted and their candidates end payload_corrupt).
func loadRTLItems(ctx context.Context, path, preset string) ([]engine.Item, []string, int64, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, nil, 0, fmt.Errorf("%w: --items: %v", engine.ErrInput, err)
	} else if st.IsDir() && preset == ingest.PresetItems {
		if _, err := engine.LoadStageOutput(path); err == nil {
			paths, err := shardInputs([]string{path}, "items")
			if err != nil {
				return nil, nil, 0, err
			}
			items, err := engine.ReadAll[engine.Item](paths...)
			return items, paths, 0, err
		}
	}
	var items []engine.Item
	var rejected int64
	g, err := ingest.New(preset, ingest.Sink{
		Item:   func(it engine.Item) error { items = append(items, it); return nil },
		Reject: func(r engine.Rejection) error { rejected++; return nil },
	})
	if err != nil {
		return nil, nil, 0, err
	}
	if err := g.IngestPaths(ctx, []string{path}); err != nil {
		return nil, nil, 0, err
	}
	return items, []string{path}, rejected, nil
}
