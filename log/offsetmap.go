package log

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// offsetMap maps each key of a log's dirty section to the offset of its
// latest record, as Kafka's cleaner's SkimpyOffsetMap does. Kafka keeps a
// fixed buffer of key hashes; this map keeps whole keys, so it never
// mistakes one key for another, and grows with the number of distinct keys
// in the dirty section.
type offsetMap struct {
	offsets map[string]int64
}

func newOffsetMap() *offsetMap { return &offsetMap{offsets: map[string]int64{}} }

// put records that key's latest record is at offset; offsets arrive in
// increasing order.
func (m *offsetMap) put(key []byte, offset int64) {
	if p, ok := m.offsets[string(key)]; ok && p >= offset {
		return
	}
	m.offsets[string(key)] = offset
}

// superseded reports whether a record of key at offset has a later one.
func (m *offsetMap) superseded(key []byte, offset int64) bool {
	latest, ok := m.offsets[string(key)]
	return ok && offset < latest
}

// buildOffsetMap reads the dirty segments' data batches into the map.
// Control batches hold no keys of the topic's and records without a key
// are never kept, so neither goes in; nor do the records of transactions
// that aborted or are still open (see keepsWhole), which must not
// supersede a committed record of their key.
func (c *cleaner) buildOffsetMap(ctx context.Context, dirty []*segment.Segment) error {
	for _, s := range dirty {
		if err := c.l.cleanCheck(ctx); err != nil {
			return err
		}
		sc := segment.NewScanner(s.File(), 0, s.Size(), segment.ScanBatches)
		for sc.Next() {
			h := sc.Header()
			if h.Attributes.IsControl() || h.NumRecords == 0 || c.txns.keepsWhole(&h) {
				continue
			}
			b, err := record.DecodeInto(c.records, sc.Batch(), record.VerifyCRC)
			if err != nil {
				return fmt.Errorf("log: clean %s: segment %d at %d: %w", c.l.dir, s.BaseOffset(), sc.Pos(), err)
			}
			c.records = b.Records
			for _, r := range b.Records {
				if r.Key != nil {
					c.offsets.put(r.Key, r.Offset)
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("log: clean %s: %w", c.l.dir, err)
		}
	}
	return nil
}

// findProducerTails finds the last data batch of each producer in the whole
// log, from the batch headers. The cleaner keeps those batches, emptied if
// need be, because a producer's state (epoch, last sequence) is rebuilt
// from the header of its last batch, as Kafka's cleaner keeps them. On the
// way it follows the transactions (see cleanerTxns).
func (c *cleaner) findProducerTails(ctx context.Context, segs []*segment.Segment) error {
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
			if !h.Attributes.IsControl() {
				c.producerTails[h.ProducerID] = h.BaseOffset
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
			if ok {
				c.txns.marker(&h, m.Type)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("log: clean %s: %w", c.l.dir, err)
		}
	}
	return nil
}

// cleanerTxns is what a clean knows of the log's transactions, from a
// scan of the whole log as it was when the clean began: the first offset
// of each producer's transaction still open at its end, and the offset
// ranges of the transactions that aborted. Their records stay as they are
// — an open transaction may yet commit, and an aborted one's records are
// skipped by read_committed readers through the .txnindex, which names
// its first offset — and stay out of the offset map. (Kafka's cleaner
// removes aborted transactions' records and, later, their markers; this
// one does neither yet.)
type cleanerTxns struct {
	open    map[int64]int64      // producer ID -> first offset of its open transaction
	aborted map[int64][][2]int64 // producer ID -> [first offset, marker offset] of each aborted transaction, in order
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
// transaction.
func (t *cleanerTxns) marker(h *record.Header, typ record.ControlType) {
	first, ok := t.open[h.ProducerID]
	if !ok || typ != record.ControlAbort && typ != record.ControlCommit {
		return
	}
	delete(t.open, h.ProducerID)
	if typ == record.ControlAbort {
		t.aborted[h.ProducerID] = append(t.aborted[h.ProducerID], [2]int64{first, h.BaseOffset})
	}
}

// keepsWhole reports whether a data batch belongs to a transaction that is
// open or aborted: the cleaner leaves it as it is.
func (t *cleanerTxns) keepsWhole(h *record.Header) bool {
	if !h.Attributes.IsTransactional() || h.Attributes.IsControl() || h.ProducerID < 0 {
		return false
	}
	if first, ok := t.open[h.ProducerID]; ok && h.BaseOffset >= first {
		return true
	}
	rs := t.aborted[h.ProducerID]
	i, _ := slices.BinarySearchFunc(rs, h.BaseOffset, func(r [2]int64, off int64) int { return cmp.Compare(r[1], off) })
	return i < len(rs) && rs[i][0] <= h.BaseOffset
}
