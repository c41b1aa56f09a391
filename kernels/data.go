package kernels

import (
	"bytes"
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Inputs are drawn from a ChaCha8 stream keyed by a fresh crypto/rand seed
// per job, after the candidate's process has started, and every call gets
// new ones: nothing the candidate can read (the item id, earlier calls)
// predicts them, so it must compute the function rather than remember or
// replay answers. Floats are uniform in [-1, 1) (never all zeros, which hide
// unwritten outputs); ints are uniform in [-100, 100].

// NewInputSource returns a generator keyed by a fresh crypto/rand seed.
func NewInputSource() *rand.Rand {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic("kernels: crypto/rand failed: " + err.Error()) // the OS RNG does not fail on Linux
	}
	return rand.New(rand.NewChaCha8(seed))
}

// GenInputs draws one call's input buffers from r, indexed like t.Args (nil
// for outputs and scalars).
func (t *Task) GenInputs(r *rand.Rand) [][]byte {
	out := make([][]byte, len(t.Args))
	for i, a := range t.Args {
		if a.Role != RoleInput {
			continue
		}
		buf := make([]byte, a.Bytes)
		for e := int64(0); e < a.Elems; e++ {
			putRandom(a.DType, buf, e, r)
		}
		out[i] = buf
	}
	return out
}

func putRandom(dtype string, buf []byte, e int64, r *rand.Rand) {
	le := binary.LittleEndian
	switch dtype {
	case "float32":
		le.PutUint32(buf[4*e:], math.Float32bits(float32(r.Float64()*2-1)))
	case "float64":
		le.PutUint64(buf[8*e:], math.Float64bits(r.Float64()*2-1))
	case "float16":
		le.PutUint16(buf[2*e:], f32ToF16(float32(r.Float64()*2-1)))
	case "bfloat16":
		le.PutUint16(buf[2*e:], f32ToBF16(float32(r.Float64()*2-1)))
	case "int32":
		le.PutUint32(buf[4*e:], uint32(int32(r.IntN(201)-100)))
	case "int64":
		le.PutUint64(buf[8*e:], uint64(int64(r.IntN(201)-100)))
	}
}

// PoisonByte is the byte every output is filled with before each run: NaN
// for every float type, an unlikely pattern for ints. Output elements still
// holding it afterwards were never written.
func PoisonByte(dtype string) byte {
	if dtypes[dtype].isFP {
		return 0xFF
	}
	return 0xA5
}

// Poison returns an output buffer filled with the dtype's poison.
func Poison(dtype string, n int64) []byte { return bytes.Repeat([]byte{PoisonByte(dtype)}, int(n)) }

func elem(dtype string, b []byte, i int64) float64 {
	le := binary.LittleEndian
	switch dtype {
	case "float32":
		return float64(math.Float32frombits(le.Uint32(b[4*i:])))
	case "float64":
		return math.Float64frombits(le.Uint64(b[8*i:]))
	case "float16":
		return float64(f16ToF32(le.Uint16(b[2*i:])))
	case "bfloat16":
		return float64(math.Float32frombits(uint32(le.Uint16(b[2*i:])) << 16))
	case "int32":
		return float64(int32(le.Uint32(b[4*i:])))
	case "int64":
		return float64(int64(le.Uint64(b[8*i:])))
	}
	return math.NaN()
}

// Tolerance is an elementwise bound |c-r| <= Abs + Rel*|r|.
type Tolerance struct{ Abs, Rel float64 }

// Exact reports whether the bound admits only equal values.
func (t Tolerance) Exact() bool { return t.Abs == 0 && t.Rel == 0 }

// Comparison summarises a candidate output against the reference output.
type Comparison struct {
	Elems     int64
	MaxAbs    float64
	MaxRel    float64
	Bad       int64 // elements outside tolerance (NaN where the reference is not NaN counts)
	FirstBad  int64 // index of the first bad element, -1 if none
	Unwritten int64 // elements still holding the poison pattern
}

// OK reports whether every element is within tolerance.
func (c Comparison) OK() bool { return c.Bad == 0 }

// Compare checks cand against ref elementwise with |c-r| <= Abs + Rel*|r|;
// NaN matches only NaN and an infinity only the same infinity, whatever the
// tolerance. Integer dtypes compare exactly as integers (never through
// float64, where int64 values above 2^53 would round together). Sizes must
// match.
func Compare(dtype string, ref, cand []byte, tol Tolerance) Comparison {
	size := int64(dtypes[dtype].size)
	c := Comparison{Elems: int64(len(ref)) / size, FirstBad: -1}
	if len(ref) != len(cand) {
		c.Bad, c.FirstBad = c.Elems, 0
		return c
	}
	p := PoisonByte(dtype)
	if !dtypes[dtype].isFP {
		for i := int64(0); i < c.Elems; i++ {
			r, x := ref[i*size:(i+1)*size], cand[i*size:(i+1)*size]
			if allByte(x, p) {
				c.Unwritten++
			}
			if !bytes.Equal(r, x) {
				ri, xi := intElem(dtype, ref, i), intElem(dtype, cand, i)
				d := math.Abs(float64(xi) - float64(ri)) // for the report only
				c.MaxAbs = max(c.MaxAbs, d)
				c.MaxRel = max(c.MaxRel, d/math.Max(math.Abs(float64(ri)), 1))
				c.Bad++
				if c.FirstBad < 0 {
					c.FirstBad = i
				}
			}
		}
		return c
	}
	if dtype == "float32" {
		compareF32(ref, cand, tol, &c)
		return c
	}
	for i := int64(0); i < c.Elems; i++ {
		if allByte(cand[i*size:(i+1)*size], p) {
			c.Unwritten++
		}
		checkElem(elem(dtype, ref, i), elem(dtype, cand, i), tol, i, &c)
	}
	return c
}

// compareF32 is Compare's float32 fast path (the common case, and the one
// that meets the largest GPU outputs): the same rules without per-element
// dtype dispatch.
func compareF32(ref, cand []byte, tol Tolerance, c *Comparison) {
	le := binary.LittleEndian
	for i := int64(0); i < c.Elems; i++ {
		cb := le.Uint32(cand[4*i:])
		if cb == 0xFFFFFFFF {
			c.Unwritten++
		}
		checkElem(float64(math.Float32frombits(le.Uint32(ref[4*i:]))), float64(math.Float32frombits(cb)), tol, i, c)
	}
}

func checkElem(r, x float64, tol Tolerance, i int64, c *Comparison) {
	d := math.Abs(x - r)
	if lim := tol.Abs + tol.Rel*math.Abs(r); d <= lim && !math.IsInf(lim, 0) { // false for any NaN/Inf involvement
		c.MaxAbs = max(c.MaxAbs, d)
		if rel := d / math.Max(math.Abs(r), 1e-12); rel > c.MaxRel && math.Abs(r) > tol.Abs {
			c.MaxRel = rel
		}
		return
	}
	switch {
	case math.IsNaN(r) && math.IsNaN(x), math.IsInf(r, 0) && r == x:
		return // the same special value
	case math.IsNaN(x) || math.IsInf(x, 0):
		c.MaxAbs = math.Inf(1)
	case !math.IsNaN(r) && !math.IsInf(r, 0):
		c.MaxAbs = max(c.MaxAbs, d)
		if rel := d / math.Max(math.Abs(r), 1e-12); rel > c.MaxRel && math.Abs(r) > tol.Abs {
			c.MaxRel = rel
		}
	}
	c.Bad++
	if c.FirstBad < 0 {
		c.FirstBad = i
	}
}

func intElem(dtype string, b []byte, i int64) int64 {
	le := binary.LittleEndian
	switch dtype {
	case "int32":
		return int64(int32(le.Uint32(b[4*i:])))
	case "int64":
		return int64(le.Uint64(b[8*i:]))
	}
	return 0
}

// rms is the root mean square of ref's finite elements: the scale the
// absolute tolerance is taken from.
func rms(dtype string, ref []byte) float64 {
	size := int64(dtypes[dtype].size)
	n := int64(len(ref)) / size
	var sum float64
	var k int64
	for i := int64(0); i < n; i++ {
		if v := elem(dtype, ref, i); !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v * v
			k++
		}
	}
	if k == 0 {
		return 0
	}
	return math.Sqrt(sum / float64(k))
}

func allByte(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

// f32ToF16 converts with round-to-nearest-even (values here are in [-1, 1)).
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32((b>>23)&0xFF) - 127 + 15
	mant := b & 0x7FFFFF
	switch {
	case (b>>23)&0xFF == 0xFF:
		if mant != 0 {
			return sign | 0x7E00
		}
		return sign | 0x7C00
	case exp >= 31:
		return sign | 0x7C00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		v := mant >> shift
		if rem := mant & ((1 << shift) - 1); rem > half || (rem == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1FFF; rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++
	}
	return sign | uint16(v)
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch {
	case exp == 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// f32ToBF16 rounds to nearest even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return 0x7FC0
	}
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}
