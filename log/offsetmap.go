package log

import (
	"context"
	"fmt"

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
// that aborted or have no marker (see cleanerTxns.state), which must not
// supersede a committed record of their key: the aborted record goes, and
// the committed one before it is its key's latest.
func (c *cleaner) buildOffsetMap(ctx context.Context, dirty []*segment.Segment) error {
	for _, s := range dirty {
		if err := c.l.cleanCheck(ctx); err != nil {
			return err
		}
		sc := segment.NewScanner(s.File(), 0, s.Size(), segment.ScanBatches)
		for sc.Next() {
			h := sc.Header()
			if h.Attributes.IsControl() || h.NumRecords == 0 || !c.mapsKeys(&h) {
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
