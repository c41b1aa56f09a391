package kernels

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Worker processes. GPU candidates run in a child process that is this same
// executable started with CRUCIBLE_KERNELS_WORKER set. Every main that links
// the package (the crucible CLI, gpucheck, the package's tests) calls
// RunWorkerIfRequested first thing, explicitly: a process-wide side effect
// stays visible in main rather than hidden in an init.
const (
	workerEnv  = "CRUCIBLE_KERNELS_WORKER"
	workerCUDA = "cuda"
	workerMark = "\nCRUCIBLE_WORKER "
)

// RunWorkerIfRequested runs the kernel worker and exits when this process
// was started as one; otherwise it returns at once.
func RunWorkerIfRequested() {
	if kind := os.Getenv(workerEnv); kind != "" {
		os.Exit(workerMain(kind, os.Stdin, os.Stdout))
	}
}

type workerJob struct {
	Cfg   Config           `json:"cfg"`
	Task  Task             `json:"task"`
	Cand  engine.Candidate `json:"cand"`
	Nonce string           `json:"nonce"`
}

func workerMain(kind string, in io.Reader, out io.Writer) int {
	var job workerJob
	if err := json.NewDecoder(io.LimitReader(in, 256<<20)).Decode(&job); err != nil {
		fmt.Fprintln(os.Stderr, "kernels worker: bad job:", err)
		return 2
	}
	var o Outcome
	switch kind {
	case workerCUDA:
		o = verifyCUDAInProcess(context.Background(), job.Cfg, &job.Task, job.Cand)
	default:
		fmt.Fprintln(os.Stderr, "kernels worker: unknown kind", kind)
		return 2
	}
	o.MaxAbsErr, o.MaxRelErr = finite(o.MaxAbsErr), finite(o.MaxRelErr)
	for i, m := range o.Measurements {
		if m.Kind == "float" {
			o.Measurements[i].Float = finite(m.Float)
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernels worker: encoding result:", err)
		return 2
	}
	fmt.Fprintf(out, "%s%s %s\n", workerMark, job.Nonce, b)
	// Leave at once: after a hung or faulted kernel, tearing the context
	// down could block; process exit releases everything.
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	return 0
}

// runWorker judges one candidate in a child process pinned to GPU gpu and
// killed (with its process group) after timeout.
func runWorker(ctx context.Context, exe, kind string, gpu int, cfg Config, t *Task, c engine.Candidate, timeout time.Duration) Outcome {
	o := Outcome{}
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	job, err := json.Marshal(workerJob{Cfg: cfg, Task: *t, Cand: c, Nonce: nonce})
	if err != nil {
		o.fail(engine.StagePayloadCorrupt, "", "encoding the worker job: "+err.Error())
		return o
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, exe)
	cmd.Env = append(os.Environ(), workerEnv+"="+kind, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(gpu), "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	cmd.Stdin = bytes.NewReader(job)
	var stdout, stderr cappedBuffer
	stdout.limit, stderr.limit = 16<<20, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := runGroup(cmd, 3*time.Second)
	wall := time.Since(start).Seconds()
	switch {
	case ctx.Err() != nil:
		o.fail(engine.StageWorkerCrash, "", "verification cancelled")
		return o
	case rctx.Err() != nil:
		o.fail(engine.StageTimeout, "timeout", fmt.Sprintf("worker killed after %s (hung kernel or runaway compile)", timeout))
		o.Log = stderr.String()
		return o
	}
	text := stdout.String()
	idx := strings.LastIndex(text, workerMark+nonce+" ")
	if idx < 0 {
		o.fail(engine.StageWorkerCrash, "", fmt.Sprintf("worker gave no result (%v): %s", runErr, lastLines(stderr.String())))
		o.Log = stderr.String()
		return o
	}
	line := text[idx+len(workerMark+nonce+" "):]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		o = Outcome{}
		o.fail(engine.StagePayloadCorrupt, "", "worker result: "+err.Error())
		return o
	}
	if !engine.IsKnownStage(o.Stage) || !kernelStages[o.KernelStage] {
		bad := o.Stage
		o = Outcome{}
		o.fail(engine.StagePayloadCorrupt, "", fmt.Sprintf("worker reported unknown stage %q", bad))
		return o
	}
	if s := stderr.String(); s != "" {
		o.Log = strings.TrimSpace(o.Log + "\n" + s)
	}
	o.Measurements = append(o.Measurements, engine.FloatM("worker_wall_s", finiteOr(wall)))
	if math.IsNaN(o.MaxAbsErr) {
		o.MaxAbsErr = math.MaxFloat64
	}
	return o
}
