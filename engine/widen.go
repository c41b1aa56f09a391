package engine

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Files from other writers rarely use our exact column types: DuckDB writes
// an integer literal as INTEGER or BIGINT where the contract says DOUBLE,
// pyarrow may write int64 where we store int32. Such columns are read when
// every value converts exactly; a value that does not (an int64 beyond 2^53
// into a float64, 3e9 into an int32) fails only its own row, naming the
// field, and nothing is ever rounded or truncated.

// widens reports whether a column of type got can be read, value by value,
// into a field of type want.
func widens(got, want arrow.DataType) bool {
	switch want.ID() {
	case arrow.INT8, arrow.INT32, arrow.INT64:
		return isInteger(got.ID())
	case arrow.FLOAT32:
		return isInteger(got.ID())
	case arrow.FLOAT64:
		return isInteger(got.ID()) || got.ID() == arrow.FLOAT32
	}
	return false
}

func isInteger(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// convError is a value that cannot be converted, with the path of the field
// it is in (built up as the error leaves nested structs and lists).
type convError struct {
	path []string
	msg  string
}

func (e *convError) Error() string {
	var b strings.Builder
	for i, p := range e.path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String() + ": " + e.msg
}

// inField prefixes a conversion error with the field (or list index) it is in.
func inField(name string, err error) error {
	if ce, ok := err.(*convError); ok {
		ce.path = append([]string{name}, ce.path...)
		return ce
	}
	return fmt.Errorf("%s: %w", name, err)
}

// intAt reads element i of an integer array; ok is false for an unsigned
// value beyond int64.
func intAt(a arrow.Array, i int) (v int64, ok bool) {
	switch x := a.(type) {
	case *array.Int64:
		return x.Value(i), true
	case *array.Int32:
		return int64(x.Value(i)), true
	case *array.Int16:
		return int64(x.Value(i)), true
	case *array.Int8:
		return int64(x.Value(i)), true
	case *array.Uint8:
		return int64(x.Value(i)), true
	case *array.Uint16:
		return int64(x.Value(i)), true
	case *array.Uint32:
		return int64(x.Value(i)), true
	case *array.Uint64:
		u := x.Value(i)
		return int64(u), u <= math.MaxInt64
	}
	panic(fmt.Sprintf("engine: intAt on %s", a.DataType()))
}

// readInt reads any integer column into a signed field of the given width.
func readInt(bits uint) readFunc {
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	if bits == 64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	return func(a arrow.Array, i int, dst reflect.Value) error {
		if x, ok := a.(*array.Int64); ok && bits == 64 { // the common case
			dst.SetInt(x.Value(i))
			return nil
		}
		v, ok := intAt(a, i)
		if !ok || v < lo || v > hi {
			return &convError{msg: fmt.Sprintf("%s value %s does not fit int%d", a.DataType(), valueString(a, i), bits)}
		}
		dst.SetInt(v)
		return nil
	}
}

// readFloat reads float and integer columns into a float field whose
// mantissa holds mant bits: integers beyond ±2^mant would be rounded, so
// they are refused.
func readFloat(mant uint) readFunc {
	limit := int64(1) << mant
	return func(a arrow.Array, i int, dst reflect.Value) error {
		switch x := a.(type) {
		case *array.Float64:
			dst.SetFloat(x.Value(i))
			return nil
		case *array.Float32:
			dst.SetFloat(float64(x.Value(i)))
			return nil
		}
		v, ok := intAt(a, i)
		if !ok || v > limit || v < -limit {
			return &convError{msg: fmt.Sprintf("%s value %s is beyond ±2^%d and cannot be stored as a float exactly", a.DataType(), valueString(a, i), mant)}
		}
		dst.SetFloat(float64(v))
		return nil
	}
}

func valueString(a arrow.Array, i int) string { return a.ValueStr(i) }
