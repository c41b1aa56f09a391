package kernels

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/crucible-data/crucible/engine"
)

// Harness strength. Before any candidate of a task is judged, the task's
// comparison is tried on candidates that do not implement it, built here
// from the reference's own outputs (so they need no compiler and cannot
// crash): all zeros, a constant (the mean of the reference's output), a copy
// of an input, and the reference's answer for other inputs. A task whose
// tolerance accepts any of them cannot tell a wrong kernel from a right one:
// it is degenerate, and its candidates' passes become unjudged
// (weak_verifier). The result is cached per task like the reference build.

// Strength is the outcome of a task's trivial-candidate audit.
type Strength struct {
	Tried     int
	Killed    int
	Survivors []string // names of the trivial candidates the comparison accepted
}

// Weak reports whether any trivial candidate survived.
func (s *Strength) Weak() bool { return s != nil && len(s.Survivors) > 0 }

// Measurements returns verifier_strength (killed/tried) and its parts.
func (s *Strength) Measurements() []engine.Measurement {
	if s == nil || s.Tried == 0 {
		return nil
	}
	return []engine.Measurement{
		engine.FloatM("verifier_strength", float64(s.Killed)/float64(s.Tried)),
		engine.IntM("verifier_strength_killed", int64(s.Killed)),
		engine.IntM("verifier_strength_tried", int64(s.Tried)),
		engine.TextM("verifier_strength_survivors", strings.Join(s.Survivors, ",")),
	}
}

// Trivial candidate names.
const (
	ProbeZeros       = "zeros"
	ProbeConstant    = "constant"
	ProbeInputCopy   = "input_copy"
	ProbeOtherInputs = "reference_other_inputs"
)

// auditStrength judges the trivial candidates against refA, the
// reference's outputs on inputsA; refB is its outputs on other inputs.
func auditStrength(t *Task, inputsA, refA, refB [][]byte) *Strength {
	probes := []struct {
		name string
		out  func(a Arg, i int) []byte
	}{
		{ProbeZeros, func(a Arg, i int) []byte { return make([]byte, a.Bytes) }},
		{ProbeConstant, func(a Arg, i int) []byte { return constantLike(a, refA[i]) }},
		{ProbeInputCopy, func(a Arg, i int) []byte { return inputCopy(t, a, inputsA) }},
		{ProbeOtherInputs, func(a Arg, i int) []byte { return refB[i] }},
	}
	s := &Strength{}
	for _, p := range probes {
		if p.name == ProbeInputCopy && !hasInput(t) {
			continue
		}
		s.Tried++
		accepted := true
		for i, a := range t.Args {
			if a.Role != RoleOutput {
				continue
			}
			if !Compare(a.DType, refA[i], p.out(a, i), t.ToleranceFor(a.DType, refA[i])).OK() {
				accepted = false
				break
			}
		}
		if accepted {
			s.Survivors = append(s.Survivors, p.name)
		} else {
			s.Killed++
		}
	}
	return s
}

func hasInput(t *Task) bool {
	for _, a := range t.Args {
		if a.Role == RoleInput {
			return true
		}
	}
	return false
}

// constantLike fills an output of a's shape with the mean of ref's finite
// elements (the best a constant can do).
func constantLike(a Arg, ref []byte) []byte {
	var sum float64
	var n int64
	for e := int64(0); e < a.Elems; e++ {
		v := elem(a.DType, ref, e)
		if !dtypes[a.DType].isFP {
			v = float64(intElem(a.DType, ref, e))
		}
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
			n++
		}
	}
	mean := 0.0
	if n > 0 {
		mean = sum / float64(n)
	}
	out := make([]byte, a.Bytes)
	for e := int64(0); e < a.Elems; e++ {
		putValue(a.DType, out, e, mean)
	}
	return out
}

// inputCopy is the first input's values (converted to a's dtype), tiled
// over the output.
func inputCopy(t *Task, a Arg, inputs [][]byte) []byte {
	out := make([]byte, a.Bytes)
	for i, in := range t.Args {
		if in.Role != RoleInput {
			continue
		}
		for e := int64(0); e < a.Elems; e++ {
			v := elem(in.DType, inputs[i], e%in.Elems)
			if !dtypes[in.DType].isFP {
				v = float64(intElem(in.DType, inputs[i], e%in.Elems))
			}
			putValue(a.DType, out, e, v)
		}
		break
	}
	return out
}

func putValue(dtype string, buf []byte, e int64, v float64) {
	le := binary.LittleEndian
	switch dtype {
	case "float32":
		le.PutUint32(buf[4*e:], math.Float32bits(float32(v)))
	case "float64":
		le.PutUint64(buf[8*e:], math.Float64bits(v))
	case "float16":
		le.PutUint16(buf[2*e:], f32ToF16(float32(v)))
	case "bfloat16":
		le.PutUint16(buf[2*e:], f32ToBF16(float32(v)))
	case "int32":
		le.PutUint32(buf[4*e:], uint32(int32(math.Round(v))))
	case "int64":
		le.PutUint64(buf[8*e:], uint64(int64(math.Round(v))))
	}
}

// auditRun is one task's cached audit: the strength, or the outcome that
// stopped it (the reference failing to run, or running differently on the
// same inputs twice).
type auditRun struct {
	once     sync.Once
	strength *Strength
	fail     Outcome
}

// referenceRunner computes reference outputs in the trusted side's own
// process (one per backend).
type referenceRunner func(ctx context.Context, inputs [][][]byte) ([][][]byte, Outcome)

// runAudit runs the reference on inputs A, on A again (it must agree with
// itself) and on B, and audits the task's comparison.
func runAudit(ctx context.Context, t *Task, run referenceRunner) (*Strength, Outcome) {
	rng := NewInputSource()
	a, b := t.GenInputs(rng), t.GenInputs(rng)
	outs, o := run(ctx, [][][]byte{a, a, b})
	if o.Stage != "" {
		return nil, o
	}
	if why := selfConsistent(t, outs[0], outs[1]); why != "" {
		o.fail(engine.StageReferenceSelfCheck, "mismatch", why)
		return nil, o
	}
	return auditStrength(t, a, outs[0], outs[2]), o
}

// selfConsistent says how the reference's outputs on the same inputs
// differ between two runs ("" when they agree within the tolerance).
func selfConsistent(t *Task, first, again [][]byte) string {
	for i, arg := range t.Args {
		if arg.Role != RoleOutput {
			continue
		}
		if c := Compare(arg.DType, first[i], again[i], t.ToleranceFor(arg.DType, first[i])); !c.OK() {
			return fmt.Sprintf("the reference's output %s differs between two runs on the same inputs (%d of %d elements)", arg.Name, c.Bad, c.Elems)
		}
	}
	return ""
}

// cachedAudit returns t's audit from cache, running it once. A failed
// audit is not kept: its infrastructure failure is retried by the caller.
func cachedAudit(mu *sync.Mutex, cache map[string]*auditRun, t *Task, ctx context.Context, run func() (*Strength, Outcome)) *auditRun {
	key := sha(fmt.Sprintf("%s\x00%s\x00%v\x00%g", t.Reference, t.Entry, t.Args, t.Tolerance))
	mu.Lock()
	ar, ok := cache[key]
	if !ok {
		ar = &auditRun{}
		cache[key] = ar
	}
	mu.Unlock()
	ar.once.Do(func() { ar.strength, ar.fail = run() })
	if ar.fail.Stage != "" {
		mu.Lock()
		if cache[key] == ar {
			delete(cache, key)
		}
		mu.Unlock()
	}
	return ar
}

// audit is the cpu backend's cached audit of t's comparison.
func (b *cpuBackend) audit(ctx context.Context, t *Task, rb *refBuild) *auditRun {
	return cachedAudit(&b.mu, b.audits, t, ctx, func() (*Strength, Outcome) {
		return runAudit(ctx, t, func(ctx context.Context, inputs [][][]byte) ([][][]byte, Outcome) {
			var o Outcome
			job, err := b.jobDir()
			if err != nil {
				o.fail(engine.StageDiskFull, "", err.Error())
				return nil, o
			}
			defer os.RemoveAll(job)
			ref, err := b.startReference(ctx, t, job, rb.so)
			if ref == nil {
				o.fail(engine.StageWorkerCrash, "", "starting the reference's process: "+err.Error())
				return nil, o
			}
			defer ref.kill()
			if err != nil {
				ref.classify(&o, err)
				return nil, o
			}
			outs := make([][][]byte, len(inputs))
			for k, in := range inputs {
				if outs[k], _, err = ref.call(in); err != nil {
					ref.classify(&o, err)
					return nil, o
				}
			}
			return outs, o
		})
	})
}
