package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	LogFormat  string
	LogLevel   string
	NoProgress bool
}

var globals globalOptions

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "crucible",
		Short: "Build verified, deduplicated, decontaminated and packed training corpora for RTL and GPU-kernel tasks",
		Long: `crucible turns seed tasks for industrial code (Verilog/RTL designs and GPU kernels)
into verified, deduplicated, decontaminated, model-relative and packed training corpora,
written as Parquet shards with manifests.

` + exitCodeHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging(globals)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&globals.LogFormat, "log-format", "text", "log format: text|json (json for schedulers)")
	pf.StringVar(&globals.LogLevel, "log-level", "info", "log level: debug|info|warn|error")
	pf.BoolVar(&globals.NoProgress, "no-progress", false, "never draw progress bars")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	for _, c := range commands() {
		root.AddCommand(c)
	}
	return root
}

func setupLogging(g globalOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.LogLevel)); err != nil {
		return fmt.Errorf("%w: --log-level %q", errUsage, g.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(g.LogFormat) {
	case "text":
		h = slog.NewTextHandler(os.Stderr, opts)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, opts)
	default:
		return fmt.Errorf("%w: --log-format %q: want text|json", errUsage, g.LogFormat)
	}
	slog.SetDefault(slog.New(h))
	return nil
}

// progressBars returns terminal progress bars unless disabled, not a tty,
// or --log-format json (whose stderr carries only JSON lines).
func progressBars() *engine.Bars {
	return engine.NewBars(os.Stderr, !globals.NoProgress && !strings.EqualFold(globals.LogFormat, "json"))
}

// readProgress draws, on a terminal, one bar of the rows and bytes a
// standalone command reads (totalBytes: its input files' sizes, times the
// passes it makes), and returns the context its readers meter through and
// the function that ends the bar.
func readProgress(ctx context.Context, name string, totalBytes int64) (context.Context, func()) {
	m, done := progressBars().Reader(name, totalBytes)
	if m == nil { // no terminal: leave any meter the caller set
		return ctx, done
	}
	return engine.WithReadMeter(ctx, m), done
}

// executeRoot runs the command line. Cobra reports a bad command line
// (unknown command or flag, wrong number of arguments, a required flag
// missing) as a plain error before any command runs; every error that
// arrives before a command's RunE started is therefore a usage error (exit 2).
func executeRoot(ctx context.Context, root *cobra.Command) error {
	started := false
	markStarted(root, &started)
	err := root.ExecuteContext(ctx)
	if err != nil && !started && !errors.Is(err, errUsage) && ctx.Err() == nil {
		return fmt.Errorf("%w: %v (see `crucible help`)", errUsage, err)
	}
	return err
}

func markStarted(c *cobra.Command, started *bool) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			*started = true
			return run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		markStarted(sub, started)
	}
}

// reportFatal prints the error that ends the run on stderr: one JSON
// object under --log-format json (so a scheduler's log parser sees only
// JSON lines), else "crucible: <error>".
func reportFatal(err error, code int) {
	if strings.EqualFold(globals.LogFormat, "json") || jsonLogRequested(os.Args[1:]) {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("crucible failed", "error", err.Error(), "exit_code", code)
		return
	}
	fmt.Fprintln(os.Stderr, "crucible:", err)
}

// jsonLogRequested reads --log-format from the raw arguments, for errors
// raised before cobra parsed the flags (an unknown command).
func jsonLogRequested(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--log-format" && i+1 < len(args):
			return strings.EqualFold(args[i+1], "json")
		case strings.HasPrefix(a, "--log-format="):
			return strings.EqualFold(strings.TrimPrefix(a, "--log-format="), "json")
		}
	}
	return false
}
