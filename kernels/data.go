package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Seeded inputs: trial t of a task always sees the same values, and every
// trial sees different ones, so a candidate must compute the function rather
// than remember answers. Floats are uniform in [-1, 1) (never all zeros,
// which hide unwritten outputs); ints are uniform in [-100, 100].

// GenInputs returns trial's input buffers, indexed like t.Args (nil for
// outputs and scalars).
func (t *Task) GenInputs(trial int) [][]byte {
	out := make([][]byte, len(t.Args))
	for i, a := range t.Args {
		if a.Role != RoleInput {
			continue
		}
		r := rand.New(rand.NewPCG(t.Seed^uint64(trial+1)*0x9E3779B97F4A7C15, uint64(i+1)))
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

// Compare checks cand against ref elementwise with |c-r| <= tol + tol*|r|
// (tol 0: exact). Sizes must match.
func Compare(dtype string, ref, cand []byte, tol float64) Comparison {
	size := int64(dtypes[dtype].size)
	c := Comparison{Elems: int64(len(ref)) / size, FirstBad: -1}
	if len(ref) != len(cand) {
		c.Bad, c.FirstBad = c.Elems, 0
		return c
	}
	if dtype == "float32" {
		compareF32(ref, cand, tol, &c)
		return c
	}
	p := PoisonByte(dtype)
	for i := int64(0); i < c.Elems; i++ {
		raw := cand[i*size : (i+1)*size]
		if allByte(raw, p) {
			c.Unwritten++
		}
		r, x := elem(dtype, ref, i), elem(dtype, cand, i)
		ok := true
		switch {
		case math.IsNaN(r):
			ok = math.IsNaN(x)
		case math.IsNaN(x) || math.IsInf(x, 0) != math.IsInf(r, 0):
			ok = false
		case math.IsInf(r, 0):
			ok = r == x
		default:
			d := math.Abs(x - r)
			if d > c.MaxAbs {
				c.MaxAbs = d
			}
			if rel := d / math.Max(math.Abs(r), 1e-12); rel > c.MaxRel && math.Abs(r) > tol {
				c.MaxRel = rel
			}
			ok = d <= tol+tol*math.Abs(r)
		}
		if !ok {
			if math.IsNaN(x) {
				c.MaxAbs = math.Inf(1)
			}
			c.Bad++
			if c.FirstBad < 0 {
				c.FirstBad = i
			}
		}
	}
	return c
}

// compareF32 is Compare's float32 fast path (the common case, and the one
// that meets the largest GPU outputs): the same rules without per-element
// dtype dispatch.
func compareF32(ref, cand []byte, tol float64, c *Comparison) {
	le := binary.LittleEndian
	for i := int64(0); i < c.Elems; i++ {
		cb := le.Uint32(cand[4*i:])
		if cb == 0xFFFFFFFF {
			c.Unwritten++
		}
		r := float64(math.Float32frombits(le.Uint32(ref[4*i:])))
		x := float64(math.Float32frombits(cb))
		d := math.Abs(x - r)
		if lim := tol + tol*math.Abs(r); d <= lim && !math.IsInf(lim, 0) { // false for any NaN/Inf involvement
			if d > c.MaxAbs {
				c.MaxAbs = d
			}
			if rel := d / math.Max(math.Abs(r), 1e-12); rel > c.MaxRel && math.Abs(r) > tol {
				c.MaxRel = rel
			}
			continue
		}
		switch {
		case math.IsNaN(r) && math.IsNaN(x), math.IsInf(r, 0) && r == x:
			continue // same special value
		case math.IsNaN(x) || math.IsInf(x, 0):
			c.MaxAbs = math.Inf(1)
		case !math.IsNaN(r) && !math.IsInf(r, 0):
			if d > c.MaxAbs {
				c.MaxAbs = d
			}
			if rel := d / math.Max(math.Abs(r), 1e-12); rel > c.MaxRel && math.Abs(r) > tol {
				c.MaxRel = rel
			}
		}
		c.Bad++
		if c.FirstBad < 0 {
			c.FirstBad = i
		}
	}
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
