package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoHealthyGPU is returned by Acquire when every GPU has left rotation.
var ErrNoHealthyGPU = errors.New("cuda: no healthy GPU in rotation")

// ManagerConfig tunes the device manager.
type ManagerConfig struct {
	JobsPerGPU int // concurrent jobs per GPU; 1 keeps timings clean
	MaxFaults  int // consecutive infrastructure faults before a GPU leaves rotation
	// SkipForeignBusy skips GPUs on which processes other than this one run
	// compute work, so that shared machines do not skew timings.
	SkipForeignBusy bool
}

// DefaultManagerConfig returns one job per GPU, three faults to retirement.
func DefaultManagerConfig() ManagerConfig { return ManagerConfig{JobsPerGPU: 1, MaxFaults: 3} }

// Validate reports every bad field.
func (c ManagerConfig) Validate() error {
	var errs []error
	if c.JobsPerGPU < 1 {
		errs = append(errs, fmt.Errorf("jobs_per_gpu must be >= 1, got %d", c.JobsPerGPU))
	}
	if c.MaxFaults < 1 {
		errs = append(errs, fmt.Errorf("max_faults must be >= 1, got %d", c.MaxFaults))
	}
	return errors.Join(errs...)
}

// GPUStatus is a GPU's place in the rotation.
type GPUStatus struct {
	GPUInfo
	Busy    int    `json:"busy"`
	Faults  int    `json:"faults"`
	Retired bool   `json:"retired"`
	Reason  string `json:"reason"`
	AppXIDs int    `json:"app_xids"`
}

type slot struct {
	info    GPUInfo
	dev     nvml.Device // nil when the manager was built without NVML
	busy    int
	faults  int
	retired bool
	reason  string
	eccSeen uint64
	appXIDs int // application-caused XIDs seen (bad kernels), informational
}

// Manager hands jobs to healthy idle GPUs and takes GPUs that fault
// repeatedly (or report hardware XIDs / new uncorrectable ECC errors) out of
// rotation.
type Manager struct {
	cfg    ManagerConfig
	lib    nvml.Interface // nil without NVML
	events nvml.EventSet
	mu     sync.Mutex
	slots  []*slot
	wake   chan struct{} // closed and replaced whenever a GPU is released
}

// NewManager initialises NVML, reads the inventory and registers for XID
// and double-bit ECC events where the devices support them.
func NewManager(lib nvml.Interface, cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := InitNVML(lib); err != nil {
		return nil, err
	}
	inv, err := Inventory(lib)
	if err != nil {
		lib.Shutdown()
		return nil, err
	}
	m := &Manager{cfg: cfg, lib: lib, wake: make(chan struct{})}
	if es, r := lib.EventSetCreate(); r == nvml.SUCCESS {
		m.events = es
	}
	for _, g := range inv {
		dev, r := lib.DeviceGetHandleByIndex(g.Index)
		if r != nvml.SUCCESS {
			lib.Shutdown()
			return nil, nvmlErr("nvmlDeviceGetHandleByIndex", r)
		}
		if m.events != nil {
			// NOT_SUPPORTED on some devices; health then relies on ECC counters.
			dev.RegisterEvents(nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError, m.events)
		}
		m.slots = append(m.slots, &slot{info: g, dev: dev, eccSeen: g.EccUncorrected})
	}
	return m, nil
}

// NewCountManager manages n GPUs without NVML (no health signals beyond
// reported faults), for hosts where the driver works but NVML does not.
func NewCountManager(n int, cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, wake: make(chan struct{})}
	for i := 0; i < n; i++ {
		m.slots = append(m.slots, &slot{info: GPUInfo{Index: i}})
	}
	return m, nil
}

// Close shuts NVML down.
func (m *Manager) Close() {
	if m.events != nil {
		m.events.Free()
	}
	if m.lib != nil {
		m.lib.Shutdown()
	}
}

// Lease is one job's hold on a GPU.
type Lease struct {
	m    *Manager
	s    *slot
	once sync.Once
}

// Index is the GPU's NVML/CUDA index.
func (l *Lease) Index() int { return l.s.info.Index }

// Info is the GPU's inventory at acquisition.
func (l *Lease) Info() GPUInfo { return l.s.info }

// Release returns the GPU. infraFault says the job failed for reasons that
// were not the candidate's (driver error, device lost, context corruption
// that a reset did not clear); consecutive faults retire the GPU.
func (l *Lease) Release(infraFault bool) {
	l.once.Do(func() {
		m := l.m
		m.mu.Lock()
		defer m.mu.Unlock()
		l.s.busy--
		if infraFault {
			l.s.faults++
			if l.s.faults >= m.cfg.MaxFaults && !l.s.retired {
				l.s.retired = true
				l.s.reason = fmt.Sprintf("%d consecutive infrastructure faults", l.s.faults)
			}
		} else {
			l.s.faults = 0
		}
		close(m.wake)
		m.wake = make(chan struct{})
	})
}

// Acquire blocks until a healthy GPU has a free job slot, preferring the
// least busy and lowest-index GPU, and returns a lease on it.
func (m *Manager) Acquire(ctx context.Context) (*Lease, error) {
	for {
		m.mu.Lock()
		m.pollHealthLocked()
		var best *slot
		healthy := 0
		for _, s := range m.slots {
			if s.retired {
				continue
			}
			healthy++
			if s.busy >= m.cfg.JobsPerGPU || (m.cfg.SkipForeignBusy && m.foreignBusy(s)) {
				continue
			}
			if best == nil || s.busy < best.busy {
				best = s
			}
		}
		if healthy == 0 {
			m.mu.Unlock()
			return nil, ErrNoHealthyGPU
		}
		if best != nil {
			best.busy++
			m.mu.Unlock()
			return &Lease{m: m, s: best}, nil
		}
		wake := m.wake
		m.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (m *Manager) foreignBusy(s *slot) bool {
	if s.dev == nil {
		return false
	}
	ps, r := s.dev.GetComputeRunningProcesses()
	if r != nvml.SUCCESS {
		return false
	}
	self := uint32(os.Getpid())
	for _, p := range ps {
		if p.Pid != self {
			return true
		}
	}
	return false
}

// pollHealthLocked drains pending NVML events and re-reads the ECC counters;
// hardware XIDs and new uncorrectable ECC errors retire a GPU at once, other
// XIDs (usually caused by a bad kernel) count as one fault.
func (m *Manager) pollHealthLocked() {
	if m.events != nil {
		for i := 0; i < 64; i++ {
			ev, r := m.events.Wait(0)
			if r != nvml.SUCCESS {
				break // ERROR_TIMEOUT: nothing pending
			}
			s := m.slotFor(ev.Device)
			if s == nil {
				continue
			}
			switch {
			case ev.EventType&nvml.EventTypeDoubleBitEccError != 0:
				m.retireLocked(s, "double-bit ECC error event")
			case IsHardwareXID(ev.EventData):
				m.retireLocked(s, fmt.Sprintf("hardware XID %d", ev.EventData))
			case IsApplicationXID(ev.EventData):
				s.appXIDs++
			default:
				s.faults++
				if s.faults >= m.cfg.MaxFaults {
					m.retireLocked(s, fmt.Sprintf("XID %d after %d faults", ev.EventData, s.faults))
				}
			}
		}
	}
	for _, s := range m.slots {
		if s.dev == nil || s.retired {
			continue
		}
		if e, r := s.dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r == nvml.SUCCESS {
			if e > s.eccSeen {
				m.retireLocked(s, fmt.Sprintf("uncorrectable ECC errors rose from %d to %d", s.eccSeen, e))
			}
			s.eccSeen = e
		}
	}
}

func (m *Manager) retireLocked(s *slot, reason string) {
	if !s.retired {
		s.retired, s.reason = true, reason
	}
}

func (m *Manager) slotFor(d nvml.Device) *slot {
	if d == nil {
		return nil
	}
	uuid, r := d.GetUUID()
	for _, s := range m.slots {
		if s.dev == d || (r == nvml.SUCCESS && s.info.UUID == uuid) {
			return s
		}
	}
	return nil
}

// Status lists every GPU's rotation state, ordered by index.
func (m *Manager) Status() []GPUStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pollHealthLocked()
	out := make([]GPUStatus, 0, len(m.slots))
	for _, s := range m.slots {
		out = append(out, GPUStatus{GPUInfo: s.info, Busy: s.busy, Faults: s.faults, Retired: s.retired, Reason: s.reason, AppXIDs: s.appXIDs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Len is the number of GPUs managed (retired ones included).
func (m *Manager) Len() int { return len(m.slots) }
