package consumer

import (
	"cmp"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
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

// abortedBatches returns the base offsets, ascending, of the batches of
// data — whole batches of one fetch answer, in offset order — that a
// read_committed consumer skips for belonging to one of the aborted
// transactions txns. Control batches are not listed: they are skipped
// anyway. A batch whose header does not parse ends the walk, leaving it
// for the decoder to report.
func abortedBatches(data []byte, txns []transport.AbortedTransaction) []int64 {
	list := make([]abortedTxn, len(txns))
	for i, t := range txns {
		list[i] = abortedTxn{producerID: t.ProducerID, firstOffset: t.FirstOffset}
	}
	f := newAbortedFilter(list)
	var skipped []int64
	for pos := 0; pos < len(data); {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || h.Size() > len(data)-pos {
			break
		}
		batch := data[pos : pos+h.Size()]
		pos += h.Size()
		var first record.Record
		if h.Attributes.IsControl() {
			if b, err := record.Decode(batch); err == nil && len(b.Records) > 0 {
				first = b.Records[0]
			}
		}
		if f.skip(&h, first) && !h.Attributes.IsControl() {
			skipped = append(skipped, h.BaseOffset)
		}
	}
	return skipped
}

// isAborted reports whether the batch at base offset base is one of
// aborted (as abortedBatches returns them).
func isAborted(aborted []int64, base int64) bool {
	if len(aborted) == 0 {
		return false
	}
	_, ok := slices.BinarySearch(aborted, base)
	return ok
}
