package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key: Kafka's
// ControlRecordType.
type ControlType int16

// The control record types of transaction markers. Kafka defines more
// (LEADER_CHANGE and others from 2 up, for its own Raft log); they parse
// with their type and no coordinator epoch.
const (
	// ControlAbort marks the end of an aborted transaction: the
	// producer's transactional records before it are to be skipped.
	ControlAbort ControlType = 0
	// ControlCommit marks the end of a committed transaction.
	ControlCommit ControlType = 1
)

// String returns "ABORT", "COMMIT", or "ControlType(n)" for other types.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("ControlType(%d)", int16(t))
}

// Layout of a transaction marker's key and value (Kafka's
// ControlRecordType and EndTransactionMarker).
const (
	controlKeySize        = 4 // version int16, type int16
	endTxnMarkerValueSize = 6 // version int16, coordinator epoch int32
	controlKeyVersion     = 0
	endTxnMarkerVersion   = 0
)

// ControlBatch returns a control batch holding one transaction marker, as a
// transaction coordinator writes to each partition of a transaction. The
// marker's key is version 0 and typ; its value is version 0 and
// coordinatorEpoch. The batch is transactional and control, from
// producerID at producerEpoch, with base offset 0, no sequence (-1), leader
// epoch -1, and timestampMs as its record's timestamp.
func ControlBatch(typ ControlType, producerID int64, producerEpoch int16, coordinatorEpoch int32, timestampMs int64) []byte {
	var key [controlKeySize]byte
	binary.BigEndian.PutUint16(key[0:], controlKeyVersion)
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	var value [endTxnMarkerValueSize]byte
	binary.BigEndian.PutUint16(value[0:], endTxnMarkerVersion)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))

	opts := DefaultBatchOptions()
	opts.ProducerID = producerID
	opts.ProducerEpoch = producerEpoch
	opts.Transactional = true
	opts.Control = true
	b := NewBuilder(opts)
	b.Grow(2 * (controlKeySize + endTxnMarkerValueSize))
	b.Append(Record{Timestamp: timestampMs, Key: key[:], Value: value[:]})
	return b.Build()
}

// ControlRecord is a decoded control record.
type ControlRecord struct {
	// Type is the marker's type.
	Type ControlType
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote an ABORT or COMMIT marker; 0 for other types.
	CoordinatorEpoch int32
}

// ParseControlRecord decodes r, a record of a control batch. Its key must
// hold a version >= 0 and a type; for ControlAbort and ControlCommit its
// value must hold a version >= 0 and the coordinator epoch. Newer versions
// parse as version 0, as Kafka reads them; bytes after the known fields are
// ignored. Anything else is ErrCorrupt.
func ParseControlRecord(r Record) (ControlRecord, error) {
	if len(r.Key) < controlKeySize {
		return ControlRecord{}, corruptf("control record key of %d bytes, want %d", len(r.Key), controlKeySize)
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v < 0 {
		return ControlRecord{}, corruptf("control record key version %d", v)
	}
	c := ControlRecord{Type: ControlType(binary.BigEndian.Uint16(r.Key[2:]))}
	if c.Type != ControlAbort && c.Type != ControlCommit {
		return c, nil
	}
	if len(r.Value) < endTxnMarkerValueSize {
		return ControlRecord{}, corruptf("%s marker value of %d bytes, want %d", c.Type, len(r.Value), endTxnMarkerValueSize)
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v < 0 {
		return ControlRecord{}, corruptf("%s marker value version %d", c.Type, v)
	}
	c.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	return c, nil
}

// ParseControlBatch decodes the marker a control batch holds: its first
// record, as Kafka reads a control batch (any records after the first
// are ignored). ok is false when the batch has no record — a marker the
// log cleaner emptied, which closes nothing — and err is ErrCorrupt (or
// the decoding error) when b is not a control batch or does not decode.
// crc says whether the batch's CRC is checked. The result holds no
// reference to b.
func ParseControlBatch(b []byte, crc CRCCheck) (c ControlRecord, ok bool, err error) {
	var one [1]Record
	batch, err := DecodeInto(one[:0], b, crc)
	if err != nil {
		return ControlRecord{}, false, err
	}
	if !batch.Attributes.IsControl() {
		return ControlRecord{}, false, corruptf("batch at offset %d is not a control batch", batch.BaseOffset)
	}
	if len(batch.Records) == 0 {
		return ControlRecord{}, false, nil
	}
	c, err = ParseControlRecord(batch.Records[0])
	return c, err == nil, err
}
