package kernels

import (
	"fmt"
	"os"
	"sync"

	"github.com/crucible-data/crucible/cuda"
	"github.com/crucible-data/crucible/engine"
)

// gpuPool is the one device manager shared by the GPU backends, so a cuda
// job and a triton job never land on the same GPU at once.
type gpuPool struct {
	once  sync.Once
	mgr   *cuda.Manager
	tools []engine.Tool
	err   error
}

// get builds the manager on first use: NVML where it works (health
// signals, inventory), else a count of CUDA driver devices.
func (p *gpuPool) get() (*cuda.Manager, []engine.Tool, error) {
	p.once.Do(func() {
		if os.Getenv("CUDA_DEVICE_ORDER") == "" {
			os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID") // CUDA ordinals = NVML indices
		}
		mc := cuda.DefaultManagerConfig()
		lib := cuda.NewNVML()
		if m, err := cuda.NewManager(lib, mc); err == nil && m.Len() > 0 {
			p.mgr = m
			p.tools = []engine.Tool{{Name: "nvidia-driver", Version: cuda.DriverVersionNVML(lib)}}
			return
		}
		n, err := cuda.DeviceCount()
		if err != nil {
			p.err = err
			return
		}
		if n == 0 {
			p.err = cuda.ErrNoDevice
			return
		}
		p.mgr, p.err = cuda.NewCountManager(n, mc)
	})
	if p.err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBackendUnavailable, p.err)
	}
	return p.mgr, p.tools, nil
}

func (p *gpuPool) close() {
	if p.mgr != nil {
		p.mgr.Close()
	}
}
