package main

import (
	"context"
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
)

// PackOptions are `crucible pack`'s flags.
type PackOptions struct {
	In       []string
	Out      string
	Template string // YAML file with a pack.Template; empty: ChatML with <think>
	Config   pack.Config
	Writer   engine.WriterOptions // sizes come from Config; tests set WrapFile
	Stdout   io.Writer
}

func newPackCmd() *cobra.Command {
	o := PackOptions{Config: pack.DefaultConfig()}
	c := &cobra.Command{
		Use:   "pack --in PATH --out DIR [--tokenizer cl100k_base|o200k_base|PATH/tokenizer.json] [--seq-len 32768] [--layout megatron|trl]",
		Short: "Render, tokenise and pack SFT trajectories into Parquet rows for training (samples over --seq-len are dropped, never truncated)",
		Long: `Reads trajectory rows {id, messages: [{role, content, reasoning?}], domain?, family?}
(roles system, user, assistant, environment) from JSONL or Parquet, renders them with a chat
template (default ChatML with <think>…</think> around reasoning; assistant turns trained, the
rest masked), tokenises exactly, drops samples longer than --seq-len, packs them best-fit
decreasing and writes packed-*.parquet, dropped-*.parquet, rejections-*.parquet and
pack-manifest.json to --out. Check the result with 'crucible pack audit'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			return runPack(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.In, "in", nil, "trajectory file (JSONL or Parquet) or directory of them; repeatable (required)")
	f.StringVar(&o.Out, "out", "", "output directory (required)")
	f.StringVar(&o.Config.Tokenizer, "tokenizer", o.Config.Tokenizer, "cl100k_base, o200k_base or a tokenizer.json path")
	f.IntVar(&o.Config.SeqLen, "seq-len", o.Config.SeqLen, "packed row length B; longer samples are dropped")
	f.StringVar(&o.Config.Layout, "layout", o.Config.Layout, "output layout: megatron|trl")
	f.StringVar(&o.Config.Algorithm, "algorithm", o.Config.Algorithm, "packing: bfd (best-fit decreasing) | ffs (first-fit shuffle) | none")
	f.Uint64Var(&o.Config.Seed, "seed", o.Config.Seed, "seed for tie order (bfd) and shuffle (ffs)")
	f.IntVar(&o.Config.Workers, "workers", 0, "tokenising goroutines (0: all cores)")
	f.StringVar(&o.Template, "template", "", "chat template YAML (fields of pack.Template); default ChatML with <think>")
	_ = c.MarkFlagRequired("in")
	_ = c.MarkFlagRequired("out")
	c.AddCommand(newPackAuditCmd())
	return c
}

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
	release, err := engine.PrepareOutput(ctx, o.Out, []string{"manifest.json", pack.ManifestFile},
		pack.KindPacked, pack.KindDropped, pack.KindRejections)
	if err != nil {
		return err
	}
	defer release()
	pack.TuneGC()
	pctx, done := readProgress(ctx, "pack", engine.InputBytes(inputs))
	m, err := pack.RunWithWriter(pctx, cfg, inputs, o.Out, o.Writer, slog.Default())
	done()
	if err != nil {
		return err
	}
	printPackSummary(o.Stdout, m, o.Out)
	return nil
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
