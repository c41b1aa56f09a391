package engine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A Codec maps a Go struct type to an Arrow schema and converts rows in both
// directions directly between Go values and Arrow builders/arrays, with no
// intermediate representation. Field names come from `arrow:"name"` tags
// (untagged exported fields use their json tag, then the lower-case name;
// `arrow:"-"` skips a field).
//
// Supported field kinds: string, []byte, bool, int8, int32, int64, float32,
// float64, time.Time (timestamp[us, UTC]), nested structs, and slices of any
// of these. Every Arrow field is nullable so that files from other writers
// read back; a null reads as the zero value.
type Codec[T any] struct {
	schema *arrow.Schema
	fields []fieldCodec
}

type fieldCodec struct {
	index  int
	name   string
	dt     arrow.DataType
	append appendFunc
	read   readFunc
}

// appendFunc appends v to b and returns an estimate of the bytes it added.
type appendFunc func(b array.Builder, v reflect.Value) int

// readFunc sets dst from element i of a. It fails only where a value of a
// wider type (see widen.go) does not fit dst's type; the error is a
// *convError naming the field path.
type readFunc func(a arrow.Array, i int, dst reflect.Value) error

var codecCache sync.Map // reflect.Type -> *codecCore

type codecCore struct {
	schema *arrow.Schema
	fields []fieldCodec
}

// NewCodec builds (or fetches from cache) the codec for T.
func NewCodec[T any]() (*Codec[T], error) {
	var zero T
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: codec row type must be a struct, got %v", ErrSchema, t)
	}
	if c, ok := codecCache.Load(t); ok {
		core := c.(*codecCore)
		return &Codec[T]{schema: core.schema, fields: core.fields}, nil
	}
	fields, err := structFields(t)
	if err != nil {
		return nil, err
	}
	afs := make([]arrow.Field, len(fields))
	for i, f := range fields {
		afs[i] = arrow.Field{Name: f.name, Type: f.dt, Nullable: true}
	}
	core := &codecCore{schema: arrow.NewSchema(afs, nil), fields: fields}
	codecCache.Store(t, core)
	return &Codec[T]{schema: core.schema, fields: core.fields}, nil
}

// Schema is the Arrow schema of T.
func (c *Codec[T]) Schema() *arrow.Schema { return c.schema }

// Append appends one row to a record builder made from Schema() and returns
// an estimate of the bytes it buffered.
func (c *Codec[T]) Append(b *array.RecordBuilder, row *T) int {
	v := reflect.ValueOf(row).Elem()
	n := 0
	for i, f := range c.fields {
		n += f.append(b.Field(i), v.Field(f.index))
	}
	return n
}

// Read converts rows [0, rec.NumRows()) of rec into dst (appending). Columns
// are matched by name; a column missing from rec leaves the zero value, and
// a column of an unexpected type is an error naming it. Columns of a wider
// type than the field's (int64 into float64, int32 into int64, ...) are
// converted value by value; a value that does not convert exactly is an
// ErrSchema error naming the row (0-based within rec) and field.
func (c *Codec[T]) Read(rec arrow.RecordBatch, dst []T) ([]T, error) {
	var first error
	dst, err := c.ReadChecked(rec, dst, func(row int, err error) {
		if first == nil {
			first = fmt.Errorf("%w: row %d: %v", ErrSchema, row, err)
		}
	})
	if err == nil {
		err = first
	}
	return dst, err
}

// ReadChecked is Read that reports each row with a value that does not
// convert to bad (row index within rec, error naming the field) instead of
// failing; such a row is still appended, partly filled, so indices line up.
func (c *Codec[T]) ReadChecked(rec arrow.RecordBatch, dst []T, bad func(row int, err error)) ([]T, error) {
	type bound struct {
		f   fieldCodec
		col arrow.Array
	}
	var cols []bound
	sc := rec.Schema()
	for _, f := range c.fields {
		idx := sc.FieldIndices(f.name)
		if len(idx) == 0 {
			continue
		}
		col := rec.Column(idx[0])
		if !compatible(col.DataType(), f.dt) {
			return dst, fmt.Errorf("%w: column %q has type %s, want %s", ErrSchema, f.name, col.DataType(), f.dt)
		}
		cols = append(cols, bound{f, col})
	}
	n := int(rec.NumRows())
	start := len(dst)
	dst = append(dst, make([]T, n)...)
	for r := 0; r < n; r++ {
		v := reflect.ValueOf(&dst[start+r]).Elem()
		for _, b := range cols {
			if b.col.IsNull(r) {
				continue
			}
			if err := b.f.read(b.col, r, v.Field(b.f.index)); err != nil {
				bad(r, inField(b.f.name, err))
				break
			}
		}
	}
	return dst, nil
}

// compatible accepts the exact type, the large string and list variants
// other writers (pyarrow, DuckDB) may use for the same logical column, and
// numeric types that widen into the field's (checked value by value).
func compatible(got, want arrow.DataType) bool {
	if arrow.TypeEqual(got, want) {
		return true
	}
	if widens(got, want) {
		return true
	}
	switch want.ID() {
	case arrow.STRING:
		return got.ID() == arrow.LARGE_STRING
	case arrow.TIMESTAMP:
		return got.ID() == arrow.TIMESTAMP
	case arrow.LIST:
		if got.ID() != arrow.LIST && got.ID() != arrow.LARGE_LIST {
			return false
		}
		return compatible(got.(arrow.ListLikeType).Elem(), want.(*arrow.ListType).Elem())
	case arrow.STRUCT:
		gs, ok := got.(*arrow.StructType)
		if !ok {
			return false
		}
		ws := want.(*arrow.StructType)
		for _, wf := range ws.Fields() {
			if i, ok := gs.FieldIdx(wf.Name); ok && !compatible(gs.Field(i).Type, wf.Type) {
				return false
			}
		}
		return true
	}
	return false
}

func fieldName(sf reflect.StructField) (string, bool) {
	if tag, ok := sf.Tag.Lookup("arrow"); ok {
		name := strings.Split(tag, ",")[0]
		if name == "-" {
			return "", false
		}
		if name != "" {
			return name, true
		}
	}
	if tag, ok := sf.Tag.Lookup("json"); ok {
		name := strings.Split(tag, ",")[0]
		if name == "-" {
			return "", false
		}
		if name != "" {
			return name, true
		}
	}
	return strings.ToLower(sf.Name), true
}

func structFields(t reflect.Type) ([]fieldCodec, error) {
	var out []fieldCodec
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, ok := fieldName(sf)
		if !ok {
			continue
		}
		dt, ap, rd, err := kindCodec(sf.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", t.Name(), sf.Name, err)
		}
		out = append(out, fieldCodec{index: i, name: name, dt: dt, append: ap, read: rd})
	}
	return out, nil
}

var timeType = reflect.TypeOf(time.Time{})

func kindCodec(t reflect.Type) (arrow.DataType, appendFunc, readFunc, error) {
	if t == timeType {
		dt := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		return dt, func(b array.Builder, v reflect.Value) int {
				tm := v.Interface().(time.Time)
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(tm.UnixMicro()))
				return 8
			}, func(a arrow.Array, i int, dst reflect.Value) error {
				ts := a.(*array.Timestamp)
				unit := ts.DataType().(*arrow.TimestampType).Unit
				dst.Set(reflect.ValueOf(ts.Value(i).ToTime(unit).UTC()))
				return nil
			}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return arrow.BinaryTypes.String, func(b array.Builder, v reflect.Value) int {
				s := v.String()
				b.(*array.StringBuilder).Append(s)
				return len(s) + 4
			}, func(a arrow.Array, i int, dst reflect.Value) error {
				switch s := a.(type) {
				case *array.String:
					dst.SetString(strings.Clone(s.Value(i)))
				case *array.LargeString:
					dst.SetString(strings.Clone(s.Value(i)))
				}
				return nil
			}, nil
	case reflect.Bool:
		return arrow.FixedWidthTypes.Boolean, func(b array.Builder, v reflect.Value) int {
				b.(*array.BooleanBuilder).Append(v.Bool())
				return 1
			}, func(a arrow.Array, i int, dst reflect.Value) error {
				dst.SetBool(a.(*array.Boolean).Value(i))
				return nil
			}, nil
	case reflect.Int8:
		return arrow.PrimitiveTypes.Int8, func(b array.Builder, v reflect.Value) int {
			b.(*array.Int8Builder).Append(int8(v.Int()))
			return 1
		}, readInt(8), nil
	case reflect.Int32:
		return arrow.PrimitiveTypes.Int32, func(b array.Builder, v reflect.Value) int {
			b.(*array.Int32Builder).Append(int32(v.Int()))
			return 4
		}, readInt(32), nil
	case reflect.Int64, reflect.Int:
		return arrow.PrimitiveTypes.Int64, func(b array.Builder, v reflect.Value) int {
			b.(*array.Int64Builder).Append(v.Int())
			return 8
		}, readInt(64), nil
	case reflect.Float32:
		return arrow.PrimitiveTypes.Float32, func(b array.Builder, v reflect.Value) int {
			b.(*array.Float32Builder).Append(float32(v.Float()))
			return 4
		}, readFloat(24), nil
	case reflect.Float64:
		return arrow.PrimitiveTypes.Float64, func(b array.Builder, v reflect.Value) int {
			b.(*array.Float64Builder).Append(v.Float())
			return 8
		}, readFloat(53), nil
	case reflect.Struct:
		return structCodec(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return arrow.BinaryTypes.Binary, func(b array.Builder, v reflect.Value) int {
					bs := v.Bytes()
					b.(*array.BinaryBuilder).Append(bs)
					return len(bs) + 4
				}, func(a arrow.Array, i int, dst reflect.Value) error {
					src := a.(*array.Binary).Value(i)
					b := make([]byte, len(src))
					copy(b, src)
					dst.SetBytes(b)
					return nil
				}, nil
		}
		return listCodec(t)
	}
	return nil, nil, nil, fmt.Errorf("%w: unsupported Go type %s", ErrSchema, t)
}

func structCodec(t reflect.Type) (arrow.DataType, appendFunc, readFunc, error) {
	fields, err := structFields(t)
	if err != nil {
		return nil, nil, nil, err
	}
	afs := make([]arrow.Field, len(fields))
	for i, f := range fields {
		afs[i] = arrow.Field{Name: f.name, Type: f.dt, Nullable: true}
	}
	dt := arrow.StructOf(afs...)
	ap := func(b array.Builder, v reflect.Value) int {
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		n := 0
		for i, f := range fields {
			n += f.append(sb.FieldBuilder(i), v.Field(f.index))
		}
		return n
	}
	rd := func(a arrow.Array, i int, dst reflect.Value) error {
		sa := a.(*array.Struct)
		st := sa.DataType().(*arrow.StructType)
		for _, f := range fields {
			j, ok := st.FieldIdx(f.name)
			if !ok {
				continue
			}
			child := sa.Field(j)
			if child.IsNull(i) {
				continue
			}
			if err := f.read(child, i, dst.Field(f.index)); err != nil {
				return inField(f.name, err)
			}
		}
		return nil
	}
	return dt, ap, rd, nil
}

func listCodec(t reflect.Type) (arrow.DataType, appendFunc, readFunc, error) {
	edt, eap, erd, err := kindCodec(t.Elem())
	if err != nil {
		return nil, nil, nil, err
	}
	dt := arrow.ListOf(edt)
	ap := appendList(t, eap)
	rd := func(a arrow.Array, i int, dst reflect.Value) error {
		la := a.(array.ListLike)
		start, end := la.ValueOffsets(i)
		n := int(end - start)
		out := reflect.MakeSlice(t, n, n)
		if !readListFast(la.ListValues(), int(start), out) {
			vals := la.ListValues()
			for k := 0; k < n; k++ {
				if vals.IsNull(int(start) + k) {
					continue
				}
				if err := erd(vals, int(start)+k, out.Index(k)); err != nil {
					return inField(fmt.Sprintf("[%d]", k), err)
				}
			}
		}
		dst.Set(out)
		return nil
	}
	return dt, ap, rd, nil
}

// appendList has fast paths for the numeric slices packed sequences use, so
// token ids and masks go to Arrow with one bulk copy per row.
func appendList(t reflect.Type, eap appendFunc) appendFunc {
	switch t.Elem().Kind() {
	case reflect.Int32:
		return func(b array.Builder, v reflect.Value) int {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			s := v.Interface().([]int32)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues(s, nil)
			return 4*len(s) + 4
		}
	case reflect.Int8:
		return func(b array.Builder, v reflect.Value) int {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			s := v.Interface().([]int8)
			lb.ValueBuilder().(*array.Int8Builder).AppendValues(s, nil)
			return len(s) + 4
		}
	case reflect.Int64:
		if t.Elem() == reflect.TypeOf(int64(0)) {
			return func(b array.Builder, v reflect.Value) int {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				s := v.Interface().([]int64)
				lb.ValueBuilder().(*array.Int64Builder).AppendValues(s, nil)
				return 8*len(s) + 4
			}
		}
	}
	return func(b array.Builder, v reflect.Value) int {
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder()
		n := 4
		for k := 0; k < v.Len(); k++ {
			n += eap(vb, v.Index(k))
		}
		return n
	}
}

func readListFast(vals arrow.Array, start int, out reflect.Value) bool {
	if vals.NullN() != 0 {
		return false
	}
	n := out.Len()
	switch a := vals.(type) {
	case *array.Int32:
		if s, ok := out.Interface().([]int32); ok {
			copy(s, a.Int32Values()[start:start+n])
			return true
		}
	case *array.Int8:
		if s, ok := out.Interface().([]int8); ok {
			copy(s, a.Int8Values()[start:start+n])
			return true
		}
	case *array.Int64:
		if s, ok := out.Interface().([]int64); ok {
			copy(s, a.Int64Values()[start:start+n])
			return true
		}
	}
	return false
}
