package rtl

import (
	"context"
	"sync"
)

// flight computes a value once per key and hands it to every concurrent
// caller of that key: the reference self-check and the harness-strength
// audit are each run once per (task, toolchain), however many candidates
// of the task arrive at once. A result that is not definitive (an
// unresolved infrastructure failure) or an error is not kept: the next
// caller, and every caller that waited on it, computes it again.
type flight[T any] struct {
	mu sync.Mutex
	m  map[string]*flightEntry[T]
}

type flightEntry[T any] struct {
	done chan struct{}
	val  T
	kept bool
}

// do returns key's value, computing it with compute when no definitive one
// is kept or being computed; the error is compute's or the context's.
func (f *flight[T]) do(ctx context.Context, key string, definitive func(T) bool, compute func() (T, error)) (T, error) {
	for {
		f.mu.Lock()
		if f.m == nil {
			f.m = map[string]*flightEntry[T]{}
		}
		e, ok := f.m[key]
		if !ok {
			e = &flightEntry[T]{done: make(chan struct{})}
			f.m[key] = e
			f.mu.Unlock()
			v, err := compute()
			e.val, e.kept = v, err == nil && definitive(v)
			if !e.kept {
				f.mu.Lock()
				delete(f.m, key)
				f.mu.Unlock()
			}
			close(e.done)
			return v, err
		}
		f.mu.Unlock()
		select {
		case <-e.done:
			if e.kept {
				return e.val, nil
			}
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}
