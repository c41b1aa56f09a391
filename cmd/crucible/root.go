package main

import (
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

// progressBars returns terminal progress bars unless disabled or not a tty.
func progressBars() *engine.Bars { return engine.NewBars(os.Stderr, !globals.NoProgress) }
