package producer

import "sync"

// batchPool keeps settled batches, with their buffers, for new batches to
// reuse, as Kafka's BufferPool keeps free batch.size buffers. A sync.Pool
// did this before, but the garbage collector empties a sync.Pool every
// cycle or two, and a producer of small records allocates enough (its
// callers' records) to run a cycle every few batches: each new batch then
// allocated its buffer afresh, and the runtime zeroed it and later gave it
// back to the OS (memclr and madvise, a tenth of perf produce's CPU).
//
// It keeps at most max batches: buffer.memory over batch.size, the batches
// the producer can hold at once anyway.
type batchPool struct {
	mu   sync.Mutex
	free []*batch
	max  int
}

func newBatchPool(bufferMemory int64, batchSize int) *batchPool {
	return &batchPool{max: int(max(1, bufferMemory/int64(max(batchSize, 1))))}
}

// get returns a kept batch, or nil when there is none.
func (bp *batchPool) get() *batch {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	n := len(bp.free)
	if n == 0 {
		return nil
	}
	b := bp.free[n-1]
	bp.free[n-1] = nil
	bp.free = bp.free[:n-1]
	return b
}

// put keeps b for reuse unless the pool is full.
func (bp *batchPool) put(b *batch) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if len(bp.free) < bp.max {
		bp.free = append(bp.free, b)
	}
}
