package partition

import (
	"fmt"
	"sync"

	"github.com/partlog/partlog/kafka"
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
