// Package bufpool lends large byte buffers by size class, so that a
// stream of requests or fetch answers of a few MiB each does not make the
// Go runtime allocate, zero and fault in that much fresh memory every time
// — which, for a node writing to the page cache, costs more than the
// write.
//
// A buffer from Get belongs to its caller until the caller gives it back
// with Put. Put only what nothing refers to any more: whoever gets the
// buffer next writes over it. Each user of a Pool documents the point
// where its buffers come back (transport: after the handler of a Produce
// or Fetch returned; broker: once a fetch answer was written to a
// follower's connection).
package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Pool lends buffers of 64 KiB to 64 MiB, in powers of two. Smaller or
// larger ones are allocated and left to the collector. The zero Pool is
// ready; a Pool is safe for concurrent use.
type Pool struct {
	classes [classes]sync.Pool
}

const (
	// minShift is the smallest pooled buffer, 64 KiB.
	minShift = 16
	// classes are the sizes pooled: 64 KiB, 128 KiB, ... 64 MiB.
	classes = 11
)

// poison, when set, fills every buffer given back with 0xAA: a buffer put
// back while something still reads it then shows as damage, not as the
// right bytes by luck. Tests set it with Poison.
var poison atomic.Bool

// Poison sets whether Put overwrites what it is given, for tests that
// check a buffer is not given back too early, and returns the previous
// setting.
func Poison(on bool) bool { return poison.Swap(on) }

// classOf returns the class of a buffer of n bytes, or -1 for one not
// pooled.
func classOf(n int) int {
	if n <= 1<<(minShift-1) {
		return -1
	}
	c := max(bits.Len(uint(n-1))-minShift, 0) // the power of two at or above n
	if c >= classes {
		return -1
	}
	return c
}

// Get returns a buffer of length n, from the pool when one of its class is
// there. Its content is undefined.
func (p *Pool) Get(n int) []byte {
	c := classOf(n)
	if c < 0 {
		return make([]byte, n)
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<(c+minShift))
}

// Put gives back a buffer from Get that nothing refers to any more. A
// buffer whose capacity is not a class's size (one Get did not pool, or
// one that append grew) is dropped.
func (p *Pool) Put(b []byte) {
	c := classOf(cap(b))
	if c < 0 || cap(b) != 1<<(c+minShift) {
		return
	}
	b = b[:cap(b)]
	if poison.Load() {
		for i := range b {
			b[i] = 0xAA
		}
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
