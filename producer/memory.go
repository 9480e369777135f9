package producer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// bufferPool accounts buffer.memory, as Kafka's BufferPool does: a batch
// takes its share when it opens and gives it back when its records'
// promises have run. Waiters are served first come, first served, so a
// large batch is not starved by small ones.
//
// The pool hands out no bytes, only the right to hold them: batches keep
// their own buffers, which the producer recycles.
type bufferPool struct {
	mu      sync.Mutex
	free    int64
	waiters []*memoryWaiter
	closed  bool

	total int64
	// waiting counts the waiters, read without the lock by the sender,
	// which sends every batch at once while someone waits (Kafka's
	// "exhausted" readiness).
	waiting atomic.Int32
}

// memoryWaiter is a Produce call blocked for memory. ready is closed when
// it is granted (granted set) or the pool closes.
type memoryWaiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

func newBufferPool(total int64) *bufferPool {
	return &bufferPool{free: total, total: total}
}

// tryAcquire takes n bytes if they are free and nobody waits before us.
func (bp *bufferPool) tryAcquire(n int64) bool {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.closed || len(bp.waiters) > 0 || bp.free < n {
		return false
	}
	bp.free -= n
	return true
}

// acquire takes n bytes, waiting for them until ctx ends, the deadline
// passes (a zero deadline fails at once) or the pool closes. onWait runs
// once the caller is queued, before it blocks.
func (bp *bufferPool) acquire(ctx context.Context, n int64, deadline time.Time, onWait func()) error {
	bp.mu.Lock()
	if bp.closed {
		bp.mu.Unlock()
		return ErrClosed
	}
	if len(bp.waiters) == 0 && bp.free >= n {
		bp.free -= n
		bp.mu.Unlock()
		return nil
	}
	wait := time.Until(deadline)
	if deadline.IsZero() || wait <= 0 {
		free := bp.free
		bp.mu.Unlock()
		return bp.fullError(n, free, 0)
	}
	w := &memoryWaiter{n: n, ready: make(chan struct{})}
	bp.waiters = append(bp.waiters, w)
	bp.waiting.Add(1)
	bp.mu.Unlock()
	onWait()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = bp.fullError(n, -1, wait)
	case <-ctx.Done():
		err = fmt.Errorf("producer: waiting for buffer memory: %w", ctx.Err())
	}

	bp.mu.Lock()
	defer bp.mu.Unlock()
	if w.granted {
		return nil // granted as the wait ended: keep it
	}
	if bp.closed {
		return ErrClosed
	}
	bp.removeLocked(w)
	bp.grantLocked() // those behind a large request may fit now
	return err
}

func (bp *bufferPool) fullError(n, free int64, waited time.Duration) error {
	if waited == 0 {
		return fmt.Errorf("%w: a batch needs %d bytes, %d of buffer.memory %d are free, and max.block.ms is 0",
			ErrBufferFull, n, free, bp.total)
	}
	return fmt.Errorf("%w: no %d bytes of buffer.memory %d freed within max.block.ms %v",
		ErrBufferFull, n, bp.total, waited)
}

// release gives n bytes back and wakes the waiters they satisfy.
func (bp *bufferPool) release(n int64) {
	if n == 0 {
		return
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.free += n
	bp.grantLocked()
}

// grantLocked serves the waiters in order while memory lasts.
func (bp *bufferPool) grantLocked() {
	for len(bp.waiters) > 0 && bp.waiters[0].n <= bp.free {
		w := bp.waiters[0]
		bp.waiters[0] = nil
		bp.waiters = bp.waiters[1:]
		bp.waiting.Add(-1)
		bp.free -= w.n
		w.granted = true
		close(w.ready)
	}
}

func (bp *bufferPool) removeLocked(w *memoryWaiter) {
	for i, x := range bp.waiters {
		if x == w {
			bp.waiters = append(bp.waiters[:i], bp.waiters[i+1:]...)
			bp.waiting.Add(-1)
			return
		}
	}
}

// close fails every waiter, and every later acquire, with ErrClosed.
func (bp *bufferPool) close() {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.closed = true
	for _, w := range bp.waiters {
		close(w.ready)
	}
	bp.waiters = nil
	bp.waiting.Store(0)
}
