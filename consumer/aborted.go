package consumer

import (
	"cmp"
	"slices"

	"github.com/partlog/partlog/record"
)

// A read_committed consumer reads below the last stable offset, where
// every transaction has ended, and must still leave out the records of
// the transactions that aborted. A fetch answer names them — each aborted
// transaction's producer and first offset — and the consumer walks the
// batches in offset order, as Kafka's consumer does: from an aborted
// transaction's first offset on, that producer's transactional batches
// are skipped, until the producer's ABORT marker. Control batches (the
// markers) are never returned.

// abortedTxn is an aborted transaction a fetch answer names.
type abortedTxn struct {
	producerID  int64
	firstOffset int64
}

// abortedFilter tells, batch by batch in offset order, which batches a
// read_committed consumer skips.
type abortedFilter struct {
	// upcoming are the aborted transactions not yet reached, by first
	// offset.
	upcoming []abortedTxn
	// aborting are the producers inside an aborted transaction.
	aborting map[int64]bool
}

// newAbortedFilter returns a filter for the batches of one fetch answer
// with the aborted transactions txns; it does not keep txns.
func newAbortedFilter(txns []abortedTxn) *abortedFilter {
	f := &abortedFilter{upcoming: slices.Clone(txns), aborting: map[int64]bool{}}
	slices.SortFunc(f.upcoming, func(a, b abortedTxn) int { return cmp.Compare(a.firstOffset, b.firstOffset) })
	return f
}

// skip reports whether a read_committed consumer leaves out the batch
// with header h, whose first record is first (for a control batch: the
// marker). Call it for every batch, in offset order.
func (f *abortedFilter) skip(h *record.Header, first record.Record) bool {
	if h.ProducerID != record.NoProducerID {
		for len(f.upcoming) > 0 && f.upcoming[0].firstOffset <= h.LastOffset() {
			f.aborting[f.upcoming[0].producerID] = true
			f.upcoming = f.upcoming[1:]
		}
		if h.Attributes.IsControl() {
			if c, err := record.ParseControlRecord(first); err == nil && c.Type == record.ControlAbort {
				delete(f.aborting, h.ProducerID)
			}
		} else if h.Attributes.IsTransactional() && f.aborting[h.ProducerID] {
			return true
		}
	}
	return h.Attributes.IsControl()
}
