package cuda

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeGPUs builds a mock DGX H100 with n GPUs whose health signals the test
// controls: per-GPU uncorrectable ECC counters and a queue of NVML events.
type fakeGPUs struct {
	srv    *server.Server
	mu     sync.Mutex
	ecc    []uint64
	events []nvml.EventData
}

func newFakeGPUs(t *testing.T, n int) *fakeGPUs {
	t.Helper()
	f := &fakeGPUs{srv: dgxh100.New()}
	f.srv.Devices = f.srv.Devices[:n]
	f.ecc = make([]uint64, n)
	for i, d := range f.srv.Devices {
		i, dev := i, d.(*server.Device)
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 3}, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.ecc[i], nvml.SUCCESS
		}
		dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	f.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.events) == 0 {
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
				ev := f.events[0]
				f.events = f.events[1:]
				return ev, nvml.SUCCESS
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return f
}

func (f *fakeGPUs) xid(i int, code uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, nvml.EventData{Device: f.srv.Devices[i], EventType: nvml.EventTypeXidCriticalError, EventData: code})
}

func TestInventoryFromMock(t *testing.T) {
	f := newFakeGPUs(t, 4)
	if err := InitNVML(f.srv); err != nil {
		t.Fatal(err)
	}
	inv, err := Inventory(f.srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != 4 || inv[2].Index != 2 || inv[2].UUID == "" || inv[2].Name == "" || inv[2].MemTotal == 0 ||
		inv[2].CCMajor != 9 || inv[2].SMClockMHz != 1980 {
		t.Fatalf("inventory = %+v", inv)
	}
}

func TestNVMLMissingLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	if _, err := NewManager(lib, DefaultManagerConfig()); !errors.Is(err, ErrNoNVML) {
		t.Fatalf("NewManager = %v, want ErrNoNVML", err)
	}
}

func TestManagerOneJobPerGPU(t *testing.T) {
	f := newFakeGPUs(t, 2)
	m, err := NewManager(f.srv, DefaultManagerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	a, _ := m.Acquire(ctx)
	b, _ := m.Acquire(ctx)
	if a.Index() == b.Index() {
		t.Fatalf("two jobs on GPU %d while another was idle", a.Index())
	}
	// A third job must wait until one GPU is released.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := m.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third Acquire = %v, want to block", err)
	}
	got := make(chan int)
	go func() {
		l, err := m.Acquire(ctx)
		if err != nil {
			got <- -1
			return
		}
		got <- l.Index()
	}()
	b.Release(false)
	if idx := <-got; idx != b.Index() {
		t.Fatalf("waiting job got GPU %d, want released GPU %d", idx, b.Index())
	}
	a.Release(false)
}

func TestManagerRetiresFaultingGPU(t *testing.T) {
	f := newFakeGPUs(t, 2)
	cfg := DefaultManagerConfig()
	cfg.MaxFaults = 2
	m, err := NewManager(f.srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	// GPU 0 faults twice in a row: it leaves rotation.
	for i := 0; i < 2; i++ {
		l, err := m.Acquire(ctx)
		if err != nil || l.Index() != 0 {
			t.Fatalf("acquire %d = %v, %v", i, l, err)
		}
		l.Release(true)
	}
	st := m.Status()
	if !st[0].Retired || st[1].Retired {
		t.Fatalf("status after two faults = %+v", st)
	}
	for i := 0; i < 3; i++ {
		l, err := m.Acquire(ctx)
		if err != nil || l.Index() != 1 {
			t.Fatalf("after retirement, job went to %v, %v", l, err)
		}
		l.Release(false)
	}
	// A hardware XID on GPU 1 retires it too; then nothing is left.
	f.xid(1, 79)
	if _, err := m.Acquire(ctx); !errors.Is(err, ErrNoHealthyGPU) {
		t.Fatalf("Acquire with all GPUs retired = %v", err)
	}
	if st := m.Status(); st[1].Reason != "hardware XID 79" {
		t.Fatalf("reason = %q", st[1].Reason)
	}
}

func TestManagerHealthSignals(t *testing.T) {
	f := newFakeGPUs(t, 3)
	m, err := NewManager(f.srv, DefaultManagerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// A rising uncorrectable ECC count on GPU 0 retires it.
	f.mu.Lock()
	f.ecc[0] = 2
	f.mu.Unlock()
	// Application XIDs (a bad kernel's page fault) never count against a
	// GPU; an unknown XID on GPU 1 is one fault, not retirement.
	f.xid(1, 31)
	f.xid(1, 43)
	f.xid(1, 13)
	f.xid(1, 999)
	st := m.Status()
	if !st[0].Retired || st[1].Retired || st[1].Faults != 1 || st[1].AppXIDs != 3 {
		t.Fatalf("status = %+v", st)
	}
	l, err := m.Acquire(context.Background())
	if err != nil || l.Index() == 0 {
		t.Fatalf("job went to retired GPU: %v %v", l, err)
	}
	l.Release(false)
}

func TestManagerSkipsForeignBusyGPU(t *testing.T) {
	f := newFakeGPUs(t, 2)
	f.srv.Devices[0].(*server.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 1}}, nvml.SUCCESS
	}
	cfg := DefaultManagerConfig()
	cfg.SkipForeignBusy = true
	m, err := NewManager(f.srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Acquire(context.Background())
	if err != nil || l.Index() != 1 {
		t.Fatalf("got %v, %v; want GPU 1 (GPU 0 runs a foreign process)", l, err)
	}
}

func TestManagerConfigValidate(t *testing.T) {
	err := ManagerConfig{}.Validate()
	if err == nil {
		t.Fatal("zero config validated")
	}
	for _, f := range []string{"jobs_per_gpu", "max_faults"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %s", err, f)
		}
	}
}
