package partition

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// keyCheckRecords recycles the Records slices checkKeys decodes into, so
// that an append to a compacted topic does not allocate one per batch.
var keyCheckRecords = sync.Pool{New: func() any { return new([]record.Record) }}

// checkKeys rejects a batch for a compacted topic when one of its records
// has no key, as Kafka's broker does: the cleaner keeps the latest record
// of each key, so a record without one could never be kept. The error is
// kafka.ErrInvalidRecord, and a batch that does not decode is
// kafka.ErrCorruptMessage. Decoding validates the batch as
// record.Validate does — its CRC too with record.VerifyCRC — so the header
// it returns is the validated one.
func (p *Partition) checkKeys(batch []byte, crc record.CRCCheck) (record.Header, error) {
	pooled := keyCheckRecords.Get().(*[]record.Record)
	b, err := record.DecodeInto(*pooled, batch, crc)
	if err != nil {
		keyCheckRecords.Put(pooled)
		return record.Header{}, kafkaError(err)
	}
	defer func() {
		clear(b.Records) // the records alias batch: do not keep it alive
		*pooled = b.Records[:0]
		keyCheckRecords.Put(pooled)
	}()
	if b.Attributes.IsControl() {
		return b.Header, nil
	}
	for i, r := range b.Records {
		if r.Key == nil {
			return record.Header{}, fmt.Errorf("%w: compacted topic cannot accept message without key in topic partition %s-%d (record %d of the batch)",
				kafka.ErrInvalidRecord, p.topic, p.partition, i)
		}
	}
	return b.Header, nil
}

// Clean compacts the partition's log when its cleanup.policy includes
// compact (see log.Log.CleanWithin), within the bounds that the partition
// knows and the log does not, as Kafka's cleaner bounds each log:
//
//   - the cleanable section ends at the last stable offset, so that no
//     record of an undecided transaction is cleaned, nor anything after
//     its first offset — an open transaction's records, and the
//     transactional offsets of __consumer_offsets above it, stay as
//     written until the transaction is decided, and no record above the
//     high watermark is cleaned;
//   - no transaction marker at or above the oldest producer state
//     snapshot is removed: a load from a snapshot taken inside a
//     transaction finds it open, and only the marker closes it.
//
// The errors are the log's (log.ErrCleanAborted, log.ErrClosed, ...), or
// Kafka's when the producer state cannot be loaded.
func (p *Partition) Clean(ctx context.Context) (log.CleanStats, error) {
	b, err := p.cleanBounds()
	if err != nil {
		return log.CleanStats{}, err
	}
	return p.log.CleanWithin(ctx, b)
}

// cleanBounds returns the bounds of a clean of the partition's log (see
// Clean).
func (p *Partition) cleanBounds() (log.CleanBounds, error) {
	lso, err := p.LastStableOffset()
	if err != nil {
		return log.CleanBounds{}, err
	}
	b := log.CleanBounds{UpTo: lso, KeepMarkersFrom: math.MaxInt64}
	m := p.producers
	m.snapMu.Lock() // no snapshot written or deleted meanwhile
	offsets, err := listSnapshots(m.fs, m.log.Dir())
	m.snapMu.Unlock()
	if err != nil {
		return b, fmt.Errorf("%w: %s-%d: %w", kafka.ErrKafkaStorage, p.topic, p.partition, err)
	}
	if len(offsets) > 0 {
		b.KeepMarkersFrom = offsets[0]
	}
	return b, nil
}
