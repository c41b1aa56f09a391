package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// CompileResult is the output of one NVRTC compilation.
type CompileResult struct {
	Image   []byte   // cubin when NVRTC can emit one for the arch, else PTX
	IsCubin bool     // whether Image is a cubin
	Log     string   // the compiler's log (warnings on success, errors on failure)
	Options []string // the options passed to NVRTC
}

// Compile compiles CUDA C++ source to a loadable image for arch (e.g.
// "sm_90"). Emitting a cubin for the exact arch avoids the driver's PTX JIT,
// whose PTX ISA may be older than a newer NVRTC's. On a compilation error the
// returned error wraps ErrCompile and the result still carries the log.
func Compile(src, name, arch string, extra []string) (CompileResult, error) {
	if err := LoadNVRTC(); err != nil {
		return CompileResult{}, err
	}
	cubin := C.cnvrtc_has_cubin() != 0
	opts := []string{"--std=c++17", "-default-device"}
	if cubin {
		opts = append(opts, "--gpu-architecture="+arch)
	} else {
		opts = append(opts, "--gpu-architecture=compute_"+arch[len("sm_"):])
	}
	for _, dir := range []string{"/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include"} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			opts = append(opts, "--include-path="+dir)
			break
		}
	}
	opts = append(opts, extra...)
	res := CompileResult{IsCubin: cubin, Options: opts}

	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog C.nvrtcProgram
	if r := C.cnvrtc_create(&prog, csrc, cname); r != 0 {
		return res, fmt.Errorf("%w: nvrtcCreateProgram: %s", ErrCompile, C.GoString(C.cnvrtc_error_string(r)))
	}
	defer C.cnvrtc_destroy(&prog)

	copts := make([]*C.char, len(opts))
	for i, o := range opts {
		copts[i] = C.CString(o)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	// The options array is C memory: cgo forbids passing Go memory holding
	// C pointers to C only when it holds Go pointers, but keep it simple.
	carr := (**C.char)(C.malloc(C.size_t(len(copts)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(carr))
	arr := unsafe.Slice(carr, len(copts))
	copy(arr, copts)
	rc := C.cnvrtc_compile(prog, C.int(len(copts)), carr)

	var logSize C.size_t
	if C.cnvrtc_log_size(prog, &logSize) == 0 && logSize > 1 {
		buf := make([]byte, int(logSize))
		C.cnvrtc_log(prog, (*C.char)(unsafe.Pointer(&buf[0])))
		res.Log = C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
	}
	if rc != 0 {
		return res, fmt.Errorf("%w: %s", ErrCompile, C.GoString(C.cnvrtc_error_string(rc)))
	}
	var size C.size_t
	if cubin {
		if r := C.cnvrtc_cubin_size(prog, &size); r != 0 {
			return res, fmt.Errorf("%w: nvrtcGetCUBINSize: %s", ErrCompile, C.GoString(C.cnvrtc_error_string(r)))
		}
		res.Image = make([]byte, int(size))
		C.cnvrtc_cubin(prog, (*C.char)(unsafe.Pointer(&res.Image[0])))
		return res, nil
	}
	if r := C.cnvrtc_ptx_size(prog, &size); r != 0 {
		return res, fmt.Errorf("%w: nvrtcGetPTXSize: %s", ErrCompile, C.GoString(C.cnvrtc_error_string(r)))
	}
	res.Image = make([]byte, int(size))
	C.cnvrtc_ptx(prog, (*C.char)(unsafe.Pointer(&res.Image[0])))
	return res, nil
}
