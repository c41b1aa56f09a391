// shim.h declares the handful of CUDA driver and NVRTC types and prototypes
// Crucible needs, so the package builds with no CUDA toolkit installed. The
// libraries are opened with dlopen at run time (shim.c).
#ifndef CRUCIBLE_CUDA_SHIM_H
#define CRUCIBLE_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

// Loading. Each returns 0 on success, else fills err.
int crucible_cuda_open(const char *path, char *err, size_t errlen);
int crucible_nvrtc_open(const char *path, char *err, size_t errlen);

// Driver API wrappers (same semantics as the cu* functions).
CUresult ccu_init(unsigned flags);
CUresult ccu_driver_version(int *v);
CUresult ccu_device_count(int *n);
CUresult ccu_device_get(CUdevice *d, int ordinal);
CUresult ccu_device_name(char *name, int len, CUdevice d);
CUresult ccu_device_attr(int *v, int attr, CUdevice d);
CUresult ccu_device_total_mem(size_t *bytes, CUdevice d);
CUresult ccu_primary_retain(CUcontext *c, CUdevice d);
CUresult ccu_primary_release(CUdevice d);
CUresult ccu_primary_reset(CUdevice d);
CUresult ccu_ctx_set_current(CUcontext c);
CUresult ccu_ctx_sync(void);
CUresult ccu_mem_get_info(size_t *free_b, size_t *total_b);
CUresult ccu_module_load_data(CUmodule *m, const void *image, char *log, unsigned loglen);
CUresult ccu_module_unload(CUmodule m);
CUresult ccu_module_function(CUfunction *f, CUmodule m, const char *name);
CUresult ccu_func_set_attr(CUfunction f, int attr, int value);
CUresult ccu_func_get_attr(int *v, int attr, CUfunction f);
CUresult ccu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    unsigned smem, CUstream s, const unsigned char *argbuf, int nargs, const int *offsets);
CUresult ccu_mem_alloc(CUdeviceptr *p, size_t n);
CUresult ccu_mem_free(CUdeviceptr p);
CUresult ccu_htod(CUdeviceptr dst, const void *src, size_t n);
CUresult ccu_dtoh(void *dst, CUdeviceptr src, size_t n);
CUresult ccu_memset8_async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CUresult ccu_stream_create(CUstream *s, unsigned flags);
CUresult ccu_stream_destroy(CUstream s);
CUresult ccu_stream_sync(CUstream s);
CUresult ccu_stream_query(CUstream s);
CUresult ccu_event_create(CUevent *e, unsigned flags);
CUresult ccu_event_destroy(CUevent e);
CUresult ccu_event_record(CUevent e, CUstream s);
CUresult ccu_event_sync(CUevent e);
CUresult ccu_event_query(CUevent e);
CUresult ccu_event_elapsed(float *ms, CUevent a, CUevent b);
const char *ccu_error_name(CUresult r);
const char *ccu_error_string(CUresult r);

// NVRTC wrappers.
nvrtcResult cnvrtc_version(int *major, int *minor);
nvrtcResult cnvrtc_create(nvrtcProgram *p, const char *src, const char *name);
nvrtcResult cnvrtc_compile(nvrtcProgram p, int nopts, const char **opts);
nvrtcResult cnvrtc_log_size(nvrtcProgram p, size_t *n);
nvrtcResult cnvrtc_log(nvrtcProgram p, char *log);
nvrtcResult cnvrtc_ptx_size(nvrtcProgram p, size_t *n);
nvrtcResult cnvrtc_ptx(nvrtcProgram p, char *ptx);
int cnvrtc_has_cubin(void);
nvrtcResult cnvrtc_cubin_size(nvrtcProgram p, size_t *n);
nvrtcResult cnvrtc_cubin(nvrtcProgram p, char *cubin);
nvrtcResult cnvrtc_destroy(nvrtcProgram *p);
const char *cnvrtc_error_string(nvrtcResult r);

#endif
