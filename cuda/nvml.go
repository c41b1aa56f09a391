package cuda

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML wraps NVML being absent (nvml.Init returned ERROR_LIBRARY_NOT_FOUND)
// or failing to initialise.
var ErrNoNVML = errors.New("cuda: NVML not available")

// GPUInfo is one GPU's inventory and current state as NVML reports it.
// Fields NVML does not support on a device stay zero.
type GPUInfo struct {
	Index          int    `json:"index"`
	UUID           string `json:"uuid"`
	Name           string `json:"name"`
	MemTotal       uint64 `json:"mem_total"`
	MemUsed        uint64 `json:"mem_used"`
	CCMajor        int    `json:"cc_major"`
	CCMinor        int    `json:"cc_minor"`
	SMClockMHz     uint32 `json:"sm_clock_mhz"`
	MemClockMHz    uint32 `json:"mem_clock_mhz"`
	MaxSMClockMHz  uint32 `json:"max_sm_clock_mhz"`
	UtilGPU        uint32 `json:"util_gpu"`
	UtilMem        uint32 `json:"util_mem"`
	Processes      []uint32
	EccUncorrected uint64 `json:"ecc_uncorrected"`
}

// NewNVML returns the real NVML library (dlopens libnvidia-ml.so.1 on Init).
func NewNVML() nvml.Interface { return nvml.New() }

// InitNVML initialises lib, mapping a missing library to ErrNoNVML.
func InitNVML(lib nvml.Interface) error {
	if r := lib.Init(); r != nvml.SUCCESS {
		return fmt.Errorf("%w: nvmlInit: %s", ErrNoNVML, nvml.ErrorString(r))
	}
	return nil
}

func nvmlErr(op string, r nvml.Return) error {
	return fmt.Errorf("%w: %s: %s", ErrCUDA, op, nvml.ErrorString(r))
}

// supported reports whether r is a value; NOT_SUPPORTED and similar mean
// "this device does not say", not an error.
func supported(r nvml.Return) bool { return r == nvml.SUCCESS }

// DriverVersionNVML returns the driver version string.
func DriverVersionNVML(lib nvml.Interface) string {
	v, r := lib.SystemGetDriverVersion()
	if r != nvml.SUCCESS {
		return ""
	}
	return v
}

// Inventory reads every GPU. lib must be initialised.
func Inventory(lib nvml.Interface) ([]GPUInfo, error) {
	n, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetCount", r)
	}
	out := make([]GPUInfo, 0, n)
	for i := 0; i < n; i++ {
		dev, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		info, err := readGPU(i, dev)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func readGPU(i int, dev nvml.Device) (GPUInfo, error) {
	g := GPUInfo{Index: i}
	var r nvml.Return
	if g.UUID, r = dev.GetUUID(); r != nvml.SUCCESS {
		return g, nvmlErr(fmt.Sprintf("nvmlDeviceGetUUID(%d)", i), r)
	}
	if name, r := dev.GetName(); supported(r) {
		g.Name = name
	}
	if mem, r := dev.GetMemoryInfo(); supported(r) {
		g.MemTotal, g.MemUsed = mem.Total, mem.Used
	}
	if ma, mi, r := dev.GetCudaComputeCapability(); supported(r) {
		g.CCMajor, g.CCMinor = ma, mi
	}
	if c, r := dev.GetClockInfo(nvml.CLOCK_SM); supported(r) {
		g.SMClockMHz = c
	}
	if c, r := dev.GetClockInfo(nvml.CLOCK_MEM); supported(r) {
		g.MemClockMHz = c
	}
	if c, r := dev.GetMaxClockInfo(nvml.CLOCK_SM); supported(r) {
		g.MaxSMClockMHz = c
	}
	if u, r := dev.GetUtilizationRates(); supported(r) {
		g.UtilGPU, g.UtilMem = u.Gpu, u.Memory
	}
	if ps, r := dev.GetComputeRunningProcesses(); supported(r) {
		for _, p := range ps {
			g.Processes = append(g.Processes, p.Pid)
		}
	}
	if e, r := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); supported(r) {
		g.EccUncorrected = e
	}
	return g, nil
}

// hardwareXIDs are XID codes that indicate the GPU itself is unhealthy
// (double-bit ECC, fallen off the bus, row-remap failure, ...), as opposed to
// application faults such as 13 (graphics engine exception) or 31 (MMU fault)
// that a bad candidate kernel causes.
var hardwareXIDs = map[uint64]bool{48: true, 63: true, 64: true, 74: true, 79: true, 92: true, 94: true, 95: true,
	119: true, 120: true}

// applicationXIDs are faults a user kernel causes (engine exception, MMU
// page fault, channel teardown after them): expected when judging bad
// candidates, so they never count against the GPU.
var applicationXIDs = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 69: true}

// IsApplicationXID reports whether an XID code is a kernel's own fault.
func IsApplicationXID(xid uint64) bool { return applicationXIDs[xid] }

// IsHardwareXID reports whether an XID code means the GPU should leave rotation at once.
func IsHardwareXID(xid uint64) bool { return hardwareXIDs[xid] }
