// Command crucible is the batch engine's command-line interface.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/kernels"
)

func main() {
	kernels.RunWorkerIfRequested() // a GPU-candidate child process runs the worker and exits
	installCrashPoints()           // test builds only (-tags crashpoints)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go exitSoonAfterInterrupt(ctx, interruptGrace)
	root := newRootCmd()
	err := executeRoot(ctx, root)
	code := exitCode(ctx, err)
	if err != nil && code != exitOK {
		reportFatal(err, code)
	}
	os.Exit(code)
}

// interruptGrace is how long a command may take to unwind after SIGINT or
// SIGTERM before the process exits anyway. Commands check their context in
// every loop; this is the backstop for a call blocked in I/O. Exiting there
// is as safe as a kill: every output is committed by rename and manifests
// are written last, so a re-run resumes and sweeps any temp file.
const interruptGrace = time.Second

func exitSoonAfterInterrupt(ctx context.Context, grace time.Duration) {
	<-ctx.Done()
	time.Sleep(grace)
	reportFatal(errors.New("interrupted; still unwinding after "+grace.String()+", exiting (re-run to resume)"), exitSignal)
	os.Exit(exitSignal)
}
