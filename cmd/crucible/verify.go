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
	RTL        rtl.Config
	Kernel     kernels.Config
	Writer     engine.WriterOptions
	Stdout     io.Writer
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
	o := VerifyOptions{Writer: engine.DefaultWriterOptions(), RTL: rtl.DefaultConfig(), Kernel: kernels.DefaultConfig()}
	c := &cobra.Command{
		Use:   "verify --items PATH (--candidates PATH | --self-check) --out DIR [--workers N] [--simulator icarus|verilator] [--backend auto|cpu|cuda|triton]",
		Short: "Judge candidates of every domain (RTL, kernels) through one judge contract; write evidence shards",
		Long:  verifyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runVerify(cmd.Context(), o)
		},
	}
	f := c.Flags()
	verifyIOFlags(c, &o.Items, &o.Candidates, &o.Out, &o.SelfCheck,
		"item shards directory, item JSONL/Parquet, kernel seed directory, or VerilogEval JSONL with --preset verilog-eval (required)")
	f.StringVar(&o.Preset, "preset", ingest.PresetItems, "layout of --items files: items|verilog-eval")
	f.IntVar(&o.Workers, "workers", 0, "concurrent judge calls, and each judge's workers (default: number of cores)")
	f.StringVar(&o.RTL.Simulator, "simulator", o.RTL.Simulator, "RTL: icarus (4-state, trusted for pass) | verilator (2-state)")
	f.BoolVar(&o.RTL.TrustTwoState, "trust-two-state", false, "RTL: let a Verilator run issue pass verdicts")
	f.BoolVar(&o.RTL.StrengthAudit, "strength-audit", o.RTL.StrengthAudit, "RTL: audit each item's harness first; passes on a weak harness are unjudged")
	f.StringVar(&o.RTL.CacheDir, "cache-dir", "", "RTL: persist reference self-checks and strength audits per (task, toolchain) here")
	f.StringVar(&o.Kernel.Backend, "backend", o.Kernel.Backend, "kernels: auto | cpu | cuda | triton")
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
	if o.Workers > 0 {
		o.RTL.Workers, o.Kernel.Workers = o.Workers, o.Workers
	}
	for _, err := range []error{o.RTL.Validate(), o.Kernel.Validate()} {
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	var items []engine.Item
	var inputs []string
	var rejected int64
	var err error
	if o.Preset == ingest.PresetItems {
		items, inputs, rejected, err = loadKernelItems(ctx, o.Items) // seed dirs, else shards or ingest
	} else {
		items, inputs, rejected, err = loadRTLItems(ctx, o.Items, o.Preset)
	}
	if err != nil {
		return err
	}
	cands, candInputs, err := verifyCandidates(o.SelfCheck, o.Candidates, items)
	if err != nil {
		return err
	}
	inputs = append(inputs, candInputs...)
	judges, err := verify.JudgesFor(items, o.Workers, o.RTL, o.Kernel, slog.Default())
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	defer judges.Close()
	start := time.Now()
	evs, err := judges.JudgeAll(ctx, engine.ItemsByID(items), cands)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	counts := map[string]int64{"items": int64(len(items)), "candidates": int64(len(cands)), "items_rejected": rejected}
	domainOf := domainsOf(items)
	for _, ev := range evs {
		counts["domain."+domainOf[ev.ItemID]+"."+ev.Status]++
	}
	if err := writeEvidenceDir(o.Out, o.Writer, "verify", "verify", inputs, evs, counts); err != nil {
		return err
	}
	printVerifySummary(o.Stdout, fmt.Sprintf("verified %d candidates for %d items in %.1fs (judges: %s; %d concurrent)", len(evs),
		len(items), elapsed.Seconds(), strings.Join(judges.Domains(), ", "), judges.Workers()), evs, items, rejected, o.Out)
	return nil
}

// verifyCandidates is --self-check's reference candidates (in the form a
// candidate takes: an RTL reference renamed to the candidate's top) or the
// rows of --candidates, with the files they came from.
func verifyCandidates(selfCheck bool, path string, items []engine.Item) ([]engine.Candidate, []string, error) {
	if !selfCheck {
		paths, err := shardInputs([]string{path}, "candidates")
		if err != nil {
			return nil, nil, err
		}
		cands, err := engine.ReadAll[engine.Candidate](paths...)
		return cands, paths, err
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
	return cands, nil, nil
}

// verifyIOFlags adds the flags every verify command shares: what to judge
// and where the evidence goes.
func verifyIOFlags(c *cobra.Command, items, cands, out *string, selfCheck *bool, itemsHelp string) {
	f := c.Flags()
	f.StringVar(items, "items", "", itemsHelp)
	f.StringVar(cands, "candidates", "", "candidate JSONL/Parquet rows {item_id, candidate_id, code} or a directory of them")
	f.StringVar(out, "out", "", "output directory for evidence shards and manifest.json (required)")
	f.BoolVar(selfCheck, "self-check", false, "submit each item's reference as its candidate instead of --candidates")
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
