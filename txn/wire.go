package txn

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The encodings of Kafka's generated messages that __transaction_state
// uses. Its key and version 0 of its value are classic: a string is an
// int16 length and its bytes, an array an int32 count (-1 for null) and its
// elements. Version 1 of the value is flexible: lengths are unsigned
// varints of n+1 (0 for null), and each struct ends with a tagged-field
// section — a varint count, then per field a varint tag, a varint size and
// the field's bytes, in ascending tag order. Fixed-size integers are
// big-endian in both.
//
// The decoder is strict: it accepts exactly the bytes the encoder writes
// (shortest varints, tags in ascending order, known tags only with values
// other than their defaults), so that whatever decodes encodes back to the
// same bytes.

// taggedField is a tagged field this package does not know, kept as read
// so that it is written back unchanged.
type taggedField struct {
	tag  uint32
	data []byte
}

// encoder appends Kafka's encodings to buf.
type encoder struct {
	buf []byte
}

func (e *encoder) i8(v int8)   { e.buf = append(e.buf, byte(v)) }
func (e *encoder) i16(v int16) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(v)) }
func (e *encoder) i32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *encoder) i64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

func (e *encoder) uvarint(v uint32) { e.buf = binary.AppendUvarint(e.buf, uint64(v)) }

// str writes s, classic (an int16 length) or compact; longer strings are
// cut to the most a classic string can hold.
func (e *encoder) str(s string, flexible bool) {
	if len(s) > math.MaxInt16 {
		s = s[:math.MaxInt16]
	}
	if flexible {
		e.uvarint(uint32(len(s)) + 1)
	} else {
		e.i16(int16(len(s)))
	}
	e.buf = append(e.buf, s...)
}

// arrayLen writes the length of an array, classic or compact.
func (e *encoder) arrayLen(n int, flexible bool) {
	if flexible {
		e.uvarint(uint32(n) + 1)
	} else {
		e.i32(int32(n))
	}
}

// nullArrayLen writes the length of a nullable array: null is -1 classic,
// 0 compact.
func (e *encoder) nullArrayLen(n int, null, flexible bool) {
	switch {
	case !null:
		e.arrayLen(n, flexible)
	case flexible:
		e.uvarint(0)
	default:
		e.i32(-1)
	}
}

// decoder reads Kafka's encodings from b. The first failure sticks in err;
// every read after it returns zero.
type decoder struct {
	b   []byte
	err error
}

// zeros stands in for the bytes of a failed fixed-size read.
var zeros [8]byte

// fail records the first failure, as ErrCorrupt.
func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

// next returns the next n bytes, or n zero bytes (n <= 8) after a failure.
func (d *decoder) next(n int) []byte {
	if d.err == nil && n <= len(d.b) {
		out := d.b[:n:n]
		d.b = d.b[n:]
		return out
	}
	d.fail("%d bytes wanted, %d left", n, len(d.b))
	return zeros[:min(n, len(zeros))]
}

func (d *decoder) i8() int8   { return int8(d.next(1)[0]) }
func (d *decoder) i16() int16 { return int16(binary.BigEndian.Uint16(d.next(2))) }
func (d *decoder) i32() int32 { return int32(binary.BigEndian.Uint32(d.next(4))) }
func (d *decoder) i64() int64 { return int64(binary.BigEndian.Uint64(d.next(8))) }

// uvarint reads an unsigned varint of at most 32 bits, written in the
// fewest bytes.
func (d *decoder) uvarint() uint32 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n <= 0 || v > math.MaxUint32:
		d.fail("bad varint")
		return 0
	case n > 1 && d.b[n-1] == 0:
		d.fail("varint longer than it needs to be")
		return 0
	}
	d.b = d.b[n:]
	return uint32(v)
}

// arrayLen reads the length of a string or array: -1 for null, which only
// nullable ones may be. Each element takes at least elemSize bytes, so a
// corrupt length cannot make the caller allocate much.
func (d *decoder) arrayLen(flexible, nullable bool, elemSize int) int {
	n := -1
	if flexible {
		n = int(d.uvarint()) - 1
	} else if v := d.i32(); v >= -1 {
		n = int(v)
	} else {
		d.fail("length %d", v)
	}
	switch {
	case d.err != nil:
		return 0
	case n == -1 && !nullable:
		d.fail("null where a value is required")
		return 0
	case n > len(d.b)/max(elemSize, 1):
		d.fail("%d elements in %d bytes", n, len(d.b))
		return 0
	}
	return n
}

// str reads a string that may not be null. A classic string's length is an
// int16; a compact one may be no longer, as in Kafka.
func (d *decoder) str(flexible bool) string {
	var n int
	if flexible {
		n = d.arrayLen(true, false, 1)
	} else {
		n = int(d.i16())
	}
	switch {
	case n < 0 || n > math.MaxInt16:
		d.fail("string length %d", n)
		return ""
	case d.err != nil:
		return ""
	}
	return string(d.next(n))
}

// tags reads a tagged-field section: known(tag, data) is called for each
// field, in the order read, and returns false for a tag it does not know,
// which then goes to the returned list. Tags must ascend.
func (d *decoder) tags(known func(tag uint32, data []byte) bool) []taggedField {
	var unknown []taggedField
	n := int(d.uvarint())
	if n > len(d.b)/2 { // a tag and a size take a byte each at least
		d.fail("%d tagged fields in %d bytes", n, len(d.b))
	}
	prev := int64(-1)
	for i := 0; i < n && d.err == nil; i++ {
		tag := d.uvarint()
		data := d.next(int(d.uvarint()))
		if d.err != nil {
			break
		}
		if int64(tag) <= prev {
			d.fail("tag %d after tag %d", tag, prev)
			break
		}
		prev = int64(tag)
		if !known(tag, data) {
			unknown = append(unknown, taggedField{tag, append([]byte{}, data...)})
		}
	}
	return unknown
}

// done returns the first failure, or ErrCorrupt when bytes are left over,
// naming what was decoded.
func (d *decoder) done(what string) error {
	if len(d.b) > 0 {
		d.fail("%d bytes left over", len(d.b))
	}
	if d.err == nil {
		return nil
	}
	return fmt.Errorf("txn: %s: %w", what, d.err)
}
