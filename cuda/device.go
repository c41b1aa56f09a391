package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// ErrTimeout is returned when device work does not finish within a deadline.
var ErrTimeout = errors.New("cuda: device work did not finish in time")

// ErrClosed is returned by Do on a closed Device.
var ErrClosed = errors.New("cuda: device closed")

// Device owns one GPU's primary context on a dedicated goroutine locked to
// its OS thread: the driver binds the current context per thread, so every
// call that needs the context runs through Do.
type Device struct {
	Props   DeviceProps
	ordinal int
	dev     C.CUdevice
	ctx     C.CUcontext
	work    chan func()
	quit    chan struct{}
	stopped chan struct{}
	close   sync.Once
}

// OpenDevice retains the primary context of device ordinal and starts its
// owner goroutine.
func OpenDevice(ordinal int) (*Device, error) {
	props, err := Props(ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{Props: props, ordinal: ordinal, work: make(chan func()), quit: make(chan struct{}), stopped: make(chan struct{})}
	ready := make(chan error, 1)
	go d.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Device) loop(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(d.stopped)
	if err := d.retain(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case fn := <-d.work:
			fn()
		case <-d.quit:
			C.ccu_ctx_set_current(nil)
			C.ccu_primary_release(d.dev)
			return
		}
	}
}

func (d *Device) retain() error {
	if err := check("cuDeviceGet", C.ccu_device_get(&d.dev, C.int(d.ordinal))); err != nil {
		return err
	}
	if err := check("cuDevicePrimaryCtxRetain", C.ccu_primary_retain(&d.ctx, d.dev)); err != nil {
		return err
	}
	return check("cuCtxSetCurrent", C.ccu_ctx_set_current(d.ctx))
}

// Do runs fn on the device's goroutine with the context current. It waits
// for fn even if ctx ends meanwhile (device calls cannot be interrupted), but
// does not start fn after ctx has ended.
func (d *Device) Do(ctx context.Context, fn func(c *Ctx) error) error {
	done := make(chan error, 1)
	job := func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("cuda: panic on device goroutine: %v", r)
			}
		}()
		done <- fn(&Ctx{d: d})
	}
	select {
	case d.work <- job:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.stopped:
		return ErrClosed
	}
	return <-done
}

// Reset destroys and recreates the primary context, clearing a sticky error
// (illegal address, trap) so the device can take the next job. Every
// allocation, module and stream of the old context is gone afterwards.
func (d *Device) Reset(ctx context.Context) error {
	return d.Do(ctx, func(*Ctx) error {
		C.ccu_ctx_set_current(nil)
		// Reset destroys the context but keeps our retain; release it so the
		// next retain builds a fresh context.
		if err := check("cuDevicePrimaryCtxReset", C.ccu_primary_reset(d.dev)); err != nil {
			return err
		}
		C.ccu_primary_release(d.dev)
		if err := d.retain(); err != nil {
			return err
		}
		return d.probe()
	})
}

// probe checks that the current context works (a tiny allocation).
func (d *Device) probe() error {
	var p C.CUdeviceptr
	if err := check("cuMemAlloc(probe)", C.ccu_mem_alloc(&p, 256)); err != nil {
		return err
	}
	return check("cuMemFree(probe)", C.ccu_mem_free(p))
}

// Healthy runs the probe on the device goroutine.
func (d *Device) Healthy(ctx context.Context) error {
	return d.Do(ctx, func(*Ctx) error { return d.probe() })
}

// Close releases the primary context and stops the goroutine.
func (d *Device) Close() {
	d.close.Do(func() { close(d.quit) })
	<-d.stopped
}

// Ctx is the handle passed to Do; its methods are valid only inside Do.
type Ctx struct{ d *Device }

// Device returns the device the context belongs to.
func (c *Ctx) Device() *Device { return c.d }

// DevicePtr is a device memory address.
type DevicePtr uint64

// Alloc allocates n bytes of device memory.
func (c *Ctx) Alloc(n int) (DevicePtr, error) {
	var p C.CUdeviceptr
	if err := check("cuMemAlloc", C.ccu_mem_alloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free releases device memory.
func (c *Ctx) Free(p DevicePtr) error { return check("cuMemFree", C.ccu_mem_free(C.CUdeviceptr(p))) }

// CopyHtoD copies src to device memory (synchronous).
func (c *Ctx) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.ccu_htod(C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyDtoH copies device memory into dst (synchronous).
func (c *Ctx) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.ccu_dtoh(unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

// MemsetAsync fills n bytes with v, ordered on stream s.
func (c *Ctx) MemsetAsync(dst DevicePtr, v byte, n int, s Stream) error {
	return check("cuMemsetD8Async", C.ccu_memset8_async(C.CUdeviceptr(dst), C.uchar(v), C.size_t(n), s.s))
}

// Synchronize waits for all work in the context.
func (c *Ctx) Synchronize() error { return check("cuCtxSynchronize", C.ccu_ctx_sync()) }

// MemInfo returns free and total device memory.
func (c *Ctx) MemInfo() (free, total uint64, err error) {
	var f, t C.size_t
	err = check("cuMemGetInfo", C.ccu_mem_get_info(&f, &t))
	return uint64(f), uint64(t), err
}

// Stream is a CUDA stream; the zero Stream is the legacy default stream.
type Stream struct{ s C.CUstream }

// NewStream creates a stream; nonBlocking streams do not synchronise with
// the legacy default stream.
func (c *Ctx) NewStream(nonBlocking bool) (Stream, error) {
	var s C.CUstream
	flags := C.uint(0)
	if nonBlocking {
		flags = 1
	}
	err := check("cuStreamCreate", C.ccu_stream_create(&s, flags))
	return Stream{s}, err
}

// DestroyStream destroys a stream created by NewStream.
func (c *Ctx) DestroyStream(s Stream) error {
	if s.s == nil {
		return nil
	}
	return check("cuStreamDestroy", C.ccu_stream_destroy(s.s))
}

// SyncStream waits for a stream, polling so that a hung kernel becomes
// ErrTimeout instead of blocking forever.
func (c *Ctx) SyncStream(s Stream, timeout time.Duration) error {
	return poll(timeout, func() C.CUresult { return C.ccu_stream_query(s.s) }, "cuStreamQuery")
}

// poll spins on query for the first few milliseconds (so completion is seen
// within microseconds, which the hidden-work check relies on), then sleeps
// between queries until the deadline, when it returns ErrTimeout.
func poll(timeout time.Duration, query func() C.CUresult, op string) error {
	start := time.Now()
	for {
		r := query()
		if r != codeNotReady {
			return check(op, r)
		}
		waited := time.Since(start)
		if waited > timeout {
			return ErrTimeout
		}
		if waited > 5*time.Millisecond {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// Event is a CUDA event used for timing.
type Event struct{ e C.CUevent }

// NewEvent creates a timing event.
func (c *Ctx) NewEvent() (Event, error) {
	var e C.CUevent
	err := check("cuEventCreate", C.ccu_event_create(&e, 0))
	return Event{e}, err
}

// DestroyEvent destroys an event.
func (c *Ctx) DestroyEvent(e Event) error {
	if e.e == nil {
		return nil
	}
	return check("cuEventDestroy", C.ccu_event_destroy(e.e))
}

// Record enqueues the event on stream s.
func (c *Ctx) Record(e Event, s Stream) error {
	return check("cuEventRecord", C.ccu_event_record(e.e, s.s))
}

// WaitEvent waits for an event with a deadline (see SyncStream).
func (c *Ctx) WaitEvent(e Event, timeout time.Duration) error {
	return poll(timeout, func() C.CUresult { return C.ccu_event_query(e.e) }, "cuEventQuery")
}

// Elapsed returns the milliseconds between two completed events.
func (c *Ctx) Elapsed(start, end Event) (float64, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.ccu_event_elapsed(&ms, start.e, end.e))
	return float64(ms), err
}

// Module is a loaded CUDA module.
type Module struct{ m C.CUmodule }

// LoadModule loads a PTX or cubin image. On failure the JIT error log is
// part of the error.
func (c *Ctx) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("%w: empty module image", ErrCUDA)
	}
	img := C.CBytes(append(append([]byte{}, image...), 0))
	defer C.free(img)
	var log [8192]C.char
	var m C.CUmodule
	if err := check("cuModuleLoadDataEx", C.ccu_module_load_data(&m, img, &log[0], C.uint(len(log)))); err != nil {
		if l := C.GoString(&log[0]); l != "" {
			return nil, fmt.Errorf("%w\n%s", err, l)
		}
		return nil, err
	}
	return &Module{m}, nil
}

// Unload unloads the module.
func (c *Ctx) Unload(m *Module) error {
	if m == nil || m.m == nil {
		return nil
	}
	return check("cuModuleUnload", C.ccu_module_unload(m.m))
}

// Function is a kernel in a loaded module.
type Function struct{ f C.CUfunction }

// Function looks up a kernel by its (extern "C") name.
func (c *Ctx) Function(m *Module, name string) (Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	err := check("cuModuleGetFunction("+name+")", C.ccu_module_function(&f, m.m, cname))
	return Function{f}, err
}

// Function attributes (CUfunction_attribute).
const (
	FuncMaxThreadsPerBlock = 0
	FuncSharedSizeBytes    = 1
	FuncNumRegs            = 4
	FuncMaxDynamicShared   = 8
)

// FuncAttr reads a function attribute.
func (c *Ctx) FuncAttr(f Function, attr int) (int, error) {
	var v C.int
	err := check("cuFuncGetAttribute", C.ccu_func_get_attr(&v, C.int(attr), f.f))
	return int(v), err
}

// SetFuncAttr sets a function attribute (e.g. FuncMaxDynamicShared to opt in
// to more than 48 KiB of dynamic shared memory).
func (c *Ctx) SetFuncAttr(f Function, attr, value int) error {
	return check("cuFuncSetAttribute", C.ccu_func_set_attr(f.f, C.int(attr), C.int(value)))
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// LaunchConfig is a kernel launch's geometry.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedBytes uint32
}

// Launch enqueues kernel f on stream s. Arguments may be DevicePtr, int32,
// int64, uint32, uint64, float32 or float64; each is passed by value.
func (c *Ctx) Launch(f Function, cfg LaunchConfig, s Stream, args ...any) error {
	buf := make([]byte, 8*len(args)+8)
	offsets := make([]C.int, len(args)+1)
	for i, a := range args {
		off := 8 * i
		offsets[i] = C.int(off)
		switch v := a.(type) {
		case DevicePtr:
			binary.LittleEndian.PutUint64(buf[off:], uint64(v))
		case int64:
			binary.LittleEndian.PutUint64(buf[off:], uint64(v))
		case uint64:
			binary.LittleEndian.PutUint64(buf[off:], v)
		case int32:
			binary.LittleEndian.PutUint32(buf[off:], uint32(v))
		case uint32:
			binary.LittleEndian.PutUint32(buf[off:], v)
		case float32:
			binary.LittleEndian.PutUint32(buf[off:], math.Float32bits(v))
		case float64:
			binary.LittleEndian.PutUint64(buf[off:], math.Float64bits(v))
		default:
			return fmt.Errorf("%w: kernel argument %d has unsupported type %T", ErrCUDA, i, a)
		}
	}
	g, b := cfg.Grid, cfg.Block
	return check("cuLaunchKernel", C.ccu_launch(f.f, C.uint(g.X), C.uint(g.Y), C.uint(g.Z), C.uint(b.X), C.uint(b.Y),
		C.uint(b.Z), C.uint(cfg.SharedBytes), s.s, (*C.uchar)(unsafe.Pointer(&buf[0])), C.int(len(args)), &offsets[0]))
}
