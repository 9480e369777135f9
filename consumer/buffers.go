package consumer

// By default every fetch reads into new memory, because the records Poll
// and Records return point into it and are the caller's to keep. With
// FetchBuffers(ReuseBuffers) the fetcher reads into buffers it used
// before: a node in this process then reads from the page cache into
// memory that is already mapped and often still in the CPU's caches,
// with no zeroing of fresh memory and no page faults. A buffer is shared
// by the chunks one fetch brought (one per partition) and by chunks that
// Poll or Records gave back from them; it counts them in refs. When the
// last is taken or dropped, the buffer retires: the records taken from it
// may still be in the caller's hands until the next Poll or the next turn
// of the Records loop, which frees the retired buffers for the fetcher.

// BufferPolicy says whether the consumer reuses its fetch buffers.
type BufferPolicy bool

// The buffer policies.
const (
	// KeepBuffers reads every fetch into new memory: records are the
	// caller's to keep. The default.
	KeepBuffers BufferPolicy = false
	// ReuseBuffers reads fetches into buffers used before: a record's
	// Key, Value and Headers are valid only until the next Poll, or until
	// the body of a Records loop returns, as bufio.Scanner's Bytes are
	// until the next Scan. Any Poll or turn of a Records loop, on any
	// goroutine, may reuse the memory of records handed out before it.
	// Copy what you keep.
	ReuseBuffers BufferPolicy = true
)

// FetchBuffers sets whether the consumer reuses the memory it fetches
// into; default KeepBuffers. ReuseBuffers makes a consumer in the same
// process as its node faster, the more so the larger its records: see
// ReuseBuffers for how long records stay valid then. It holds on to up to
// about FetchMaxBytes of buffers while the consumer is open. No Kafka key.
func FetchBuffers(p BufferPolicy) Option {
	return optionFunc(func(c *config) { c.buffers = p })
}

// fetchBuf is a buffer a fetch read into, when buffers are reused.
type fetchBuf struct {
	b []byte
	// refs counts the chunks that point into b.
	refs int
	// retired says b is in buffers.retired.
	retired bool
}

// buffers holds a consumer's reusable fetch buffers. Its fields are
// guarded by the consumer's mu.
type buffers struct {
	// free are ready for the fetcher; retired hold records that may still
	// be in the caller's hands.
	free, retired []*fetchBuf
	// least is the size of the largest answer that did not fit its
	// buffer: the buffers from then on are at least as large, so that a
	// batch larger than MaxPartitionFetchBytes (a fetch brings it whole)
	// is read into reused memory too.
	least int
}

// getLocked returns a buffer of at least size bytes for a fetch, with
// no references, or nil when buffers are not reused.
func (c *Consumer) getBufLocked(size int) *fetchBuf {
	if c.cfg.buffers != ReuseBuffers {
		return nil
	}
	size = max(size, c.bufs.least)
	for n := len(c.bufs.free); n > 0; n = len(c.bufs.free) {
		b := c.bufs.free[n-1]
		c.bufs.free[n-1] = nil
		c.bufs.free = c.bufs.free[:n-1]
		if cap(b.b) >= size {
			return b
		}
		// Sized for fewer partitions or smaller batches: let it go.
	}
	return &fetchBuf{b: make([]byte, 0, size)}
}

// outgrewLocked notes an answer of size bytes fetched into buf, which
// had to go to new memory when it is larger.
func (c *Consumer) outgrewLocked(buf *fetchBuf, size int) {
	if buf != nil && size > cap(buf.b) {
		c.bufs.least = max(c.bufs.least, size)
	}
}

// putLocked gives back a buffer that no chunk points into and whose bytes
// reached no caller.
func (c *Consumer) putBufLocked(b *fetchBuf) {
	if b != nil && b.refs == 0 {
		c.bufs.free = append(c.bufs.free, b)
	}
}

// unrefLocked drops a chunk's reference to its buffer; the last retires
// it.
func (c *Consumer) unrefLocked(ch *chunk) {
	b := ch.buf
	if b == nil {
		return
	}
	ch.buf = nil
	if b.refs--; b.refs == 0 && !b.retired {
		b.retired = true
		c.bufs.retired = append(c.bufs.retired, b)
	}
}

// recycleLocked frees the retired buffers, as Poll and each turn of the
// Records loop start: the records the caller had from them are no longer
// valid. A buffer that a chunk given back points into again stays out.
func (c *Consumer) recycleLocked() {
	for i, b := range c.bufs.retired {
		b.retired = false
		if b.refs == 0 {
			c.bufs.free = append(c.bufs.free, b)
		}
		c.bufs.retired[i] = nil
	}
	c.bufs.retired = c.bufs.retired[:0]
}

// copyOutSmall copies the data of chunks into memory of their own, and
// reports that it did, when together they fill less than a quarter of a
// buffer of size bytes: the fetch then gives the buffer back at once. So a
// buffer that chunks hold is at least a quarter full, and the buffers held
// stay within four times FetchMaxBytes however little each fetch brings.
func copyOutSmall(size int, chunks []*chunk) bool {
	total := 0
	for _, ch := range chunks {
		if ch != nil {
			total += len(ch.data)
		}
	}
	if total >= size/4 {
		return false
	}
	for _, ch := range chunks {
		if ch != nil {
			ch.data = append([]byte(nil), ch.data...)
		}
	}
	return true
}
