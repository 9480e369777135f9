package record

import "encoding/binary"

// The log cleaner rewrites batches: it drops records that later ones
// supersede but keeps what the batch header says about offsets and the
// producer, since a producer's state (epoch, last sequence) is rebuilt from
// the headers of its last batch.

// EmptyBatch returns a batch without records that keeps h's offsets
// (BaseOffset and LastOffsetDelta), leader epoch, producer ID, epoch and base
// sequence, and its timestamp type and transactional and control flags, with
// no compression and both timestamps h.MaxTimestamp. It is what Kafka's log
// cleaner keeps of a batch whose records all went when the batch must stay:
// the last batch of a producer, whose header holds the producer's state.
func EmptyBatch(h Header) []byte {
	attrs := h.Attributes &^ (compressionMask | deleteHorizonFlag)
	e := Header{
		BaseOffset:           h.BaseOffset,
		BatchLength:          minBatchLength,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Magic:                MagicV2,
		Attributes:           attrs,
		LastOffsetDelta:      h.LastOffsetDelta,
		BaseTimestamp:        h.MaxTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
	}
	b := make([]byte, HeaderSize)
	putHeader(b, &e)
	putCRC(b)
	return b
}

// SetLastOffsetDelta rewrites the LastOffsetDelta of batch b in place and
// recomputes its CRC, as the log cleaner does to keep a batch's offset range
// (and so its producer's sequence range) after dropping its last records.
// delta must not be below the last record's offset delta. b must be
// exactly one batch, as Validate checks.
func SetLastOffsetDelta(b []byte, delta int32) {
	binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:HeaderSize], uint32(delta))
	putCRC(b)
}
