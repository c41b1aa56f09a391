package ingest

import (
	"encoding/json"
	"errors"
	"strconv"
	"unsafe"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/internal/jsonscan"
)

// lineDecoder decodes one JSONL line into an engine.Item, giving exactly
// the Item and the error encoding/json.Unmarshal gives, at a fraction of
// its cost for the rows ingest mostly sees.
//
// The fast path walks the line once with the shared validating scanner
// (internal/jsonscan, which accepts exactly what encoding/json accepts) and
// sets the string, number and bool fields of Item, Interface and Verifier
// itself; the rarer nested values (ports, args, provenance, verifier
// strength) go to encoding/json member by member, into the same field, so
// their semantics (merging into a repeated key's earlier value, null
// leaving a field alone) are encoding/json's own. Anything the fast path
// does not reproduce exactly (a syntax error, a value of the wrong type, a
// number out of range, a key that needs unquoting, a line that is not an
// object) makes it decline, and the line is decoded again, from a zero
// Item, by encoding/json, whose error text the rejection row then carries.
//
// A lineDecoder holds only a scratch buffer for unquoting strings (as long
// as the longest escaped string seen); it is not safe for concurrent use,
// so each decoding goroutine has its own.
//
// With alias set, a string that needs no unquoting (most of a line's
// bytes: the instruction, the harness) is not copied: the Item's field
// points into the line itself. That is for lines in a buffer nothing
// writes again before the sink is done with the row (a JSONL chunk under
// Ingester.SinkCopies, see jsonl.go), and it saves a copy and an
// allocation per field.
type lineDecoder struct {
	scratch []byte
	alias   bool
	vslow   bool // the member being decoded is a string that needs unquoting
}

// errDecline stops the fast path; it never leaves the decoder.
var errDecline = errors.New("fast path declined")

// decode decodes raw into a fresh Item.
func (d *lineDecoder) decode(raw []byte) (engine.Item, error) {
	var it engine.Item
	err := d.decodeTo(raw, &it)
	return it, err
}

// decodeTo decodes raw into *it, which must be zero; on an error it is
// what encoding/json left (the caller rejects the line).
func (d *lineDecoder) decodeTo(raw []byte, it *engine.Item) error {
	if d.fast(raw, it) {
		return nil
	}
	*it = engine.Item{}
	return json.Unmarshal(raw, it)
}

// fast decodes raw into it and reports whether it did so exactly as
// encoding/json would; when it returns false, it may be partly filled.
func (d *lineDecoder) fast(raw []byte, it *engine.Item) bool {
	return jsonscan.MembersQuoted(raw, func(key []byte, slow bool, v []byte, vslow bool) error {
		k, ok := foldKey(key, slow)
		if !ok {
			return errDecline
		}
		d.vslow = vslow
		switch k {
		case "item_id":
			return d.str(v, &it.ItemID)
		case "parent_id":
			return d.str(v, &it.ParentID)
		case "lineage_id":
			return d.str(v, &it.LineageID)
		case "domain":
			return d.str(v, &it.Domain)
		case "family":
			return d.str(v, &it.Family)
		case "route":
			return d.str(v, &it.Route)
		case "operator":
			return d.str(v, &it.Operator)
		case "instruction":
			return d.str(v, &it.Instruction)
		case "reference":
			return d.str(v, &it.Reference)
		case "reference_status":
			return d.str(v, &it.ReferenceStatus)
		case "difficulty":
			return float(v, &it.Difficulty)
		case "cost":
			return float(v, &it.Cost)
		case "interface":
			return d.object(v, func(k string, v []byte) error { return d.iface(k, v, &it.Interface) })
		case "verifier":
			return d.object(v, func(k string, v []byte) error { return d.verifier(k, v, &it.Verifier) })
		case "provenance":
			return delegate(v, &it.Provenance)
		case "verifier_strength":
			return delegate(v, &it.VerifierStrength)
		}
		return nil // an unknown member is ignored, as encoding/json does
	}) == nil
}

func (d *lineDecoder) iface(k string, v []byte, in *engine.Interface) error {
	switch k {
	case "top":
		return d.str(v, &in.Top)
	case "clock":
		return d.str(v, &in.Clock)
	case "reset":
		return d.str(v, &in.Reset)
	case "reset_polarity":
		return d.str(v, &in.ResetPolarity)
	case "reset_kind":
		return d.str(v, &in.ResetKind)
	case "tolerance":
		return float(v, &in.Tolerance)
	case "allow_delegation":
		return boolean(v, &in.AllowDelegation)
	case "ports":
		return delegate(v, &in.Ports)
	case "args":
		return delegate(v, &in.Args)
	}
	return nil
}

func (d *lineDecoder) verifier(k string, v []byte, vf *engine.Verifier) error {
	switch k {
	case "kind":
		return d.str(v, &vf.Kind)
	case "harness":
		return d.str(v, &vf.Harness)
	case "top":
		return d.str(v, &vf.Top)
	case "pass_marker":
		return d.str(v, &vf.PassMarker)
	}
	return nil
}

// foldKey is the member name a key selects: encoding/json matches a key
// to a field exactly, else case-insensitively (bytes.EqualFold), and every
// field name here is lower-case ASCII, so for an ASCII key that is its
// lower-case form. A key that needs unquoting (an escape, a byte outside
// ASCII, which may fold onto ASCII: U+212A is K) is left to encoding/json.
//
// The name returned for a lower-case key is the key's own bytes (no
// copy: a string per member was most of the decoder's allocations); it
// is only compared, never kept.
func foldKey(key []byte, slow bool) (string, bool) {
	if slow {
		return "", false
	}
	if len(key) == 0 {
		return "", true
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			low := []byte(string(key))
			for j := i; j < len(low); j++ {
				if 'A' <= low[j] && low[j] <= 'Z' {
					low[j] += 'a' - 'A'
				}
			}
			return string(low), true
		}
	}
	return unsafe.String(&key[0], len(key)), true
}

// object walks the members of the (already validated) object v; null
// leaves the struct as it is, any other kind of value declines.
func (d *lineDecoder) object(v []byte, fn func(k string, v []byte) error) error {
	if string(v) == "null" {
		return nil
	}
	if v[0] != '{' {
		return errDecline
	}
	return jsonscan.MembersQuoted(v, func(key []byte, slow bool, v []byte, vslow bool) error {
		k, ok := foldKey(key, slow)
		if !ok {
			return errDecline
		}
		d.vslow = vslow
		return fn(k, v)
	})
}

// str sets *dst from a JSON string; null leaves it, anything else declines.
func (d *lineDecoder) str(v []byte, dst *string) error {
	switch v[0] {
	case '"':
		s := v[1 : len(v)-1] // the raw bytes are the string unless the scan saw it needs unquoting
		if d.vslow {
			s, d.scratch = jsonscan.Contents(v, d.scratch)
		}
		switch {
		case len(s) == 0:
			*dst = ""
		case d.alias && unsafe.SliceData(s) == &v[1]: // v's own bytes, not scratch
			*dst = unsafe.String(&s[0], len(s))
		default:
			*dst = string(s)
		}
		return nil
	case 'n':
		return nil
	}
	return errDecline
}

// float sets *dst from a JSON number as encoding/json does
// (strconv.ParseFloat; out of range declines, to be encoding/json's error).
func float(v []byte, dst *float64) error {
	switch c := v[0]; {
	case c == 'n':
		return nil
	case c == '-' || ('0' <= c && c <= '9'):
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return errDecline
		}
		*dst = f
		return nil
	}
	return errDecline
}

func boolean(v []byte, dst *bool) error {
	switch string(v) {
	case "null":
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return errDecline
	}
	return nil
}

// delegate decodes a rare nested value with encoding/json into the field
// itself (so a repeated key merges as encoding/json merges it); its error
// declines.
func delegate(v []byte, dst any) error {
	if json.Unmarshal(v, dst) != nil {
		return errDecline
	}
	return nil
}
