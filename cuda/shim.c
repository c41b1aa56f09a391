// shim.c resolves the CUDA driver and NVRTC entry points with dlopen/dlsym.
// Every wrapper checks its pointer, so calling into a library that was never
// opened returns an error code instead of crashing.
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define CUDA_ERROR_NOT_INITIALIZED 3
#define NVRTC_ERROR_INTERNAL 11
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

static void *cuda_lib;
static void *nvrtc_lib;

#define CU_FN(ret, name, args) static ret(*p_##name) args;
CU_FN(CUresult, cuInit, (unsigned))
CU_FN(CUresult, cuDriverGetVersion, (int *))
CU_FN(CUresult, cuDeviceGetCount, (int *))
CU_FN(CUresult, cuDeviceGet, (CUdevice *, int))
CU_FN(CUresult, cuDeviceGetName, (char *, int, CUdevice))
CU_FN(CUresult, cuDeviceGetAttribute, (int *, int, CUdevice))
CU_FN(CUresult, cuDeviceTotalMem_v2, (size_t *, CUdevice))
CU_FN(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))
CU_FN(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice))
CU_FN(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice))
CU_FN(CUresult, cuCtxSetCurrent, (CUcontext))
CU_FN(CUresult, cuCtxSynchronize, (void))
CU_FN(CUresult, cuMemGetInfo_v2, (size_t *, size_t *))
CU_FN(CUresult, cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, int *, void **))
CU_FN(CUresult, cuModuleUnload, (CUmodule))
CU_FN(CUresult, cuModuleGetFunction, (CUfunction *, CUmodule, const char *))
CU_FN(CUresult, cuFuncSetAttribute, (CUfunction, int, int))
CU_FN(CUresult, cuFuncGetAttribute, (int *, int, CUfunction))
CU_FN(CUresult, cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void **, void **))
CU_FN(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
CU_FN(CUresult, cuMemFree_v2, (CUdeviceptr))
CU_FN(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))
CU_FN(CUresult, cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))
CU_FN(CUresult, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))
CU_FN(CUresult, cuStreamCreate, (CUstream *, unsigned))
CU_FN(CUresult, cuStreamDestroy_v2, (CUstream))
CU_FN(CUresult, cuStreamSynchronize, (CUstream))
CU_FN(CUresult, cuStreamQuery, (CUstream))
CU_FN(CUresult, cuEventCreate, (CUevent *, unsigned))
CU_FN(CUresult, cuEventDestroy_v2, (CUevent))
CU_FN(CUresult, cuEventRecord, (CUevent, CUstream))
CU_FN(CUresult, cuEventSynchronize, (CUevent))
CU_FN(CUresult, cuEventQuery, (CUevent))
CU_FN(CUresult, cuEventElapsedTime, (float *, CUevent, CUevent))
CU_FN(CUresult, cuGetErrorName, (CUresult, const char **))
CU_FN(CUresult, cuGetErrorString, (CUresult, const char **))

CU_FN(nvrtcResult, nvrtcVersion, (int *, int *))
CU_FN(nvrtcResult, nvrtcCreateProgram, (nvrtcProgram *, const char *, const char *, int, const char *const *,
                                         const char *const *))
CU_FN(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram, int, const char *const *))
CU_FN(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram, size_t *))
CU_FN(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram, char *))
CU_FN(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram, size_t *))
CU_FN(nvrtcResult, nvrtcGetPTX, (nvrtcProgram, char *))
CU_FN(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram, size_t *))
CU_FN(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram, char *))
CU_FN(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram *))
CU_FN(const char *, nvrtcGetErrorString, (nvrtcResult))

#define LOAD(lib, name, required)                                                   \
	do {                                                                              \
		*(void **)(&p_##name) = dlsym(lib, #name);                                      \
		if (!p_##name && required) {                                                    \
			snprintf(err, errlen, "symbol %s missing from %s", #name, path);              \
			return -1;                                                                    \
		}                                                                               \
	} while (0)

int crucible_cuda_open(const char *path, char *err, size_t errlen) {
	if (cuda_lib) return 0;
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
	LOAD(lib, cuInit, 1);
	LOAD(lib, cuDriverGetVersion, 1);
	LOAD(lib, cuDeviceGetCount, 1);
	LOAD(lib, cuDeviceGet, 1);
	LOAD(lib, cuDeviceGetName, 1);
	LOAD(lib, cuDeviceGetAttribute, 1);
	LOAD(lib, cuDeviceTotalMem_v2, 1);
	LOAD(lib, cuDevicePrimaryCtxRetain, 1);
	LOAD(lib, cuDevicePrimaryCtxRelease_v2, 1);
	LOAD(lib, cuDevicePrimaryCtxReset_v2, 1);
	LOAD(lib, cuCtxSetCurrent, 1);
	LOAD(lib, cuCtxSynchronize, 1);
	LOAD(lib, cuMemGetInfo_v2, 1);
	LOAD(lib, cuModuleLoadDataEx, 1);
	LOAD(lib, cuModuleUnload, 1);
	LOAD(lib, cuModuleGetFunction, 1);
	LOAD(lib, cuFuncSetAttribute, 1);
	LOAD(lib, cuFuncGetAttribute, 1);
	LOAD(lib, cuLaunchKernel, 1);
	LOAD(lib, cuMemAlloc_v2, 1);
	LOAD(lib, cuMemFree_v2, 1);
	LOAD(lib, cuMemcpyHtoD_v2, 1);
	LOAD(lib, cuMemcpyDtoH_v2, 1);
	LOAD(lib, cuMemsetD8Async, 1);
	LOAD(lib, cuStreamCreate, 1);
	LOAD(lib, cuStreamDestroy_v2, 1);
	LOAD(lib, cuStreamSynchronize, 1);
	LOAD(lib, cuStreamQuery, 1);
	LOAD(lib, cuEventCreate, 1);
	LOAD(lib, cuEventDestroy_v2, 1);
	LOAD(lib, cuEventRecord, 1);
	LOAD(lib, cuEventSynchronize, 1);
	LOAD(lib, cuEventQuery, 1);
	LOAD(lib, cuEventElapsedTime, 1);
	LOAD(lib, cuGetErrorName, 1);
	LOAD(lib, cuGetErrorString, 1);
	cuda_lib = lib;
	return 0;
}

int crucible_nvrtc_open(const char *path, char *err, size_t errlen) {
	if (nvrtc_lib) return 0;
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
	LOAD(lib, nvrtcVersion, 1);
	LOAD(lib, nvrtcCreateProgram, 1);
	LOAD(lib, nvrtcCompileProgram, 1);
	LOAD(lib, nvrtcGetProgramLogSize, 1);
	LOAD(lib, nvrtcGetProgramLog, 1);
	LOAD(lib, nvrtcGetPTXSize, 1);
	LOAD(lib, nvrtcGetPTX, 1);
	LOAD(lib, nvrtcGetCUBINSize, 0); // CUDA 11.1+
	LOAD(lib, nvrtcGetCUBIN, 0);
	LOAD(lib, nvrtcDestroyProgram, 1);
	LOAD(lib, nvrtcGetErrorString, 1);
	nvrtc_lib = lib;
	return 0;
}

#define CALL(name, ...) (p_##name ? p_##name(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED)
#define NCALL(name, ...) (p_##name ? p_##name(__VA_ARGS__) : NVRTC_ERROR_INTERNAL)

CUresult ccu_init(unsigned flags) { return CALL(cuInit, flags); }
CUresult ccu_driver_version(int *v) { return CALL(cuDriverGetVersion, v); }
CUresult ccu_device_count(int *n) { return CALL(cuDeviceGetCount, n); }
CUresult ccu_device_get(CUdevice *d, int ordinal) { return CALL(cuDeviceGet, d, ordinal); }
CUresult ccu_device_name(char *name, int len, CUdevice d) { return CALL(cuDeviceGetName, name, len, d); }
CUresult ccu_device_attr(int *v, int attr, CUdevice d) { return CALL(cuDeviceGetAttribute, v, attr, d); }
CUresult ccu_device_total_mem(size_t *bytes, CUdevice d) { return CALL(cuDeviceTotalMem_v2, bytes, d); }
CUresult ccu_primary_retain(CUcontext *c, CUdevice d) { return CALL(cuDevicePrimaryCtxRetain, c, d); }
CUresult ccu_primary_release(CUdevice d) { return CALL(cuDevicePrimaryCtxRelease_v2, d); }
CUresult ccu_primary_reset(CUdevice d) { return CALL(cuDevicePrimaryCtxReset_v2, d); }
CUresult ccu_ctx_set_current(CUcontext c) { return CALL(cuCtxSetCurrent, c); }
CUresult ccu_ctx_sync(void) { return p_cuCtxSynchronize ? p_cuCtxSynchronize() : CUDA_ERROR_NOT_INITIALIZED; }
CUresult ccu_mem_get_info(size_t *f, size_t *t) { return CALL(cuMemGetInfo_v2, f, t); }

CUresult ccu_module_load_data(CUmodule *m, const void *image, char *log, unsigned loglen) {
	int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)loglen};
	if (loglen > 0) log[0] = 0;
	return CALL(cuModuleLoadDataEx, m, image, loglen > 0 ? 2 : 0, opts, vals);
}
CUresult ccu_module_unload(CUmodule m) { return CALL(cuModuleUnload, m); }
CUresult ccu_module_function(CUfunction *f, CUmodule m, const char *name) {
	return CALL(cuModuleGetFunction, f, m, name);
}
CUresult ccu_func_set_attr(CUfunction f, int attr, int value) { return CALL(cuFuncSetAttribute, f, attr, value); }
CUresult ccu_func_get_attr(int *v, int attr, CUfunction f) { return CALL(cuFuncGetAttribute, v, attr, f); }

// ccu_launch builds the kernelParams array from a packed argument buffer:
// argument i lives at argbuf + offsets[i].
CUresult ccu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    unsigned smem, CUstream s, const unsigned char *argbuf, int nargs, const int *offsets) {
	void *params[64];
	if (nargs > 64) return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < nargs; i++) params[i] = (void *)(argbuf + offsets[i]);
	return CALL(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, smem, s, params, NULL);
}
CUresult ccu_mem_alloc(CUdeviceptr *p, size_t n) { return CALL(cuMemAlloc_v2, p, n); }
CUresult ccu_mem_free(CUdeviceptr p) { return CALL(cuMemFree_v2, p); }
CUresult ccu_htod(CUdeviceptr dst, const void *src, size_t n) { return CALL(cuMemcpyHtoD_v2, dst, src, n); }
CUresult ccu_dtoh(void *dst, CUdeviceptr src, size_t n) { return CALL(cuMemcpyDtoH_v2, dst, src, n); }
CUresult ccu_memset8_async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	return CALL(cuMemsetD8Async, dst, v, n, s);
}
CUresult ccu_stream_create(CUstream *s, unsigned flags) { return CALL(cuStreamCreate, s, flags); }
CUresult ccu_stream_destroy(CUstream s) { return CALL(cuStreamDestroy_v2, s); }
CUresult ccu_stream_sync(CUstream s) { return CALL(cuStreamSynchronize, s); }
CUresult ccu_stream_query(CUstream s) { return CALL(cuStreamQuery, s); }
CUresult ccu_event_create(CUevent *e, unsigned flags) { return CALL(cuEventCreate, e, flags); }
CUresult ccu_event_destroy(CUevent e) { return CALL(cuEventDestroy_v2, e); }
CUresult ccu_event_record(CUevent e, CUstream s) { return CALL(cuEventRecord, e, s); }
CUresult ccu_event_sync(CUevent e) { return CALL(cuEventSynchronize, e); }
CUresult ccu_event_query(CUevent e) { return CALL(cuEventQuery, e); }
CUresult ccu_event_elapsed(float *ms, CUevent a, CUevent b) { return CALL(cuEventElapsedTime, ms, a, b); }

const char *ccu_error_name(CUresult r) {
	const char *s = NULL;
	if (p_cuGetErrorName && p_cuGetErrorName(r, &s) == 0 && s) return s;
	return "CUDA_ERROR_UNKNOWN_CODE";
}
const char *ccu_error_string(CUresult r) {
	const char *s = NULL;
	if (p_cuGetErrorString && p_cuGetErrorString(r, &s) == 0 && s) return s;
	return "unrecognised CUDA error code";
}

nvrtcResult cnvrtc_version(int *major, int *minor) { return NCALL(nvrtcVersion, major, minor); }
nvrtcResult cnvrtc_create(nvrtcProgram *p, const char *src, const char *name) {
	return NCALL(nvrtcCreateProgram, p, src, name, 0, NULL, NULL);
}
nvrtcResult cnvrtc_compile(nvrtcProgram p, int nopts, const char **opts) {
	return NCALL(nvrtcCompileProgram, p, nopts, (const char *const *)opts);
}
nvrtcResult cnvrtc_log_size(nvrtcProgram p, size_t *n) { return NCALL(nvrtcGetProgramLogSize, p, n); }
nvrtcResult cnvrtc_log(nvrtcProgram p, char *log) { return NCALL(nvrtcGetProgramLog, p, log); }
nvrtcResult cnvrtc_ptx_size(nvrtcProgram p, size_t *n) { return NCALL(nvrtcGetPTXSize, p, n); }
nvrtcResult cnvrtc_ptx(nvrtcProgram p, char *ptx) { return NCALL(nvrtcGetPTX, p, ptx); }
int cnvrtc_has_cubin(void) { return p_nvrtcGetCUBIN != NULL && p_nvrtcGetCUBINSize != NULL; }
nvrtcResult cnvrtc_cubin_size(nvrtcProgram p, size_t *n) { return NCALL(nvrtcGetCUBINSize, p, n); }
nvrtcResult cnvrtc_cubin(nvrtcProgram p, char *cubin) { return NCALL(nvrtcGetCUBIN, p, cubin); }
nvrtcResult cnvrtc_destroy(nvrtcProgram *p) { return NCALL(nvrtcDestroyProgram, p); }
const char *cnvrtc_error_string(nvrtcResult r) {
	return p_nvrtcGetErrorString ? p_nvrtcGetErrorString(r) : "NVRTC not loaded";
}
