package kernels

import (
	"strings"
)

// BackendStatus says whether a kernel backend can run on this machine and,
// if not, why (for `crucible doctor`).
type BackendStatus struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"` // toolchain when available, the reason when not
}

// Backends probes every backend with cfg (the cpu backend compiles its
// harness; the GPU backends load the driver, NVRTC, NVML, and for triton
// import torch and triton in a child interpreter).
func Backends(cfg Config) []BackendStatus {
	pool := &gpuPool{}
	defer pool.close()
	bs := []Backend{newCPUBackend(cfg), newCUDABackend(cfg, pool), newTritonBackend(cfg, pool)}
	out := make([]BackendStatus, 0, len(bs))
	for _, b := range bs {
		st := BackendStatus{Name: b.Name()}
		if err := b.Available(); err != nil {
			st.Detail = strings.TrimPrefix(err.Error(), ErrBackendUnavailable.Error()+": ")
		} else {
			st.Available = true
			st.Detail = toolchainOf(b)
		}
		b.Close()
		out = append(out, st)
	}
	return out
}

func toolchainOf(b Backend) string {
	var parts []string
	switch x := b.(type) {
	case *cpuBackend:
		for _, t := range x.toolchain {
			parts = append(parts, t.Name+" "+t.Version)
		}
	case *cudaBackend:
		for _, t := range x.toolchain {
			parts = append(parts, t.Name+" "+t.Version)
		}
	case *tritonBackend:
		for _, t := range x.tools {
			parts = append(parts, t.Name+" "+t.Version)
		}
	}
	return strings.Join(parts, ", ")
}
