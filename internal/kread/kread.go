// Package kread reads the Kafka binary encodings of internal-topic
// records (__consumer_offsets, __share_group_state) with franz-go's
// kbin.Reader, keeping the first failure as the reading package's own
// corruption sentinel, so that a truncated or corrupt record is an error
// value the package names, never a panic or a silent zero.
package kread

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reader reads one record's bytes; the first failure sticks in Err and
// makes every later read return zero.
type Reader struct {
	// B is what is left to read. The reader never copies it: values
	// that alias it (Span) belong to whoever owns the record's bytes.
	B []byte
	// Err is the first failure, wrapping Corrupt.
	Err error
	// Corrupt is the sentinel every failure wraps: the reading
	// package's ErrCorrupt.
	Corrupt error
}

// New returns a Reader of b whose failures wrap corrupt.
func New(b []byte, corrupt error) Reader { return Reader{B: b, Corrupt: corrupt} }

// Read returns what f reads from a kbin.Reader over r's bytes, moving r
// past them. Once r has failed, or when f runs out of bytes (kbin's
// failure, which a bad varint is too), it returns zero and r keeps the
// first failure: "cut short", with the bytes that were left.
func Read[T any](r *Reader, f func(*kbin.Reader) T) T {
	var zero T
	if r.Err != nil {
		return zero
	}
	kr := kbin.Reader{Src: r.B}
	v := f(&kr)
	if kr.Complete() != nil {
		// kbin's own error speaks of a response; this is a record.
		r.Err = fmt.Errorf("%w: cut short, %d bytes left", r.Corrupt, len(r.B))
		return zero
	}
	r.B = kr.Src
	return v
}

// Fail records a failure, as Corrupt, unless one came before.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w: %s", r.Corrupt, fmt.Sprintf(format, args...))
	}
}

// Int8, Int16, Int32, Int64, UUID and Uvarint (Kafka's, of at most 32
// bits in 5 bytes) read a value of their type, or return zero.
func (r *Reader) Int8() int8      { return Read(r, (*kbin.Reader).Int8) }
func (r *Reader) Int16() int16    { return Read(r, (*kbin.Reader).Int16) }
func (r *Reader) Int32() int32    { return Read(r, (*kbin.Reader).Int32) }
func (r *Reader) Int64() int64    { return Read(r, (*kbin.Reader).Int64) }
func (r *Reader) UUID() [16]byte  { return Read(r, (*kbin.Reader).Uuid) }
func (r *Reader) Uvarint() uint32 { return Read(r, (*kbin.Reader).Uvarint) }

// SkipTags reads a struct's tagged fields (flexible versions) and drops
// them.
func (r *Reader) SkipTags() {
	Read(r, func(kr *kbin.Reader) struct{} {
		kmsg.SkipTags(kr)
		return struct{}{}
	})
}

// Done returns the first failure, or a Corrupt failure when bytes are
// left over; what names the record in the error.
func (r *Reader) Done(what string) error {
	if r.Err != nil {
		return fmt.Errorf("%s: %w", what, r.Err)
	}
	if len(r.B) > 0 {
		return fmt.Errorf("%w: %s: %d bytes left over", r.Corrupt, what, len(r.B))
	}
	return nil
}
