package cuda

import (
	"errors"
	"strings"
	"testing"
)

// On machines without a driver every entry point must fail with ErrNoDriver,
// never crash; on GPU machines the same calls must succeed.
func TestDriverMissingIsClearError(t *testing.T) {
	err := Load()
	if err == nil {
		n, err := DeviceCount()
		if err != nil || n < 1 {
			t.Fatalf("driver loaded but DeviceCount = %d, %v", n, err)
		}
		t.Skip("CUDA driver present; the missing-driver path is not reachable here")
	}
	if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Load() = %v, want ErrNoDriver or ErrNoDevice", err)
	}
	if _, err := DeviceCount(); !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("DeviceCount error %v does not wrap the load error", err)
	}
	if _, err := OpenDevice(0); err == nil {
		t.Fatal("OpenDevice succeeded without a driver")
	}
	if _, err := Props(0); err == nil {
		t.Fatal("Props succeeded without a driver")
	}
}

func TestOpenLibReportsDlopenError(t *testing.T) {
	err := openLib("/nonexistent/libcuda.so.1", true)
	if err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Fatalf("openLib error = %v, want the dlopen message naming the path", err)
	}
}

func TestNVRTCMissingNamesPlacesTried(t *testing.T) {
	if err := LoadNVRTC(); err == nil {
		v, err := NVRTCVersion()
		if err != nil || v == "" {
			t.Fatalf("NVRTC loaded but version = %q, %v", v, err)
		}
		t.Skip("NVRTC present")
	} else {
		if !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "libnvrtc.so") {
			t.Fatalf("LoadNVRTC error = %v, want ErrNoNVRTC naming the libraries tried", err)
		}
		if _, err := Compile("__global__ void k(){}", "k.cu", "sm_90", nil); !errors.Is(err, ErrNoNVRTC) {
			t.Fatalf("Compile without NVRTC = %v", err)
		}
	}
}

func TestErrorSticky(t *testing.T) {
	e := &Error{Op: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}
	if !e.Sticky() || !errors.Is(e, ErrCUDA) {
		t.Fatal("illegal address must be sticky and wrap ErrCUDA")
	}
	if (&Error{Code: CodeInvalidValue}).Sticky() {
		t.Fatal("invalid value is not sticky")
	}
}
