package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/gates"
)

// AdmitOptions are `crucible admit`'s inputs; Config is complete.
type AdmitOptions struct {
	From       []string // evolve outputs: parents ("items") and candidates ("evolved")
	Items      []string // extra parent item files/dirs
	Candidates []string // extra candidate item files/dirs (evolved items)
	Out        string
	Force      bool // run even when the manifest in Out is current
	Config     gates.StageConfig
	Writer     engine.WriterOptions
	Stdout     io.Writer
}

const admitLong = `Run evolved candidates through ordered admission gates (default order
static → strength → audit → dedup → difficulty → compose; --order changes it):

  static      format, size, interface preserved vs the parent where the operator
              claims so, leakage (share of the reference's 8-token sequences found
              in the instruction ≤ 20%)
  strength    the parent reference (adapted to the evolved interface) must fail
              the evolved verifier, and the harness-strength audit (one for
              every domain, run by the item's judge) must find no trivial
              candidate that passes (RTL: constant, Z/X, stuck or inverted
              outputs; kernels: zeros, a constant, an input copy, the reference
              on other inputs) and kill ≥ strength.min_mutant_kill_rate (RTL,
              0.8) or strength.min_kill_ratio (kernels, 0.5) of the mutants of
              the evolved reference (reason weak_verifier)
  audit       the evolved reference compiles and passes its own verifier under
              Icarus, Yosys reads the declared ports, the audit generator accepts
              the instruction
  dedup       exact (same normalized reference and ports) and near (dedup package,
              MinHash over reference + instruction) duplicates among candidates
  difficulty  size and simulator-cost bounds; sets difficulty and cost
  compose     at most lineage_cap admitted items per lineage root

A rejected item stops at its gate and is written as a rejection row (gate, reason
code, detail). Infrastructure failures are retried inside the verifier; an item
that stays unjudged is rejected with reason "unjudged".

Outputs in --out (Parquet + manifest.json): items (the parents, then the admitted
items), rejections, yield (per operator: candidates, admitted, yield %, rejection
causes, behavioural distance from the parent, simulator seconds per admitted
item), gate_evidence (every verifier run of the gates).`

// admitFlags keep the names and help texts `admit`'s flags had before they
// were derived from gates.StageConfig; the gates' other keys get flags of
// their own (--strength-min-mutant-kill-rate, ...).
var admitFlags = map[string]flagDoc{
	"order":                {Help: "gate order"},
	"strength.max_mutants": {Name: "max-mutants", Help: "simple mutants run per candidate at the strength gate"},
	"compose.lineage_cap":  {Name: "lineage-cap", Help: "most admitted items per lineage root (0 = no cap)"},
	"workers":              {Help: "simulator jobs in parallel (0 = all cores)"},
	"pass_parents":         {Name: "no-parents", Invert: true, Help: "write only the admitted items (not the parents) to items"},
	"simulator":            {Help: "simulator: icarus | verilator"},
	"cache_dir":            {Help: "persist reference self-check results here"},
	"chat":                 {Skip: true}, // --config or --set
	"kernel":               {Skip: true},
}

func newAdmitCmd() *cobra.Command {
	o := AdmitOptions{Writer: engine.DefaultWriterOptions(), Config: gates.DefaultStageConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "admit --from EVOLVE_OUT --out DIR [--order static,strength,...] [flags]",
		Short: "Admit evolved candidates through ordered gates; write admitted items, rejections and a per-operator yield report",
		Long:  admitLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runAdmit(cmd.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&o.From, "from", nil, "crucible evolve output directories (their items are the parents, their evolved rows the candidates)")
	fl.StringSliceVar(&o.Items, "items", nil, "additional parent item files or directories")
	fl.StringSliceVar(&o.Candidates, "candidates", nil, "additional candidate item files or directories")
	fl.StringVar(&o.Out, "out", "", "output directory for the shards and manifest (required)")
	fl.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	sf = bindStageFlags(fl, &o.Config, admitFlags).withConfigFile("YAML file with the admit stage's config block; flags override it")
	_ = c.MarkFlagRequired("out")
	return c
}

// runAdmit runs the pipeline's admit stage: --from directories are its
// upstreams (parents from their items, candidates from their evolved
// rows), --items and --candidates add rows of one kind each.
func runAdmit(ctx context.Context, o AdmitOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Out == "" || len(o.From)+len(o.Candidates) == 0 {
		return fmt.Errorf("%w: --out and --from (or --candidates) are required", errUsage)
	}
	if err := o.Config.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	shards := map[string][]string{}
	from, err := stageInputs(o.From, "items", nil, shards)
	if err != nil {
		return err
	}
	for kind, paths := range map[string][]string{"items": o.Items, evolve.KindEvolved: o.Candidates} {
		files, err := shardInputs(paths, kind)
		if err != nil {
			return err
		}
		shards[kind] = append(shards[kind], files...)
		if err := asParquet[engine.Item](ctx, o.Out, shards, kind); err != nil {
			return err
		}
	}
	res, err := runCommandStage(ctx, o.Stdout, commandStage{Type: "admit", Config: &o.Config, From: from, Shards: shards, Out: o.Out, Force: o.Force, Writer: o.Writer})
	if err != nil || res.Status == "skipped" {
		return err
	}
	fmt.Fprintln(o.Stdout, gateFunnel(res.Counts))
	so, err := engine.LoadStageOutput(o.Out)
	if err != nil {
		return err
	}
	yield, err := engine.ReadAll[gates.YieldRow](so.Shards(gates.KindYield)...)
	if err != nil {
		return err
	}
	var b strings.Builder
	gates.FormatYield(&b, yield)
	fmt.Fprint(o.Stdout, b.String())
	fmt.Fprintf(o.Stdout, "shards and manifest: %s\n", o.Out)
	return nil
}
