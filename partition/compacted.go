package partition

import (
	"fmt"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// checkKeys rejects a batch for a compacted topic when one of its records
// has no key, as Kafka's broker does: the cleaner keeps the latest record
// of each key, so a record without one could never be kept. The error is
// transport.ErrInvalidRecord, and a batch that does not decode is
// transport.ErrCorruptMessage.
func (p *Partition) checkKeys(batch []byte) error {
	b, err := record.Decode(batch)
	if err != nil {
		return kafkaError(err)
	}
	if b.Attributes.IsControl() {
		return nil
	}
	for i, r := range b.Records {
		if r.Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept message without key in topic partition %s-%d (record %d of the batch)",
				transport.ErrInvalidRecord, p.topic, p.partition, i)
		}
	}
	return nil
}
