package log

import (
	"fmt"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// The log keeps each segment's .txnindex, Kafka's index of the aborted
// transactions whose ABORT markers the segment holds, but does not know
// transactions: which batch completes which aborted transaction comes
// from the producer state, which the partition keeps. The partition passes
// it to every append as a TxnIndexer, and the log adds the entry to the
// segment the marker lands in, in the same step as the marker's write.
// When the partition rebuilds its state from the log (after a restart, a
// truncation, or damage a .txnindex check found), it rewrites the entries
// from where its rebuild started with RewriteAbortedTxns.
//
// txnMu makes each of those writes one step against the others: an append
// writes its entry under the append lock, a rewrite under mu (read) only,
// and both hold txnMu. Entries are written in marker order and a segment
// skips an entry whose marker is not after its last, so an entry a rewrite
// already wrote is not written twice.

// TxnIndexer says which batches complete an aborted transaction. An
// AppendCheck given to AppendChecked may implement it, and
// AppendAsFollowerIndexed takes one.
type TxnIndexer interface {
	// AbortedTxn is called with the append lock held, for each batch in
	// log order once it is written and before it is published, with its
	// header (offsets assigned) and bytes, which it must not keep. When
	// the batch is an ABORT marker closing a transaction it returns the
	// entry for the .txnindex of the segment the batch went to, whose
	// LastOffset is the batch's offset. It should be quick, and must not
	// call the Log's writers.
	AbortedTxn(h record.Header, batch []byte) (segment.AbortedTxn, bool)
}

// indexTxn asks x whether the batch just written to s completes an aborted
// transaction and, if so, adds the entry to s's .txnindex. A failure
// fails the log: the index and the log would disagree. The caller holds
// appendMu.
func (l *Log) indexTxn(x TxnIndexer, s *segment.Segment, h record.Header, batch []byte) error {
	if x == nil {
		return nil
	}
	e, ok := x.AbortedTxn(h, batch)
	if !ok {
		return nil
	}
	l.txnMu.Lock()
	err := s.AppendAbortedTxn(e)
	l.txnMu.Unlock()
	if err != nil {
		return l.flush.fail(fmt.Errorf("index aborted transaction of producer %d at %d in %s: %w", e.ProducerID, e.LastOffset, l.dir, err))
	}
	return nil
}

// RewriteAbortedTxns replaces the .txnindex entries of every marker at or
// above from with txns, as a rebuild of the producer state from from on
// found them: entries of markers at or above from are removed (and any
// damage after the entries kept), then each of txns is added to the
// segment holding its marker. txns must be in marker order, every marker
// at or above from and in the log; a marker no segment holds any more
// (retention removed it meanwhile) is skipped. Appends may run meanwhile:
// an entry one of them adds is kept when its marker is in txns. The
// entries are not synced (see SyncTxnIndexes). It reads txns until it
// returns.
func (l *Log) RewriteAbortedTxns(from int64, txns []segment.AbortedTxn) error {
	for _, e := range txns {
		if e.LastOffset < from {
			return fmt.Errorf("log: rewrite aborted transactions of %s from %d: marker at %d", l.dir, from, e.LastOffset)
		}
	}
	return l.withTxnIndexes(func() error {
		for i := l.floor(from); i < len(l.segments); i++ {
			if _, err := l.segments[i].TruncateAbortedTxns(from); err != nil {
				return fmt.Errorf("log: rewrite aborted transactions of %s: %w", l.dir, err)
			}
		}
		for _, e := range txns {
			s := l.segments[l.floor(e.LastOffset)]
			if e.LastOffset < s.BaseOffset() || e.LastOffset >= s.NextOffset() {
				continue
			}
			if err := s.AppendAbortedTxn(e); err != nil {
				return fmt.Errorf("log: rewrite aborted transactions of %s: %w", l.dir, err)
			}
		}
		return nil
	})
}

// SyncTxnIndexes makes every .txnindex entry written so far durable. The
// partition calls it before it writes a producer state snapshot: a
// snapshot says the entries below its offset need no rebuilding.
func (l *Log) SyncTxnIndexes() error {
	return l.withTxnIndexes(func() error {
		for _, s := range l.segments {
			if err := s.SyncTxnIndex(); err != nil {
				return fmt.Errorf("log: %w", err)
			}
		}
		return nil
	})
}

// withTxnIndexes runs fn with the segment list fixed (mu, read) and the
// .txnindex writes its own (txnMu), unless the log is closed.
func (l *Log) withTxnIndexes(fn func() error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	l.txnMu.Lock()
	defer l.txnMu.Unlock()
	return fn()
}

// CollectAbortedTxns appends to dst the aborted transactions that overlap
// the offsets [fetchOffset, upperBound): those whose ABORT marker is at or
// after fetchOffset and whose first offset is before upperBound. It reads
// the .txnindex of the segment holding fetchOffset and of the segments
// after it until an entry's last stable offset reaches upperBound, as
// Kafka's collectAbortedTransactions does for a read_committed fetch whose
// records end at upperBound: a transaction that began below upperBound
// may have its marker in any later segment, and one whose marker came
// when every open transaction began at or after upperBound tells that no
// later marker closes one that began before. A damaged .txnindex is an error matching
// segment.ErrCorruptTxnIndex.
func (l *Log) CollectAbortedTxns(dst []segment.AbortedTxn, fetchOffset, upperBound int64) ([]segment.AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, ErrClosed
	}
	for i := l.floor(fetchOffset); i < len(l.segments); i++ {
		var complete bool
		var err error
		if dst, complete, err = l.segments[i].CollectAbortedTxns(dst, fetchOffset, upperBound); err != nil {
			return dst, fmt.Errorf("log: %w", err)
		}
		if complete {
			break
		}
	}
	return dst, nil
}

// AbortedTxns returns every entry of every segment's .txnindex, oldest
// segment first: the log's whole aborted-transaction index, for
// inspection.
func (l *Log) AbortedTxns() ([]segment.AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	var out []segment.AbortedTxn
	for _, s := range l.segments {
		es, err := s.AbortedTxns()
		out = append(out, es...)
		if err != nil {
			return out, fmt.Errorf("log: %w", err)
		}
	}
	return out, nil
}
