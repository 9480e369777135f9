package transport

import (
	"math/bits"
	"sync"
)

// framePool lends a Server the memory it reads large request frames into,
// so that a stream of produce requests of a few MiB does not make the Go
// runtime allocate, zero and fault in that much fresh memory for each one
// (which cost more than writing the records to the page cache).
//
// Ownership: a frame from get belongs to the connection that read it. The
// connection lends it to the handler for one call — a Client borrows a
// ProduceRequest's Records only until Produce returns — and puts it back
// only after the call returned and nothing of the answer points into it:
// serveConn does so for Produce and Fetch requests alone, whose decoded
// fields keep no bytes of the frame beyond the call (strings are copies).
// Frames of other requests may be kept by their handlers (group metadata,
// assignments) and are left to the garbage collector.
type framePool struct {
	classes [poolClasses]sync.Pool
}

const (
	// poolMinShift is the smallest pooled frame, 64 KiB: smaller ones are
	// cheap to allocate.
	poolMinShift = 16
	// poolClasses are the sizes pooled: 64 KiB, 128 KiB, ... 64 MiB.
	poolClasses = 11
)

// classOf returns the class of a frame of n bytes, or -1 for one not
// pooled.
func classOf(n int) int {
	if n <= 1<<(poolMinShift-1) {
		return -1
	}
	c := bits.Len(uint(n-1)) - poolMinShift // the power of two at or above n
	if c < 0 {
		c = 0
	}
	if c >= poolClasses {
		return -1
	}
	return c
}

// get returns a frame of n bytes, from the pool when one of its class is
// there. Its content is undefined.
func (p *framePool) get(n int) []byte {
	c := classOf(n)
	if c < 0 {
		return make([]byte, n)
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<(c+poolMinShift))
}

// put gives back a frame from get that nothing refers to any more.
func (p *framePool) put(b []byte) {
	c := classOf(cap(b))
	if c < 0 || cap(b) != 1<<(c+poolMinShift) {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
