package kernels

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
)

func TestTaskFromItemReportsEveryBadField(t *testing.T) {
	it := engine.Item{ItemID: "bad", Domain: engine.DomainRTL, Interface: engine.Interface{Tolerance: -1,
		Args: []engine.KernelArg{{Name: "x", Role: "input", Shape: []int64{0}, DType: "float8"}, {Name: "", Role: "weird"}}},
		Verifier: engine.Verifier{Harness: "opencl"}}
	_, err := TaskFromItem(it)
	if !errors.Is(err, ErrTask) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"domain", "verifier.harness", "verifier.top", "reference", "interface.tolerance",
		"interface.args[0].dtype", "interface.args[1].role", "no output argument"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

// Inputs come from fresh crypto seeds: two sources never agree, and the
// same source gives new values on every call.
func TestGenInputsFresh(t *testing.T) {
	it := engine.Item{ItemID: "va", Domain: engine.DomainKernel, Reference: "x",
		Interface: engine.Interface{Args: []engine.KernelArg{{Name: "a", Role: "input", Shape: []int64{64}, DType: "float32"},
			{Name: "h", Role: "input", Shape: []int64{64}, DType: "float16"}, {Name: "o", Role: "output", Shape: []int64{64}, DType: "float32"}}},
		Verifier: engine.Verifier{Harness: "cpu", Top: "f"}}
	task, err := TaskFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	r := NewInputSource()
	a0, a1, other := task.GenInputs(r), task.GenInputs(r), task.GenInputs(NewInputSource())
	if string(a0[0]) == string(a1[0]) {
		t.Fatal("two calls gave the same inputs")
	}
	if string(a0[0]) == string(other[0]) {
		t.Fatal("two sources gave the same inputs: the seed is predictable")
	}
	if a0[2] != nil {
		t.Fatal("outputs must not get inputs")
	}
	zeros := 0
	for i := int64(0); i < 64; i++ {
		v := elem("float32", a0[0], i)
		h := elem("float16", a0[1], i)
		if v < -1 || v >= 1 || h < -1 || h > 1 {
			t.Fatalf("value out of range: %g %g", v, h)
		}
		if v == 0 {
			zeros++
		}
	}
	if zeros > 2 {
		t.Fatalf("%d zeros: inputs must not be zero-filled", zeros)
	}
}

func TestHalfConversions(t *testing.T) {
	for _, f := range []float32{0, 1, -1, 0.5, 0.1, -0.3333, 65504, 6.1035156e-05, 1e-7} {
		got := f16ToF32(f32ToF16(f))
		if math.Abs(float64(got-f)) > math.Abs(float64(f))*1e-3+6e-8 {
			t.Errorf("f16 round trip %g -> %g", f, got)
		}
	}
	if b := f32ToBF16(1.0); b != 0x3F80 {
		t.Errorf("bf16(1) = %#x", b)
	}
	if !math.IsNaN(float64(f16ToF32(0xFFFF))) {
		t.Error("f16 poison is not NaN")
	}
}

func TestCompare(t *testing.T) {
	mk := func(vs ...float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	ref := mk(1, 2, 3, 4)
	tol := Tolerance{Abs: 1e-4, Rel: 1e-4}
	if c := Compare("float32", ref, mk(1, 2, 3, 4.0001), tol); !c.OK() {
		t.Errorf("within tolerance rejected: %+v", c)
	}
	c := Compare("float32", ref, mk(1, 2.1, 3, 4), tol)
	if c.OK() || c.Bad != 1 || c.FirstBad != 1 {
		t.Errorf("mismatch not found: %+v", c)
	}
	p := Poison("float32", 16)
	c = Compare("float32", ref, p, tol)
	if c.Unwritten != 4 || c.Bad != 4 {
		t.Errorf("poison not detected: %+v", c)
	}
	if c := Compare("float32", ref, mk(1, 2, 3), tol); c.OK() {
		t.Error("size mismatch accepted")
	}
	nan := float32(math.NaN())
	if c := Compare("float32", mk(nan), mk(nan), tol); !c.OK() {
		t.Error("NaN where the reference is NaN must pass")
	}
	inf := float32(math.Inf(1))
	for _, bad := range [][2][]byte{{mk(1), mk(nan)}, {mk(nan), mk(1)}, {mk(inf), mk(-inf)}, {mk(1), mk(inf)}, {mk(inf), mk(1e30)}} {
		if c := Compare("float32", bad[0], bad[1], Tolerance{Abs: 1e30, Rel: 1e30}); c.OK() {
			t.Errorf("NaN/Inf accepted where the reference differs: ref %v cand %v", bad[0], bad[1])
		}
	}
}

// The absolute slack follows the output's magnitude: softmax rows scaled by
// 1.04 (values ~1e-3) fail under rel 1e-4, a 1e-5 relative error passes.
func TestToleranceMagnitudeAware(t *testing.T) {
	task := &Task{Tolerance: 1e-4}
	n := 1024
	ref, scaled, close := make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n)
	for i := 0; i < n; i++ {
		v := float32(1.0/float64(n)) * (1 + float32(i%7)/10)
		binary.LittleEndian.PutUint32(ref[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint32(scaled[4*i:], math.Float32bits(v*1.04))
		binary.LittleEndian.PutUint32(close[4*i:], math.Float32bits(v*(1+1e-5)))
	}
	tol := task.ToleranceFor("float32", ref)
	if Compare("float32", ref, scaled, tol).OK() {
		t.Fatalf("rows scaled by 1.04 accepted under %+v", tol)
	}
	if c := Compare("float32", ref, close, tol); !c.OK() {
		t.Fatalf("a 1e-5 relative error rejected under %+v: %+v", tol, c)
	}
}

// int64 outputs compare as integers: values that round to the same float64
// still differ.
func TestCompareIntsExactly(t *testing.T) {
	a, b := make([]byte, 8), make([]byte, 8)
	binary.LittleEndian.PutUint64(a, 1<<60)
	binary.LittleEndian.PutUint64(b, 1<<60+1)
	if float64(int64(1<<60)) != float64(int64(1<<60+1)) {
		t.Fatal("test premise: the two values must round to one float64")
	}
	task := &Task{Tolerance: 0.5}
	if Compare("int64", a, b, task.ToleranceFor("int64", a)).OK() {
		t.Fatal("int64 values differing by 1 compared equal")
	}
	if !Compare("int64", a, a, task.ToleranceFor("int64", a)).OK() {
		t.Fatal("equal int64 values compared unequal")
	}
}

func TestSpeedupCI(t *testing.T) {
	ref := make([]float64, 30)
	cand := make([]float64, 30)
	for i := range ref {
		ref[i] = 2 + 0.01*float64(i%5)
		cand[i] = 1 + 0.01*float64(i%7)
	}
	p, lo, hi := SpeedupCI(ref, cand, 500, 0.05, 1)
	if p < 1.9 || p > 2.1 || lo > p || hi < p || lo < 1.8 {
		t.Fatalf("speedup %g [%g, %g]", p, lo, hi)
	}
	p2, lo2, hi2 := SpeedupCI(ref, cand, 500, 0.05, 1)
	if p != p2 || lo != lo2 || hi != hi2 {
		t.Fatal("bootstrap not reproducible with the same seed")
	}
	// Noisy equal timings: the interval straddles 1, so not "faster".
	noisy := []float64{1, 1.3, 0.8, 1.1, 0.9, 1.2, 1.0, 0.7, 1.4, 1.05}
	_, lo, hi = SpeedupCI(noisy, append([]float64(nil), noisy...), 1000, 0.05, 2)
	if lo >= 1.05 || hi <= 1 {
		t.Fatalf("equal distributions gave CI [%g, %g]", lo, hi)
	}
	if tm := Summarize([]float64{3, 1, 2}); tm.Median != 2 || tm.Min != 1 {
		t.Fatalf("summary %+v", tm)
	}
}

func TestParseLaunchPlan(t *testing.T) {
	src := "// crucible:launch grid=(64,2) block=(256,1,1) shared=4096\n" +
		"  // crucible:launch kernel=side grid=8 block=32 stream=1\n"
	plan, err := ParseLaunchPlan(src, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 2 || plan[0].Kernel != "k" || plan[0].Cfg.Grid.Y != 2 || plan[0].Cfg.Grid.Z != 1 ||
		plan[0].Cfg.SharedBytes != 4096 || plan[1].Kernel != "side" || plan[1].Stream != 1 || plan[1].Cfg.Block.X != 32 {
		t.Fatalf("plan = %+v", plan)
	}
	for _, bad := range []string{"no plan here", "// crucible:launch grid=(0) block=1", "// crucible:launch block=1",
		"// crucible:launch grid=1 block=1 color=red", "// crucible:launch grid=1 block=1 stream=9"} {
		if _, err := ParseLaunchPlan(bad, "k"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// Triton frames round-trip, and a candidate's outputs that differ in
// count, dtype or shape from the reference's are a mismatch, never a panic.
func TestTritonFrames(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	vals := []tensor{{DType: "float32", Shape: []int64{2, 2}, raw: make([]byte, 16)}, {Value: float64(3)},
		{DType: "int64", Shape: []int64{3}, raw: make([]byte, 24)}}
	go func() { writeFrame(w, vals); w.Close() }()
	s := &sideProc{fromChild: bufio.NewReader(r)}
	got, err := s.readFrame()
	if err != nil || len(got) != 3 || got[0].DType != "float32" || len(got[0].raw) != 16 || got[1].Value != float64(3) || len(got[2].raw) != 24 {
		t.Fatalf("frame %+v, %v", got, err)
	}
	task := &Task{ItemID: "kb"}
	ft, err := frameTask(task, got[:2], got[2:])
	if err != nil || len(ft.Args) != 2 || ft.Args[1].Role != RoleOutput || ft.Args[1].Bytes != 24 {
		t.Fatalf("frame task %+v, %v", ft, err)
	}
	if _, _, _, why := frameBuffers(ft, got[:2], got[2:], got[2:]); why != "" {
		t.Fatalf("matching outputs rejected: %s", why)
	}
	for _, bad := range [][]tensor{{}, {{DType: "int32", Shape: []int64{3}, raw: make([]byte, 12)}},
		{{DType: "int64", Shape: []int64{1, 3}, raw: make([]byte, 24)}}, {{DType: "int64", Shape: []int64{3}, raw: make([]byte, 8)}}} {
		if _, _, _, why := frameBuffers(ft, got[:2], got[2:], bad); why == "" {
			t.Errorf("candidate outputs %+v accepted", bad)
		}
	}
	if _, err := frameTask(task, nil, []tensor{{DType: "complex64", Shape: []int64{1}}}); err == nil {
		t.Error("a dtype the verifier cannot compare was accepted")
	}
}

// The worker re-exec path runs on any machine: without a GPU the child
// reports device_fault through the result channel.
func TestWorkerProcessRoundTrip(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	it := loadSeed(t, "vector_add_f32_cuda")
	task, err := TaskFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	s, err := startCUDAWorker(context.Background(), exe, 0, testConfig(), task, it.Reference, "candidate")
	if s == nil {
		t.Fatal(err)
	}
	defer s.kill()
	if err == nil {
		t.Skip("a GPU is present: the worker loaded the candidate")
	}
	var o Outcome
	s.classify(&o, err)
	if o.Stage != engine.StageDeviceFault || !strings.Contains(o.Cause, "opening the GPU") {
		t.Fatalf("worker outcome %+v", o)
	}
	// The reference's worker failing is the reference's (unjudged), never a candidate failure.
	r, err := startCUDAWorker(context.Background(), exe, 0, testConfig(), task, it.Reference, "reference")
	if r == nil || err == nil {
		t.Fatalf("reference worker: %v", err)
	}
	defer r.kill()
	o = Outcome{}
	r.classify(&o, err)
	if !engine.IsInfraStage(o.Stage) {
		t.Fatalf("reference worker outcome %+v", o)
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{Backend: "gpu"}.Validate()
	for _, f := range []string{"backend", "trials", "reps", "timeout", "mem_limit_bytes", "workers", "alpha", "max_attempts"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate does not report %s: %v", f, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterStagesConfig(t *testing.T) {
	reg := engine.NewRegistry()
	RegisterStages(reg)
	good, err := engine.NewStageConfig("vk", "backend: cpu\ntrials: 2\nreps: 3\ntimeout: 10s\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Build("verify_kernel", good); err != nil {
		t.Fatalf("good config rejected: %v", err)
	}
	for _, bad := range []string{"trails: 2\n", "backend: opencl\n", "trials: 0\n"} {
		c, err := engine.NewStageConfig("vk", bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Build("verify_kernel", c); err == nil {
			t.Errorf("config %q accepted", bad)
		}
	}
}

// The float32 fast path and the generic path agree on every edge case.
func TestCompareF32MatchesGeneric(t *testing.T) {
	vals := []float32{0, 1, -1, 1e-5, 3.5, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1.00005, -2}
	for _, r := range vals {
		for _, x := range vals {
			rb, xb := make([]byte, 4), make([]byte, 4)
			binary.LittleEndian.PutUint32(rb, math.Float32bits(r))
			binary.LittleEndian.PutUint32(xb, math.Float32bits(x))
			fast := Compare("float32", rb, xb, Tolerance{Abs: 1e-4, Rel: 1e-4})
			var slow Comparison
			slow.Elems, slow.FirstBad = 1, -1
			// Generic path via a dtype that shares float semantics: decode as float64.
			r64, x64 := make([]byte, 8), make([]byte, 8)
			binary.LittleEndian.PutUint64(r64, math.Float64bits(float64(r)))
			binary.LittleEndian.PutUint64(x64, math.Float64bits(float64(x)))
			slow = Compare("float64", r64, x64, Tolerance{Abs: 1e-4, Rel: 1e-4})
			if fast.Bad != slow.Bad {
				t.Errorf("r=%g x=%g: fast bad=%d generic bad=%d", r, x, fast.Bad, slow.Bad)
			}
		}
	}
}
