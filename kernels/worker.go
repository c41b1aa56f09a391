package kernels

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Worker processes. A GPU side (the reference or one candidate) runs in a
// child process that is this same executable started with
// CRUCIBLE_KERNELS_WORKER set, speaking the side protocol of side.go on
// its stdin and stdout. Every main that links the package (the crucible CLI,
// gpucheck, the package's tests) calls RunWorkerIfRequested first thing,
// explicitly: a process-wide side effect stays visible in main rather than
// hidden in an init.
const (
	workerEnv  = "CRUCIBLE_KERNELS_WORKER"
	workerCUDA = "cuda"
)

// RunWorkerIfRequested runs the kernel worker and exits when this process
// was started as one; otherwise it returns at once.
func RunWorkerIfRequested() {
	if kind := os.Getenv(workerEnv); kind != "" {
		// The protocol runs on stdin/stdout; anything else that prints
		// (the driver, NVRTC) goes to stderr.
		out, err := syscall.Dup(1)
		if err != nil || syscall.Dup3(2, 1, 0) != nil {
			os.Exit(2)
		}
		os.Exit(workerMain(kind, os.Stdin, os.NewFile(uintptr(out), "replies")))
	}
}

// workerJob is a worker's one job: run Code (the reference's or the
// candidate's, as Role says) for Task.
type workerJob struct {
	Cfg  Config `json:"cfg"`
	Task Task   `json:"task"`
	Code string `json:"code"`
	Role string `json:"role"`
}

func workerMain(kind string, in io.Reader, out io.Writer) int {
	var n uint32
	if err := binary.Read(in, binary.LittleEndian, &n); err != nil || n > 256<<20 {
		fmt.Fprintln(os.Stderr, "kernels worker: no job on stdin:", err)
		return 2
	}
	buf := make([]byte, n)
	var job workerJob
	if _, err := io.ReadFull(in, buf); err != nil {
		fmt.Fprintln(os.Stderr, "kernels worker: short job:", err)
		return 2
	}
	if err := json.Unmarshal(buf, &job); err != nil {
		return writeReport(out, Outcome{Stage: engine.StagePayloadCorrupt, Cause: "kernels worker: bad job: " + err.Error()})
	}
	switch kind {
	case workerCUDA:
		return serveCUDA(job, in, out)
	}
	return writeReport(out, Outcome{Stage: engine.StageWorkerCrash, Cause: "kernels worker: unknown kind " + strconv.Quote(kind)})
}

// writeReport sends an outcome ('E', a u32 length, JSON) and returns the
// worker's exit status. Non-finite numbers are clamped so the JSON encodes.
func writeReport(out io.Writer, o Outcome) int {
	o.MaxAbsErr, o.MaxRelErr = finite(o.MaxAbsErr), finite(o.MaxRelErr)
	for i, m := range o.Measurements {
		if m.Kind == "float" {
			o.Measurements[i].Float = finite(m.Float)
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernels worker: encoding the outcome:", err)
		return 2
	}
	var hdr [5]byte
	hdr[0] = 'E'
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(b)))
	out.Write(append(hdr[:], b...))
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	return 0
}

// startCUDAWorker starts a worker for one side on GPU gpu. Its budget is
// the candidate timeout plus an allowance for NVRTC and module loading.
func startCUDAWorker(ctx context.Context, exe string, gpu int, cfg Config, t *Task, code, role string) (*sideProc, error) {
	job, err := json.Marshal(workerJob{Cfg: cfg, Task: *t, Code: code, Role: role})
	if err != nil {
		return nil, err
	}
	hdr := binary.LittleEndian.AppendUint32(nil, uint32(len(job)))
	dir, err := os.MkdirTemp(cfg.TempDir, "crucible-cuda-"+role+"-")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), workerEnv+"="+workerCUDA, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(gpu), "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	// The worker is trusted Go code that needs the GPU's device nodes, which
	// the sandbox's view does not have (see startGPUWorker); the candidate's
	// part is device code only and runs in a process of its own.
	start := func(stdin io.Reader, stdout, stderr io.Writer) (procHandle, error) {
		cmd := exec.Command(exe)
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, env, stdin, stdout, stderr
		return startGPUWorker(cmd)
	}
	s, err := launchSide(ctx, role, start, append(hdr, job...), true, t, cfg.Timeout+30*time.Second)
	if s != nil {
		go func() { <-s.done; os.RemoveAll(dir) }()
	} else {
		os.RemoveAll(dir)
	}
	return s, err
}
