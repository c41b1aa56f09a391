package rtl

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFlightComputesOncePerKey(t *testing.T) {
	var f flight[int]
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := f.do(context.Background(), "k", func(int) bool { return true }, func() (int, error) {
				calls.Add(1)
				<-release
				return 42, nil
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	close(release)
	wg.Wait()
	for i, v := range got {
		if v != 42 {
			t.Errorf("caller %d got %d", i, v)
		}
	}
	// The first caller computes; callers that found the entry wait. Late
	// starters find the kept value. Either way: one computation.
	if n := calls.Load(); n != 1 {
		t.Errorf("%d computations, want 1", n)
	}
	if v, _ := f.do(context.Background(), "k", func(int) bool { return true }, func() (int, error) { return 0, errors.New("recomputed") }); v != 42 {
		t.Errorf("kept value %d, want 42", v)
	}
}

func TestFlightRecomputesWhatIsNotDefinitive(t *testing.T) {
	var f flight[int]
	n := 0
	definitive := func(v int) bool { return v >= 2 }
	compute := func() (int, error) { n++; return n, nil }
	for want := 1; want <= 2; want++ {
		if v, err := f.do(context.Background(), "k", definitive, compute); err != nil || v != want {
			t.Fatalf("call %d: %d, %v", want, v, err)
		}
	}
	if v, _ := f.do(context.Background(), "k", definitive, compute); v != 2 || n != 2 {
		t.Errorf("definitive value not kept: got %d after %d computations", v, n)
	}
	boom := errors.New("boom")
	if _, err := f.do(context.Background(), "e", definitive, func() (int, error) { return 5, boom }); !errors.Is(err, boom) {
		t.Errorf("error %v", err)
	}
	if v, err := f.do(context.Background(), "e", definitive, func() (int, error) { return 7, nil }); err != nil || v != 7 {
		t.Errorf("a failed computation was kept: %d, %v", v, err)
	}
}

func TestFlightWaiterLeavesOnCancel(t *testing.T) {
	var f flight[int]
	started, release := make(chan struct{}), make(chan struct{})
	go f.do(context.Background(), "k", func(int) bool { return true }, func() (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.do(ctx, "k", func(int) bool { return true }, func() (int, error) { return 2, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("waiter on a cancelled context: %v", err)
	}
	close(release)
}
