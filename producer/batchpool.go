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
//
// Ownership: a batch's buffer goes to the client as a ProduceRequest's
// Records (Builder.Finish, no copy), which the client borrows until its
// Produce returns (transport.ProduceRequest). A batch is put back only
// once it is settled — after the last Produce carrying it returned, and
// after its promises ran — so no client or node holds its bytes when
// newBatch writes over them. A node that kept a batch's bytes past
// Produce's return is what corrupted acknowledged records once (the log's
// group commit); the integrity suite (internal/integrity) is the guard.
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
