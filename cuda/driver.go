// Package cuda binds the parts of the CUDA driver API and NVRTC that the
// kernel verifier needs, loading libcuda.so.1 and libnvrtc with dlopen at run
// time. No CUDA header or library is needed to build it, so binaries built on
// GPU-less machines run everywhere; where the driver is absent every entry
// point returns ErrNoDriver. NVML inventory and the device manager live in
// nvml.go and manager.go.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// Category sentinels; errors from this package wrap one of them.
var (
	ErrNoDriver = errors.New("cuda: driver library libcuda.so.1 not available")
	ErrNoNVRTC  = errors.New("cuda: NVRTC library not available")
	ErrNoDevice = errors.New("cuda: no CUDA device")
	ErrCUDA     = errors.New("cuda: driver call failed")
	ErrCompile  = errors.New("cuda: NVRTC compilation failed")
)

// Error is a failed driver call.
type Error struct {
	Op   string
	Code int
	Name string
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, e.Name, e.Code, e.Msg)
}
func (e *Error) Unwrap() error { return ErrCUDA }

// Sticky reports whether the error poisons the context: after it every call
// fails until the primary context is reset.
func (e *Error) Sticky() bool {
	switch e.Code {
	case 700, 701, 702, 714, 715, 716, 717, 718, 719: // illegal address, launch out of resources/timeout, traps, exceptions
		return true
	}
	return false
}

// Error codes callers test for.
const (
	codeNotReady            = 600
	CodeInvalidValue        = 1
	CodeOutOfMemory         = 2
	CodeLaunchOutOfResource = 701
)

func check(op string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: op, Code: int(r), Name: C.GoString(C.ccu_error_name(r)), Msg: C.GoString(C.ccu_error_string(r))}
}

var (
	loadOnce  sync.Once
	loadErr   error
	nvrtcOnce sync.Once
	nvrtcErr  error
	nvrtcPath string
)

// Load opens libcuda.so.1 and calls cuInit once. It is safe to call often.
// CRUCIBLE_LIBCUDA overrides the library path.
func Load() error {
	loadOnce.Do(func() {
		path := "libcuda.so.1"
		if p := os.Getenv("CRUCIBLE_LIBCUDA"); p != "" {
			path = p
		}
		if err := openLib(path, true); err != nil {
			loadErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		if err := check("cuInit", C.ccu_init(0)); err != nil {
			// cuInit fails with CUDA_ERROR_NO_DEVICE (100) on driver-only hosts.
			var ce *Error
			if errors.As(err, &ce) && ce.Code == 100 {
				loadErr = fmt.Errorf("%w: %v", ErrNoDevice, err)
				return
			}
			loadErr = fmt.Errorf("%w: %v", ErrNoDriver, err)
		}
	})
	return loadErr
}

func openLib(path string, driver bool) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	var rc C.int
	if driver {
		rc = C.crucible_cuda_open(cpath, &buf[0], C.size_t(len(buf)))
	} else {
		rc = C.crucible_nvrtc_open(cpath, &buf[0], C.size_t(len(buf)))
	}
	if rc != 0 {
		return errors.New(C.GoString(&buf[0]))
	}
	return nil
}

// nvrtcCandidates lists where NVRTC is looked for, in order: the
// CRUCIBLE_NVRTC override, the loader's search path under the usual sonames,
// then toolkit and Python-wheel install locations.
func nvrtcCandidates() []string {
	var out []string
	if p := os.Getenv("CRUCIBLE_NVRTC"); p != "" {
		out = append(out, p)
	}
	out = append(out, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")
	patterns := []string{
		"/usr/local/cuda/lib64/libnvrtc.so*",
		"/usr/local/cuda/targets/*/lib/libnvrtc.so*",
		"/usr/local/cuda-*/lib64/libnvrtc.so*",
		"/usr/lib/x86_64-linux-gnu/libnvrtc.so*",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libnvrtc.so*",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so*",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libnvrtc.so*",
		"/usr/lib/python3/dist-packages/nvidia/*/lib/libnvrtc.so*",
	}
	for _, pat := range patterns {
		m, _ := filepath.Glob(pat)
		for _, f := range m {
			if !containsAny(filepath.Base(f), "builtins", "alt") {
				out = append(out, f)
			}
		}
	}
	return out
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// LoadNVRTC opens the first NVRTC library found. The returned error names
// every place tried.
func LoadNVRTC() error {
	nvrtcOnce.Do(func() {
		var tried []string
		for _, p := range nvrtcCandidates() {
			if err := openLib(p, false); err != nil {
				tried = append(tried, p)
				continue
			}
			nvrtcPath = p
			return
		}
		nvrtcErr = fmt.Errorf("%w: tried %v", ErrNoNVRTC, tried)
	})
	return nvrtcErr
}

// DriverVersion returns the CUDA driver API version (e.g. 13000).
func DriverVersion() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var v C.int
	if err := check("cuDriverGetVersion", C.ccu_driver_version(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// NVRTCVersion returns NVRTC's version and the library path it came from.
func NVRTCVersion() (string, error) {
	if err := LoadNVRTC(); err != nil {
		return "", err
	}
	var maj, min C.int
	if r := C.cnvrtc_version(&maj, &min); r != 0 {
		return "", fmt.Errorf("%w: nvrtcVersion: %s", ErrNoNVRTC, C.GoString(C.cnvrtc_error_string(r)))
	}
	return fmt.Sprintf("%d.%d (%s)", maj, min, nvrtcPath), nil
}

// DeviceCount returns the number of CUDA devices visible to this process.
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.ccu_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device attribute numbers (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock   = 1
	attrMaxSharedPerBlock    = 8
	attrClockRateKHz         = 13
	attrMultiprocessors      = 16
	attrMemClockRateKHz      = 36
	attrL2Bytes              = 38
	attrCCMajor              = 75
	attrCCMinor              = 76
	attrMaxSharedOptinPerBlk = 97
)

// DeviceProps is what the verifier records about a device.
type DeviceProps struct {
	Ordinal            int    `json:"ordinal"`
	Name               string `json:"name"`
	TotalMem           uint64 `json:"total_mem"`
	CCMajor, CCMinor   int
	Multiprocessors    int `json:"multiprocessors"`
	ClockKHz           int `json:"clock_khz"`
	MemClockKHz        int `json:"mem_clock_khz"`
	L2Bytes            int `json:"l2_bytes"`
	MaxThreadsPerBlock int `json:"max_threads_per_block"`
	MaxSharedPerBlock  int `json:"max_shared_per_block"`
	MaxSharedOptin     int `json:"max_shared_optin"`
}

// Arch returns the sm_XY name of the device's compute capability.
func (p DeviceProps) Arch() string { return fmt.Sprintf("sm_%d%d", p.CCMajor, p.CCMinor) }

// Props reads a device's properties. It needs no context.
func Props(ordinal int) (DeviceProps, error) {
	if err := Load(); err != nil {
		return DeviceProps{}, err
	}
	var d C.CUdevice
	if err := check("cuDeviceGet", C.ccu_device_get(&d, C.int(ordinal))); err != nil {
		return DeviceProps{}, err
	}
	p := DeviceProps{Ordinal: ordinal}
	var name [256]C.char
	if err := check("cuDeviceGetName", C.ccu_device_name(&name[0], C.int(len(name)), d)); err != nil {
		return p, err
	}
	p.Name = C.GoString(&name[0])
	var mem C.size_t
	if err := check("cuDeviceTotalMem", C.ccu_device_total_mem(&mem, d)); err != nil {
		return p, err
	}
	p.TotalMem = uint64(mem)
	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrCCMajor, &p.CCMajor}, {attrCCMinor, &p.CCMinor}, {attrMultiprocessors, &p.Multiprocessors},
		{attrClockRateKHz, &p.ClockKHz}, {attrMemClockRateKHz, &p.MemClockKHz}, {attrL2Bytes, &p.L2Bytes},
		{attrMaxThreadsPerBlock, &p.MaxThreadsPerBlock}, {attrMaxSharedPerBlock, &p.MaxSharedPerBlock},
		{attrMaxSharedOptinPerBlk, &p.MaxSharedOptin},
	} {
		var v C.int
		if err := check("cuDeviceGetAttribute", C.ccu_device_attr(&v, C.int(a.attr), d)); err != nil {
			return p, err
		}
		*a.dst = int(v)
	}
	return p, nil
}
