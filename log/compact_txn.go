package log

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// The cleaner cleans transactions as Kafka's does (KIP-98's cleaning,
// Kafka's CleanedTransactionMetadata, and KIP-534's delete horizon for
// markers):
//
//   - Nothing of a transaction not yet decided is cleaned. The partition
//     passes its last stable offset as CleanBounds.UpTo, so that the
//     cleanable section ends before the first offset of the oldest
//     undecided transaction. Whatever bound a caller passes, a
//     transaction with no marker in the log stays whole and out of the
//     key map.
//   - An aborted transaction's data batches go, whatever their keys, and
//     never feed the key map: an aborted record must not supersede the
//     committed record of its key before it, which is then its key's
//     latest. (The batch that holds its producer's state stays, emptied.)
//   - A marker stays while any data batch of its transaction is in the
//     log: without it, a producer state rebuilt from the log would find
//     the transaction open for good, and the last stable offset stuck.
//     Once none is, its batch is stamped with a delete horizon
//     DeleteRetentionMs ahead, as a tombstone's is, and the first clean
//     after the horizon removes it — a consumer that read the
//     transaction's records has had delete.retention.ms to read its
//     marker. A marker that holds its producer's epoch, or lies at or
//     above CleanBounds.KeepMarkersFrom, stays (stamped).
//   - A cleaned segment's .txnindex keeps the entries of the aborted
//     transactions whose batches were in the log when the clean began
//     (this clean removes them, and keeps the marker), and drops the
//     others: their markers are stamped or removed by the same rewrite,
//     and no record of theirs is left for a read_committed fetch to skip.
//
// The cleaner learns the transactions from a scan of the whole log at the
// start of each clean — batch headers, and markers whole for their type —
// the same way the producer state learns them, rather than from the
// .txnindex that Kafka's cleaner reads: the ranges are the same, the
// .txnindex's producer id, first offset and marker, but recovery may leave
// a .txnindex in doubt until the partition rebuilds it, and the log
// itself is never in doubt. Every decision is a function of that scan,
// the key map and the clean's time, not of the order the batches are
// filtered in, so cleaning a segment and asking whether it would change
// agree.

// cleanerRules switches the cleaner's transaction rules off one at a
// time (the zero value leaves every rule on). Tests use it to show that
// each rule is what keeps their invariant (negative controls).
type cleanerRules struct {
	// keepAborted keeps aborted transactions' batches as they are.
	keepAborted bool
	// abortedKeys lets aborted transactions' records into the key map.
	abortedKeys bool
	// markersOfLive lets the markers of transactions whose batches are in
	// the log be stamped and removed as if their transactions were empty.
	markersOfLive bool
	// keepMarkers keeps every marker as it is, never stamped or removed.
	keepMarkers bool
}

// txnState is what a data batch is to the cleaner.
type txnState uint8

const (
	// txnNone is a batch outside transactions, or in a committed one.
	txnNone txnState = iota
	// txnOpen is a batch of a transaction with no marker in the log.
	txnOpen
	// txnAborted is a batch of an aborted transaction.
	txnAborted
)

// cleanerTxns is what a clean knows of the log's transactions, from a
// scan of the whole log as it was when the clean began.
type cleanerTxns struct {
	// open maps each producer with a transaction open at the end of the
	// log (during the scan: at the batch scanned) to its first offset.
	open map[int64]int64
	// aborted holds each producer's aborted transactions with a batch in
	// the log, as [first offset, marker offset], in order.
	aborted map[int64][][2]int64
	// live holds the offsets of the markers whose transactions had a data
	// batch in the log.
	live map[int64]bool
}

// data notes a data batch of a producer: a transactional one opens a
// transaction when none is open.
func (t *cleanerTxns) data(h *record.Header) {
	if !h.Attributes.IsTransactional() {
		return
	}
	if _, ok := t.open[h.ProducerID]; !ok {
		t.open[h.ProducerID] = h.BaseOffset
	}
}

// marker notes a COMMIT or ABORT marker, which closes its producer's open
// transaction, if it has one: a transaction with a data batch.
func (t *cleanerTxns) marker(h *record.Header, typ record.ControlType) {
	first, ok := t.open[h.ProducerID]
	if !ok {
		return // an empty transaction
	}
	delete(t.open, h.ProducerID)
	t.live[h.BaseOffset] = true
	if typ == record.ControlAbort {
		t.aborted[h.ProducerID] = append(t.aborted[h.ProducerID], [2]int64{first, h.BaseOffset})
	}
}

// state says whether a data batch belongs to a transaction that aborted
// or has no marker.
func (t *cleanerTxns) state(h *record.Header) txnState {
	if !h.Attributes.IsTransactional() || h.Attributes.IsControl() || h.ProducerID < 0 {
		return txnNone
	}
	if first, ok := t.open[h.ProducerID]; ok && h.BaseOffset >= first {
		return txnOpen
	}
	rs := t.aborted[h.ProducerID]
	i, _ := slices.BinarySearchFunc(rs, h.BaseOffset, func(r [2]int64, off int64) int { return cmp.Compare(r[1], off) })
	if i < len(rs) && rs[i][0] <= h.BaseOffset {
		return txnAborted
	}
	return txnNone
}

// producerTail is where a producer's state lies in the log. A producer's
// state is rebuilt from its last data batch, which holds its epoch and
// last sequence — or, once a marker has begun a newer epoch (a
// transaction version 2 marker, or the abort that fenced it), from that
// marker, which holds the epoch. The cleaner keeps that batch, emptied if
// need be, as Kafka's cleaner keeps each active producer's last batch.
type producerTail struct {
	data, marker     int64 // base offsets of its last data batch, and of its last marker after it; -1 for none
	dataEpoch, epoch int16 // the epochs of that data batch and of its last batch
}

// holds reports whether h is the batch that holds the producer's state.
func (t *producerTail) holds(h *record.Header) bool {
	if t.data >= 0 && t.dataEpoch == t.epoch {
		return !h.Attributes.IsControl() && h.BaseOffset == t.data
	}
	return h.Attributes.IsControl() && h.BaseOffset == t.marker
}

// holdsProducerState reports whether h is the batch that holds its
// producer's state (see producerTail).
func (c *cleaner) holdsProducerState(h *record.Header) bool {
	t, ok := c.tails[h.ProducerID]
	return ok && h.ProducerID >= 0 && t.holds(h)
}

// scanTransactions reads the batch headers of the whole log, and its
// markers, for where each producer's state lies (producerTail) and the
// transactions (cleanerTxns).
func (c *cleaner) scanTransactions(ctx context.Context, segs []*segment.Segment) error {
	var buf []byte
	for _, s := range segs {
		if err := c.l.cleanCheck(ctx); err != nil {
			return err
		}
		sc := segment.NewScanner(s.File(), 0, s.Size(), segment.ScanHeaders)
		for sc.Next() {
			h := sc.Header()
			if h.ProducerID < 0 {
				continue
			}
			t := c.tails[h.ProducerID]
			if t == nil {
				t = &producerTail{data: -1, marker: -1}
				c.tails[h.ProducerID] = t
			}
			if !h.Attributes.IsControl() {
				t.data, t.dataEpoch, t.epoch, t.marker = h.BaseOffset, h.ProducerEpoch, h.ProducerEpoch, -1
				c.txns.data(&h)
				continue
			}
			// A marker's type is in its record: read the (small) batch.
			buf = slices.Grow(buf[:0], h.Size())[:h.Size()]
			if n, err := s.File().ReadAt(buf, sc.Pos()); n < len(buf) {
				return fmt.Errorf("log: clean %s: read segment %d at %d: %w", c.l.dir, s.BaseOffset(), sc.Pos(), err)
			}
			m, ok, err := record.ParseControlBatch(buf, record.VerifyCRC)
			if err != nil {
				return fmt.Errorf("log: clean %s: segment %d at %d: %w", c.l.dir, s.BaseOffset(), sc.Pos(), err)
			}
			if ok && (m.Type == record.ControlAbort || m.Type == record.ControlCommit) {
				t.marker, t.epoch = h.BaseOffset, h.ProducerEpoch
				c.txns.marker(&h, m.Type)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("log: clean %s: %w", c.l.dir, err)
		}
	}
	return nil
}

// mapsKeys reports whether a data batch's records go into the key map:
// not those of a transaction that aborted or has no marker.
func (c *cleaner) mapsKeys(h *record.Header) bool {
	switch c.txns.state(h) {
	case txnOpen:
		return false
	case txnAborted:
		return c.l.cleaning.off.abortedKeys
	}
	return true
}

// filterControl returns what the cleaned segment keeps of a control batch
// (see filter): a marker whose transaction has a batch in the log as it
// is; one of an empty transaction stamped with a delete horizon, or, once
// the horizon has passed, nothing — or as it is when it holds its
// producer's state or lies at or above KeepMarkersFrom.
func (c *cleaner) filterControl(h *record.Header, batch []byte, mustKeep bool) (kept []byte, same bool, err error) {
	if h.NumRecords == 0 {
		return c.emptied(h, batch, mustKeep) // a marker emptied before
	}
	if h.ProducerID < 0 || c.l.cleaning.off.keepMarkers {
		return batch, true, nil
	}
	b, err := record.DecodeInto(c.records, batch, record.SkipCRC) // the scanner checked it
	if err != nil {
		return nil, false, err
	}
	c.records = b.Records
	m, err := record.ParseControlRecord(b.Records[0])
	if err != nil {
		return nil, false, err
	}
	switch {
	case m.Type != record.ControlAbort && m.Type != record.ControlCommit:
		return batch, true, nil // not a marker: Kafka keeps such control batches
	case c.txns.live[h.BaseOffset] && !c.l.cleaning.off.markersOfLive:
		return batch, true, nil
	case !h.Attributes.HasDeleteHorizon():
		return c.rewrite(h, b.Records, true), false, nil
	case c.now < h.BaseTimestamp || h.BaseOffset >= c.bounds.KeepMarkersFrom || c.holdsProducerState(h):
		return batch, true, nil
	}
	c.stats.MarkersRemoved++
	return c.emptied(h, batch, mustKeep)
}

// emptied returns what the cleaned segment keeps of a batch none of whose
// records stay (see filter): the batch emptied when it holds its
// producer's state, an empty batch of no producer when it ends its group,
// whose end offset the cleaned segment keeps, and otherwise nothing.
func (c *cleaner) emptied(h *record.Header, batch []byte, mustKeep bool) (kept []byte, same bool, err error) {
	switch {
	case c.holdsProducerState(h):
		if h.NumRecords == 0 {
			return batch, true, nil
		}
		return record.EmptyBatch(*h), false, nil
	case !mustKeep:
		return nil, false, nil
	case h.NumRecords == 0 && h.ProducerID < 0 && !h.Attributes.IsControl() && !h.Attributes.IsTransactional():
		return batch, true, nil
	}
	return fillerBatch(h), false, nil
}

// fillerBatch returns an empty batch of no producer with h's offsets,
// leader epoch and max timestamp: what a cleaned segment keeps of a batch
// that only keeps its end offset. Keeping its producer would keep a
// transactional batch in the log, and its transaction's marker with it.
func fillerBatch(h *record.Header) []byte {
	o := record.DefaultBatchOptions()
	o.BaseOffset, o.PartitionLeaderEpoch, o.TimestampType = h.BaseOffset, h.PartitionLeaderEpoch, h.Attributes.TimestampType()
	b := record.NewBuilder(o).Build()
	record.SetMaxTimestamp(b, o.TimestampType, h.MaxTimestamp)
	record.SetLastOffsetDelta(b, h.LastOffsetDelta)
	return b
}

// keepsAbortedTxn reports whether a cleaned segment keeps a .txnindex
// entry: whether its transaction had a batch in the log when the clean
// began.
func (c *cleaner) keepsAbortedTxn(e segment.AbortedTxn) bool {
	return c.txns.live[e.LastOffset]
}
