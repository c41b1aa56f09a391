package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// PackOptions are `crucible pack`'s flags; Config is the pack stage's
// config (defaults, then the flags given, then --set).
type PackOptions struct {
	In       []string
	Out      string
	Template string // YAML file with a pack.Template; empty: ChatML with <think>
	Force    bool   // run even when the manifest in Out is current
	Config   pack.Config
	Writer   engine.WriterOptions // sizes come from Config; tests set WrapFile
	Stdout   io.Writer
}

// packFlags keep the names and help texts `pack`'s flags had before they
// were derived from pack.Config; the template is --template FILE.
var packFlags = map[string]flagDoc{
	"tokenizer":       {Help: "cl100k_base, o200k_base or a tokenizer.json path"},
	"seq_len":         {Help: "packed row length B; longer samples are dropped"},
	"layout":          {Help: "output layout: megatron|trl"},
	"algorithm":       {Help: "packing: bfd (best-fit decreasing) | ffs (first-fit shuffle) | none"},
	"seed":            {Help: "seed for tie order (bfd) and shuffle (ffs)"},
	"workers":         {Help: "tokenising goroutines (0: all cores)"},
	"template":        {Skip: true},
	"row_group_bytes": {Help: "Parquet row group size in bytes (0: the engine default)"},
	"shard_bytes":     {Help: "start a new packed file at this size in bytes (0: the engine default)"},
}

func newPackCmd() *cobra.Command {
	o := PackOptions{Config: pack.DefaultConfig()}
	var sf *stageFlags
	c := &cobra.Command{
		Use:   "pack --in PATH --out DIR [--tokenizer cl100k_base|o200k_base|PATH/tokenizer.json] [--seq-len 32768] [--layout megatron|trl]",
		Short: "Render, tokenise and pack SFT trajectories into Parquet rows for training (samples over --seq-len are dropped, never truncated)",
		Long: `Reads trajectory rows {id, messages: [{role, content, reasoning?}], domain?, family?}
(roles system, user, assistant, environment) from JSONL or Parquet, renders them with a chat
template (default ChatML with <think>…</think> around reasoning; assistant turns trained, the
rest masked), tokenises exactly, drops samples longer than --seq-len, packs them best-fit
decreasing and writes packed-*.parquet, dropped-*.parquet, rejections-*.parquet,
pack-manifest.json and manifest.json to --out. Check the result with 'crucible pack audit'.
A re-run on the same inputs (files, --template and tokenizer file contents) with the same
flags is skipped as up to date; --force runs it again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.apply(); err != nil {
				return err
			}
			o.Stdout = cmd.OutOrStdout()
			return runPack(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.In, "in", nil, "trajectory file (JSONL or Parquet) or directory of them; repeatable (required)")
	f.StringVar(&o.Out, "out", "", "output directory (required)")
	f.StringVar(&o.Template, "template", "", "chat template YAML (fields of pack.Template); default ChatML with <think>")
	f.BoolVar(&o.Force, "force", false, "run even when the manifest in --out is current")
	sf = bindStageFlags(f, &o.Config, packFlags)
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("out")
	c.AddCommand(newPackAuditCmd())
	return c
}

// packExtra is what decides pack's output beyond its config: the
// tokenizer file's content (a tokenizer.json path; a named encoding is
// built in).
type packExtra struct {
	TokenizerSHA256 string `json:"tokenizer_sha256,omitempty"`
}

// runPack runs the pipeline's pack stage on the --in files: the --template
// file's template is in its config (so a changed template runs it again),
// the tokenizer file's hash is fingerprinted beside it.
func runPack(ctx context.Context, o PackOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	inputs, err := expandPackInputs(o.In)
	if err != nil {
		return err
	}
	cfg := o.Config
	if o.Template != "" {
		data, err := os.ReadFile(o.Template)
		if err != nil {
			return fmt.Errorf("%w: --template: %v", engine.ErrConfig, err)
		}
		tm := pack.DefaultTemplate()
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&tm); err != nil {
			return fmt.Errorf("%w: --template %s: %v", engine.ErrConfig, o.Template, err)
		}
		cfg.Template = &tm
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	var extra packExtra
	if cfg.Tokenizer != tokenizer.CL100KBase && cfg.Tokenizer != tokenizer.O200KBase {
		if extra.TokenizerSHA256, err = engine.HashFile(cfg.Tokenizer); err != nil {
			return fmt.Errorf("%w: --tokenizer: %v", engine.ErrConfig, err)
		}
	}
	// The config's sizes decide the shard writer's (as they always did for
	// the command); RunOne fills in the defaults for sizes neither sets.
	w := o.Writer
	if cfg.RowGroupBytes > 0 {
		w.RowGroupBytes = cfg.RowGroupBytes
	}
	if cfg.ShardBytes > 0 {
		w.ShardBytes = cfg.ShardBytes
	}
	pack.TuneGC()
	pctx, done := readProgress(ctx, "pack", engine.InputBytes(inputs))
	res, err := runCommandStage(pctx, o.Stdout, commandStage{Type: "pack", Config: &cfg, Inputs: inputs, Out: o.Out,
		Force: o.Force, Writer: w, Extra: extra})
	done()
	if err != nil || res.Status == "skipped" {
		return err
	}
	m, err := readPackManifest(o.Out)
	if err != nil {
		return err
	}
	printPackSummary(o.Stdout, m, o.Out)
	return nil
}

// readPackManifest reads the pack manifest the stage wrote in dir.
func readPackManifest(dir string) (*pack.Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, pack.ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	var m pack.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrIO, pack.ManifestFile, err)
	}
	return &m, nil
}

// expandPackInputs turns directories into their *.jsonl and *.parquet files.
func expandPackInputs(in []string) ([]string, error) {
	var out []string
	for _, p := range in {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: --in: %v", engine.ErrInput, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		for _, pat := range append(engine.JSONLGlobs(), "*.parquet") {
			m, _ := filepath.Glob(filepath.Join(p, pat))
			found = append(found, m...)
		}
		sort.Strings(found)
		if len(found) == 0 {
			return nil, fmt.Errorf("%w: --in %s: no .jsonl or .parquet files", engine.ErrInput, p)
		}
		out = append(out, found...)
	}
	return out, nil
}

func printPackSummary(w io.Writer, m *pack.Manifest, dir string) {
	c := m.Counts
	fmt.Fprintf(w, "packed %d samples into %d rows of B=%d (%s, %s layout), fill %.4f\n", c.Packed, c.Rows, m.SeqLen, m.Algorithm, m.Layout, m.FillRatio)
	fmt.Fprintf(w, "tokens: %d packed, %d trained, %d dropped\n", c.TokensPacked, c.TokensTrained, c.TokensDropped)
	fmt.Fprintf(w, "samples: %d in, %d dropped (longer than B), %d rejected\n", c.SamplesIn, c.Dropped, c.Rejected)
	reasons := make([]string, 0, len(c.RejectedByReason))
	for r := range c.RejectedByReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  rejected %-20s %d\n", r, c.RejectedByReason[r])
	}
	for _, g := range m.Groups {
		if g.Dropped > 0 {
			fmt.Fprintf(w, "  dropped  domain=%s family=%s: %d of %d samples (%.1f%%), %d tokens (%.1f%%)\n",
				orDash(g.Domain), orDash(g.Family), g.Dropped, g.Samples, 100*g.DroppedShare, g.DroppedTokens, 100*g.DroppedTokenShare)
		}
	}
	if len(m.Tokenizer.Added) > 0 {
		fmt.Fprintf(w, "template tokens missing from %s got new ids:", m.Tokenizer.ID)
		for _, a := range m.Tokenizer.Added {
			fmt.Fprintf(w, " %s=%d", a.Text, a.ID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "manifest: %s\n", filepath.Join(dir, pack.ManifestFile))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PackAuditOptions are `crucible pack audit`'s flags.
type PackAuditOptions struct {
	In      []string
	Packed  string
	Workers int
	Stdout  io.Writer
}

func newPackAuditCmd() *cobra.Command {
	var o PackAuditOptions
	c := &cobra.Command{
		Use:   "audit --in PATH --packed DIR",
		Short: "Unpack every packed row and prove every input sample's tokens and mask are recovered exactly (exit 6 on any discrepancy)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runPackAudit(cmd.Context(), o)
		},
	}
	c.Flags().StringSliceVar(&o.In, "in", nil, "the trajectory input given to 'crucible pack' (required)")
	c.Flags().StringVar(&o.Packed, "packed", "", "the output directory of 'crucible pack' (required)")
	c.Flags().IntVar(&o.Workers, "workers", 0, "tokenising goroutines (0: all cores)")
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("packed")
	return c
}

func runPackAudit(ctx context.Context, o PackAuditOptions) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	inputs, err := expandPackInputs(o.In)
	if err != nil {
		return err
	}
	pack.TuneGC()
	rep, err := pack.Audit(ctx, inputs, o.Packed, o.Workers, slog.Default())
	if rep != nil {
		fmt.Fprintf(o.Stdout, "audit: %d rows, %d samples and %d tokens recovered, %d dropped accounted, %d rejected; %d problems\n",
			rep.Rows, rep.Samples, rep.Tokens, rep.Dropped, rep.Rejected, rep.ProblemCount)
		for _, p := range rep.Problems {
			fmt.Fprintln(o.Stdout, "  "+p)
		}
	}
	if errors.Is(err, pack.ErrAudit) {
		return withCode(exitFindings, err)
	}
	return err
}
