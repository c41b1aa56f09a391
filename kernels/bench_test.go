package kernels

import (
	"context"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// Benchmarks of the verifier's own overhead. Run with
//
//	go test -run '^$' -bench . -benchmem ./kernels
func benchTask(b *testing.B, n int64) *Task {
	it := engine.Item{ItemID: "bench", Domain: engine.DomainKernel, Reference: "x",
		Interface: engine.Interface{Args: []engine.KernelArg{{Name: "a", Role: "input", Shape: []int64{n}, DType: "float32"},
			{Name: "o", Role: "output", Shape: []int64{n}, DType: "float32"}}},
		Verifier: engine.Verifier{Harness: "cpu", Top: "f"}}
	t, err := TaskFromItem(it)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func BenchmarkGenInputs1M(b *testing.B) {
	t := benchTask(b, 1<<20)
	b.SetBytes(4 << 20)
	r := NewInputSource()
	for b.Loop() {
		t.GenInputs(r)
	}
}

func BenchmarkCompare1M(b *testing.B) {
	t := benchTask(b, 1<<20)
	in := t.GenInputs(NewInputSource())[0]
	b.SetBytes(4 << 20)
	for b.Loop() {
		Compare("float32", in, in, Tolerance{Abs: 1e-5, Rel: 1e-4})
	}
}

func BenchmarkSpeedupCI(b *testing.B) {
	ref, cand := make([]float64, 50), make([]float64, 50)
	for i := range ref {
		ref[i], cand[i] = 1+float64(i%7)/100, 0.5+float64(i%5)/100
	}
	for b.Loop() {
		SpeedupCI(ref, cand, 1000, 0.05, 1)
	}
}

// BenchmarkCPUVerify is one full cpu-backend verdict (compile, child run of
// 3 trials x 3 reps, one process per side, judging) on the 65536-element vector add seed.
func BenchmarkCPUVerify(b *testing.B) {
	it, err := LoadSeedDir("../examples/seeds/kernel/vector_add_f32")
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	items := map[string]engine.Item{it.ItemID: it}
	c := engine.Candidate{ItemID: it.ItemID, CandidateID: "ref", Code: it.Reference}
	for b.Loop() {
		if ev := v.Verify(context.Background(), items, c); ev.Status != engine.StatusPass {
			b.Fatalf("%s %s", ev.Status, ev.Cause)
		}
	}
}
