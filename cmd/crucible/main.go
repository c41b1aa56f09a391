// Command crucible is the batch engine's command-line interface.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/crucible-data/crucible/kernels"
)

func main() {
	kernels.RunWorkerIfRequested() // a GPU-candidate child process runs the worker and exits
	installCrashPoints()           // test builds only (-tags crashpoints)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	code := exitCode(ctx, err)
	if err != nil && code != exitOK {
		fmt.Fprintln(os.Stderr, "crucible:", err)
	}
	os.Exit(code)
}
