package partition

import (
	"context"
	"math"
	"time"

	"github.com/partlog/partlog/record"
)

// WaitTurn waits, for at most timeout, until an idempotent producer's
// batch is no longer ahead of the batches before it: until the producer's
// last batch in the partition is the one just before it, in sequence. A
// producer keeps up to five batches of a partition in flight, and
// concurrent requests may reach the leader out of order; a batch that
// overtook its predecessor would be refused as out of order and sent again
// alone. It returns at once for a batch with no producer id, one that is
// next in line, one the check will answer as a duplicate or refuse for
// another reason, and once ctx ends.
func (p *Partition) WaitTurn(ctx context.Context, batch []byte, timeout time.Duration) {
	h, err := record.ParseHeader(batch)
	if err != nil || !hasProducer(&h) {
		return
	}
	var deadline <-chan time.Time
	m := p.producers
	for {
		m.mu.Lock()
		if err := m.ensureLoadedLocked(); err != nil || !m.state.ahead(&h) {
			m.mu.Unlock()
			return
		}
		if m.turn == nil {
			m.turn = make(chan struct{})
		}
		turn := m.turn
		m.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-turn:
		case <-deadline:
			return
		case <-ctx.Done():
			return
		}
	}
}

// ahead reports whether h is its producer's batch in the current epoch
// with a sequence past the one after the producer's last batch — or the
// first batch of a producer the state does not know that does not start
// at sequence 0 — so that batches before it may still be on their way.
func (s *producerState) ahead(h *record.Header) bool {
	e := s.producers[h.ProducerID]
	if e == nil {
		return h.BaseSequence > 0
	}
	if h.ProducerEpoch != e.ProducerEpoch || len(e.Batches) == 0 {
		return false
	}
	last := int64(e.lastSequence())
	gap := (int64(h.BaseSequence) - last - 1 + math.MaxInt32 + 1) % (math.MaxInt32 + 1) // mod 2^31, as sequences wrap
	return gap > 0 && gap < math.MaxInt32/2
}
