package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeJudge passes candidates whose code is "ok", fails the rest, and can
// hold every call at a gate to measure the fan-out's concurrency.
type fakeJudge struct {
	domain      string
	gate        chan struct{} // nil: no hold
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
	verdict     func(Candidate) Evidence // overrides the default verdict
	closed      atomic.Bool
}

func (f *fakeJudge) Domain() string { return f.domain }

func (f *fakeJudge) Judge(ctx context.Context, item Item, c Candidate) (Evidence, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return Evidence{}, ctx.Err()
		}
	}
	if f.verdict != nil {
		return f.verdict(c), nil
	}
	ev := Evidence{Status: StatusPass, Attempts: 1}
	if c.Code != "ok" {
		ev.Status, ev.FailureStage = StatusFail, StageMismatch
	}
	return ev, nil
}

func (f *fakeJudge) SelfCheck(ctx context.Context, item Item) (Evidence, error) {
	return f.Judge(ctx, item, Candidate{ItemID: item.ItemID, CandidateID: ReferenceCandidateID, Code: item.Reference})
}
func (f *fakeJudge) Check(context.Context) error { return nil }
func (f *fakeJudge) Close() error                { f.closed.Store(true); return nil }

func TestJudgesFanOutIsBoundedAndIndexed(t *testing.T) {
	f := &fakeJudge{domain: DomainRTL, gate: make(chan struct{})}
	js, err := NewJudges(3, f)
	if err != nil {
		t.Fatal(err)
	}
	items := ItemsByID([]Item{{ItemID: "a", Domain: DomainRTL}, {ItemID: "k", Domain: DomainKernel}})
	var cands []Candidate
	for i := 0; i < 20; i++ {
		code := "ok"
		if i%3 == 0 {
			code = "bad"
		}
		cands = append(cands, Candidate{ItemID: "a", CandidateID: fmt.Sprint(i), Code: code})
	}
	cands = append(cands, Candidate{ItemID: "k", CandidateID: "kernel"}, Candidate{ItemID: "zz", CandidateID: "orphan"})
	done := make(chan struct{})
	var evs []Evidence
	go func() {
		defer close(done)
		evs, err = js.JudgeAll(context.Background(), items, cands)
	}()
	for i := 0; i < 20; i++ { // release the held calls one by one
		f.gate <- struct{}{}
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if m := f.maxInFlight.Load(); m > 3 || m < 1 {
		t.Errorf("max concurrent Judge calls %d, want 1..3", m)
	}
	for i, ev := range evs[:20] {
		want := StatusPass
		if i%3 == 0 {
			want = StatusFail
		}
		if ev.CandidateID != fmt.Sprint(i) || ev.ItemID != "a" || ev.Status != want {
			t.Errorf("row %d: %s/%s %s, want a/%d %s", i, ev.ItemID, ev.CandidateID, ev.Status, i, want)
		}
	}
	if ev := evs[20]; ev.Status != StatusUnjudged || ev.FailureStage != StageToolchainUnsupported {
		t.Errorf("kernel candidate without a kernel judge: %s/%s", ev.Status, ev.FailureStage)
	}
	if ev := evs[21]; ev.Status != StatusUnjudged || ev.FailureStage != StagePayloadCorrupt {
		t.Errorf("candidate without an item: %s/%s", ev.Status, ev.FailureStage)
	}
	if err := js.Close(); err != nil || !f.closed.Load() {
		t.Errorf("Close: %v, closed %v", err, f.closed.Load())
	}
}

func TestJudgesRejectsBrokenVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Evidence
	}{
		{"pass with a failure stage", Evidence{Status: StatusPass, FailureStage: StageMismatch}},
		{"infrastructure fault blamed on the candidate", Evidence{Status: StatusFail, FailureStage: StageWorkerCrash}},
		{"fail without a stage", Evidence{Status: StatusFail}},
		{"stage outside the taxonomy", Evidence{Status: StatusUnjudged, FailureStage: "cosmic_ray"}},
		{"unknown status", Evidence{Status: "maybe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeJudge{domain: DomainRTL, verdict: func(Candidate) Evidence { return tc.ev }}
			js, _ := NewJudges(1, f)
			_, err := js.JudgeAll(context.Background(), ItemsByID([]Item{{ItemID: "a", Domain: DomainRTL}}),
				[]Candidate{{ItemID: "a", CandidateID: "c"}})
			if !errors.Is(err, ErrVerdict) {
				t.Errorf("err %v, want ErrVerdict", err)
			}
		})
	}
	for _, ok := range []Evidence{{Status: StatusPass}, {Status: StatusFail, FailureStage: StageExploit},
		{Status: StatusUnjudged, FailureStage: StageWeakVerifier}, {Status: StatusUnjudged, FailureStage: StageDiskFull}} {
		if err := CheckVerdict(ok); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestJudgesOneJudgePerDomain(t *testing.T) {
	if _, err := NewJudges(1, &fakeJudge{domain: DomainRTL}, &fakeJudge{domain: DomainRTL}); !errors.Is(err, ErrConfig) {
		t.Errorf("two RTL judges: %v, want ErrConfig", err)
	}
}

func TestRetryPolicyRetriesOnlyTransientStages(t *testing.T) {
	for _, tc := range []struct {
		stage FailureStage
		want  int32
	}{
		{StageWorkerCrash, 3}, {StageDiskFull, 3}, {StageDeviceFault, 3},
		{StageToolchainMissing, 1}, {StagePayloadCorrupt, 1}, {StageReferenceSelfCheck, 1}, {StageMismatch, 1}, {StageNone, 1},
	} {
		calls := 0
		n, err := RetryPolicy{Attempts: 3}.Run(context.Background(), "test", func(context.Context, int) (FailureStage, string, error) {
			calls++
			return tc.stage, "", nil
		})
		if err != nil || n != tc.want || calls != int(tc.want) {
			t.Errorf("%q: %d attempts (%d calls, err %v), want %d", tc.stage, n, calls, err, tc.want)
		}
	}
	// A transient fault that clears stops the loop; the job's error stops it at once.
	n, _ := RetryPolicy{Attempts: 5}.Run(context.Background(), "test", func(_ context.Context, a int) (FailureStage, string, error) {
		if a < 2 {
			return StageWorkerCrash, "", nil
		}
		return StageNone, "", nil
	})
	if n != 2 {
		t.Errorf("clears on attempt 2: %d attempts", n)
	}
	boom := errors.New("boom")
	if _, err := (RetryPolicy{Attempts: 5}).Run(context.Background(), "test", func(context.Context, int) (FailureStage, string, error) {
		return StageWorkerCrash, "", boom
	}); !errors.Is(err, boom) {
		t.Errorf("job error: %v", err)
	}
}

func TestLazyJudgeBuildsOnFirstUseOnly(t *testing.T) {
	var builds atomic.Int32
	var mu sync.Mutex
	built := &fakeJudge{domain: DomainKernel}
	l := LazyJudge(DomainKernel, func() (Judge, error) {
		mu.Lock()
		defer mu.Unlock()
		builds.Add(1)
		return built, nil
	})
	if err := l.Close(); err != nil || builds.Load() != 0 || built.closed.Load() {
		t.Fatalf("Close before use built the judge (%d builds) or closed it", builds.Load())
	}
	js, _ := NewJudges(2, l)
	if _, err := js.SelfCheckAll(context.Background(), []Item{{ItemID: "x", Domain: DomainKernel, Reference: "ok"}, {ItemID: "y", Domain: DomainKernel, Reference: "ok"}}); err != nil {
		t.Fatal(err)
	}
	if builds.Load() != 1 {
		t.Errorf("%d builds, want 1", builds.Load())
	}
	_ = js.Close()
	if !built.closed.Load() {
		t.Error("Close after use did not close the built judge")
	}
	failing := LazyJudge(DomainRTL, func() (Judge, error) { return nil, errors.New("no iverilog") })
	if err := failing.Check(context.Background()); err == nil {
		t.Error("Check of a judge that cannot be built is nil")
	}
	js2, _ := NewJudges(1, failing)
	if _, err := js2.JudgeAll(context.Background(), ItemsByID([]Item{{ItemID: "a", Domain: DomainRTL}}), []Candidate{{ItemID: "a"}}); err == nil {
		t.Error("a judge that cannot be built gave verdicts")
	}
}
