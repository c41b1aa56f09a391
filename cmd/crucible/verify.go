package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/rtl"
	"github.com/crucible-data/crucible/verify"
)

// VerifyOptions are `crucible verify`'s inputs: items of any domain, each
// judged by its domain's judge (one fan-out over engine.Judges).
type VerifyOptions struct {
	Items      string // item shards/JSONL/Parquet, kernel seed directories, or VerilogEval JSONL with Preset verilog-eval
	Candidates string // JSONL/Parquet rows {item_id, candidate_id, code}
	Out        string
	Preset     string // items | verilog-eval
	SelfCheck  bool   // submit each item's reference (in candidate form) as its candidate
	Workers    int    // concurrent judge calls and each judge's workers; 0: number of cores
	Force      bool   // judge even when the manifest in Out is current
	Config     verifyConfig
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

// verifyConfig is every judge's config, the source of `verify`'s judge
// flags and, with the command's own settings, its manifest's config hash.
type verifyConfig struct {
	RTL    rtl.StageConfig     `yaml:"rtl"`
	Kernel kernels.StageConfig `yaml:"kernel"`
	// Set by the command, not by flags of their own:
	Preset    string `yaml:"preset"`
	SelfCheck bool   `yaml:"self_check"`
	Workers   int    `yaml:"workers"`
}

// verifyFlags keep the names and help texts `verify`'s judge flags had
// before they were derived; the judges' other keys get rtl-* and kernel-*
// flags.
var verifyFlags = map[string]flagDoc{
	"rtl.simulator":        {Name: "simulator", Help: "RTL: icarus (4-state, trusted for pass) | verilator (2-state)"},
	"rtl.trust_two_state":  {Name: "trust-two-state", Help: "RTL: let a Verilator run issue pass verdicts"},
	"rtl.strength_audit":   {Name: "strength-audit", Help: "RTL: audit each item's harness first; passes on a weak harness are unjudged"},
	"rtl.cache_dir":        {Name: "cache-dir", Help: "RTL: persist reference self-checks and strength audits per (task, toolchain) here"},
	"kernel.backend":       {Name: "backend", Help: "kernels: auto | cpu | cuda | triton"},
	"rtl.workers":          {Skip: true}, // --workers sets both
	"kernel.workers":       {Skip: true},
	"kernel.drop_unjudged": {Skip: true}, // the stage's item filter; the command writes evidence only
	"preset":               {Skip: true},
	"self_check":           {Skip: true},
	"workers":              {Skip: true},
}

const verifyLong = `Judge candidates of any domain and write one evidence row per (item, candidate).

Each candidate goes to the judge of its item's domain: RTL items to the RTL
verifier (sandboxed Icarus/Verilator, port-trace comparison against the
reference, harness-strength audit; see 'crucible verify rtl --help'), kernel
items to the kernel verifier (cpu/cuda/triton backends in their own processes,
timing and exploit gates; see 'crucible verify kernel --help'). Both hold to one
contract (engine.Judge): the same verdict rules (pass needs positive evidence,
infrastructure faults are unjudged, never fail), the same retry policy (only
worker crashes, full disks and device faults are retried), results in candidate
order. Items of a domain no judge handles get unjudged rows
(toolchain_unsupported); nothing is dropped.

'verify rtl' and 'verify kernel' remain, with every flag of their domain; this
command takes the flags both share and the main one of each.

--items: item shards (an ingest or stage output directory), item JSONL/Parquet,
kernel seed directories (task.json + reference.*), or with --preset verilog-eval
a VerilogEval JSONL. --candidates: JSONL or Parquet rows {item_id, candidate_id,
code}, or a directory of them. --self-check instead submits each item's
reference in candidate form as candidate "reference".

Writes evidence-*.parquet and manifest.json to --out and prints counts by
domain, status and failure stage. Exit 0 when the run completed, whatever the
verdicts.`

func newVerifyCmd() *cobra.Command {
	o := VerifyOptions{Writer: engine.DefaultWriterOptions(), Config: verifyConfig{RTL: rtl.DefaultStageConfig(), Kernel: kernels.DefaultStageConfig()}}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "verify --items PATH (--candidates PATH | --self-check) --out DIR [--workers N] [--simulator icarus|verilator] [--backend auto|cpu|cuda|triton]",
		Short: "Judge candidates of every domain (RTL, kernels) through one judge contract; write evidence shards",
		Long:  verifyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runVerify(cmd.Context(), o)
		},
	}
	f := c.Flags()
	verifyIOFlags(c, &o.Items, &o.Candidates, &o.Out, &o.SelfCheck, &o.Force,
		"item shards directory, item JSONL/Parquet, kernel seed directory, or VerilogEval JSONL with --preset verilog-eval (required)")
	f.StringVar(&o.Preset, "preset", ingest.PresetItems, "layout of --items files: items|verilog-eval")
	f.IntVar(&o.Workers, "workers", 0, "concurrent judge calls, and each judge's workers (default: number of cores)")
	sf = bindStageFlags(f, &o.Config, verifyFlags)
	for _, sub := range verifyCommands() {
		c.AddCommand(sub)
	}
	return c
}

func runVerify(ctx context.Context, o VerifyOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	switch {
	case verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck) != nil:
		return verifyArgs(o.Items, o.Out, o.Candidates, o.SelfCheck)
	case o.Preset != ingest.PresetItems && o.Preset != ingest.PresetVerilogEval:
		return fmt.Errorf("%w: --preset %q (want items or verilog-eval)", errUsage, o.Preset)
	case o.Workers < 0:
		return fmt.Errorf("%w: --workers %d (want >= 0)", errUsage, o.Workers)
	}
	cfg := o.Config
	cfg.Preset, cfg.SelfCheck, cfg.Workers = o.Preset, o.SelfCheck, o.Workers
	if o.Workers > 0 {
		cfg.RTL.Workers, cfg.Kernel.Workers = o.Workers, o.Workers
	}
	rc, err := cfg.RTL.VerifierConfig(func(p string) string { return p })
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	kc, err := cfg.Kernel.VerifierConfig()
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	load := func(ctx context.Context) ([]engine.Item, []engine.Candidate, int64, error) {
		var items []engine.Item
		var rejected int64
		var err error
		if o.Preset == ingest.PresetItems {
			items, _, rejected, err = loadKernelItems(ctx, o.Items) // seed dirs, else shards or ingest
		} else {
			items, _, rejected, err = loadRTLItems(ctx, o.Items, o.Preset)
		}
		if err != nil {
			return nil, nil, 0, err
		}
		cands, err := verifyCandidates(o.SelfCheck, o.Candidates, items)
		return items, cands, rejected, err
	}
	judges := func(items []engine.Item) (*engine.Judges, error) {
		return verify.JudgesFor(items, o.Workers, rc, kc, slog.Default())
	}
	count := func(evs []engine.Evidence, items []engine.Item, counts map[string]int64) {
		domainOf := domainsOf(items)
		for _, ev := range evs {
			counts["domain."+domainOf[ev.ItemID]+"."+ev.Status]++
		}
	}
	header := func(evs []engine.Evidence, items []engine.Item, js *engine.Judges, elapsed time.Duration) string {
		return fmt.Sprintf("verified %d candidates for %d items in %.1fs (judges: %s; %d concurrent)", len(evs),
			len(items), elapsed.Seconds(), strings.Join(js.Domains(), ", "), js.Workers())
	}
	return runEvidenceCommand(ctx, o.Stdout, evidenceCommand{name: "verify", typ: "verify", config: cfg, items: o.Items,
		candidates: o.Candidates, out: o.Out, force: o.Force, writer: o.Writer, load: load, judges: judges, count: count, header: header})
}

// verifyCandidates is --self-check's reference candidates (in the form a
// candidate takes: an RTL reference renamed to the candidate's top) or the
// rows of --candidates.
func verifyCandidates(selfCheck bool, path string, items []engine.Item) ([]engine.Candidate, error) {
	if !selfCheck {
		paths, err := shardInputs([]string{path}, "candidates")
		if err != nil {
			return nil, err
		}
		return engine.ReadAll[engine.Candidate](paths...)
	}
	cands := make([]engine.Candidate, 0, len(items))
	for _, it := range items {
		code := it.Reference
		if it.Domain == engine.DomainRTL {
			if c, err := rtl.ContractFor(it); err == nil {
				if rc, err := c.ReferenceCandidate(); err == nil {
					code = rc
				}
			}
		}
		// An item whose reference cannot be put in candidate form still
		// gets its row: its self-check reports the reference unjudged.
		cands = append(cands, engine.Candidate{ItemID: it.ItemID, CandidateID: engine.ReferenceCandidateID, Code: code})
	}
	return cands, nil
}

// verifyIOFlags adds the flags every verify command shares: what to judge
// and where the evidence goes.
func verifyIOFlags(c *cobra.Command, items, cands, out *string, selfCheck, force *bool, itemsHelp string) {
	f := c.Flags()
	f.StringVar(items, "items", "", itemsHelp)
	f.StringVar(cands, "candidates", "", "candidate JSONL/Parquet rows {item_id, candidate_id, code} or a directory of them")
	f.StringVar(out, "out", "", "output directory for evidence shards and manifest.json (required)")
	f.BoolVar(selfCheck, "self-check", false, "submit each item's reference as its candidate instead of --candidates")
	f.BoolVar(force, "force", false, "judge even when the manifest in --out is current")
	_ = c.MarkFlagRequired("items")
	_ = c.MarkFlagRequired("out")
}

// verifyArgs checks the arguments every verify command shares.
func verifyArgs(items, out, candidates string, selfCheck bool) error {
	switch {
	case items == "" || out == "":
		return fmt.Errorf("%w: --items and --out are required", errUsage)
	case selfCheck == (candidates != ""):
		return fmt.Errorf("%w: give exactly one of --candidates and --self-check", errUsage)
	}
	return nil
}

func domainsOf(items []engine.Item) map[string]string {
	m := make(map[string]string, len(items))
	for _, it := range items {
		m[it.ItemID] = it.Domain
	}
	return m
}

// printVerifySummary prints a verify command's header line, then counts by
// domain, status and failure stage, and where the evidence went.
func printVerifySummary(w io.Writer, header string, evs []engine.Evidence, items []engine.Item, rejected int64, out string) {
	fmt.Fprintln(w, header)
	if rejected > 0 {
		fmt.Fprintf(w, "  %d item rows were rejected by validation\n", rejected)
	}
	domainOf := domainsOf(items)
	status := map[string]int{}
	stages := map[string]int{}
	for _, ev := range evs {
		d := domainOf[ev.ItemID]
		if d == "" {
			d = "?"
		}
		status[d+"/"+ev.Status]++
		if ev.FailureStage != "" {
			stages[d+"/"+ev.Status+"/"+ev.FailureStage]++
		}
	}
	var domains []string
	seen := map[string]bool{}
	for k := range status {
		d, _, _ := strings.Cut(k, "/")
		if !seen[d] {
			seen[d] = true
			domains = append(domains, d)
		}
	}
	sort.Strings(domains)
	for _, d := range domains {
		fmt.Fprintf(w, "  %s\n", d)
		for _, s := range []string{engine.StatusPass, engine.StatusFail, engine.StatusUnjudged} {
			fmt.Fprintf(w, "    %-9s %d\n", s, status[d+"/"+s])
		}
		var keys []string
		for k := range stages {
			if strings.HasPrefix(k, d+"/") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts := strings.SplitN(k, "/", 3)
			fmt.Fprintf(w, "    %-9s %-22s %d\n", parts[1], parts[2], stages[k])
		}
	}
	fmt.Fprintf(w, "evidence and manifest: %s\n", filepath.Clean(out))
}
