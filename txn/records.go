package txn

import (
	"fmt"
)

// The records of __transaction_state, as Kafka lays them out
// (TransactionLogKey and TransactionLogValue): a key and a value, each an
// int16 version and then the fields. The package documentation draws them.

// Key and value versions.
const (
	keyVersion = 0
	// valueVersion is the version Value.Encode writes for the
	// coordinator: the flexible one, which carries the client's
	// transaction version and the producer ids of an epoch overflow.
	valueVersion = 1
	// maxValueVersion is the newest value version this package reads.
	maxValueVersion = 1
)

// Tags of the value's tagged fields (version 1).
const (
	tagPreviousProducerID       = 0
	tagNextProducerID           = 1
	tagClientTransactionVersion = 2
	tagNextProducerEpoch        = 3
)

// EncodeKey returns the key of a transactional id's records:
// TransactionLogKey version 0.
func EncodeKey(transactionalID string) []byte {
	var e encoder
	e.i16(keyVersion)
	e.str(transactionalID, false)
	return e.buf
}

// DecodeKey returns the transactional id a key names. Its errors match
// ErrCorrupt, or ErrUnknownVersion for a key version other than 0, which
// Kafka skips when it loads a partition (a key a newer release wrote).
func DecodeKey(b []byte) (string, error) {
	d := decoder{b: b}
	if v := d.i16(); d.err == nil && v != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrUnknownVersion, v)
	}
	id := d.str(false)
	return id, d.done("key")
}

// Value is a transactional id's state as written to __transaction_state:
// TransactionLogValue. A record with a nil value (a tombstone) removes the
// transactional id.
type Value struct {
	// Version is the value's version, which Encode writes: 0 (classic,
	// without the tagged fields) or 1 (flexible). The coordinator writes 1.
	Version int16
	// ProducerID is the producer id the transactional id has.
	ProducerID int64
	// PreviousProducerID is the producer id it had before its last
	// producer id change, or -1. Tagged field 0, version 1.
	PreviousProducerID int64
	// NextProducerID is the producer id it takes once the transaction
	// completes, when the producer epoch ran out (transaction version 2),
	// or -1. Tagged field 1, version 1.
	NextProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// TransactionTimeoutMs is the producer's transaction.timeout.ms.
	TransactionTimeoutMs int32
	// State is the transaction's state (TransactionStatus).
	State State
	// Partitions are the transaction's partitions, by topic: null (nil)
	// in state Empty, empty but not nil once the transaction completed.
	Partitions []TopicPartitions
	// LastUpdateTimestampMs is when the state last changed, in ms.
	LastUpdateTimestampMs int64
	// StartTimestampMs is when the transaction began (its first
	// partition was added), in ms, or -1.
	StartTimestampMs int64
	// ClientTransactionVersion is the transaction version the client
	// spoke when the state last changed (TV0 by default). Tagged field 2,
	// version 1.
	ClientTransactionVersion TransactionVersion
	// NextProducerEpoch is Kafka 4.1's epoch for NextProducerID
	// (KIP-939), or -1. This coordinator reads and keeps it but does not
	// use it. Tagged field 3, version 1.
	NextProducerEpoch int16

	unknown []taggedField // tagged fields of later versions, kept as read
}

// TopicPartitions names partitions of one topic (PartitionsSchema).
type TopicPartitions struct {
	// Topic is the topic's name.
	Topic string
	// Partitions are the partitions' indexes.
	Partitions []int32

	unknown []taggedField
}

// Encode returns v's bytes, in v.Version. Version 0 has no tagged fields:
// PreviousProducerID, NextProducerID, ClientTransactionVersion and
// NextProducerEpoch are left out.
func (v *Value) Encode() []byte {
	flexible := v.Version >= 1
	var e encoder
	e.i16(v.Version)
	e.i64(v.ProducerID)
	e.i16(v.ProducerEpoch)
	e.i32(v.TransactionTimeoutMs)
	e.i8(int8(v.State))
	e.nullArrayLen(len(v.Partitions), v.Partitions == nil, flexible)
	for _, tp := range v.Partitions {
		e.str(tp.Topic, flexible)
		e.arrayLen(len(tp.Partitions), flexible)
		for _, p := range tp.Partitions {
			e.i32(p)
		}
		if flexible {
			e.taggedFields(nil, tp.unknown)
		}
	}
	e.i64(v.LastUpdateTimestampMs)
	e.i64(v.StartTimestampMs)
	if flexible {
		e.taggedFields(v.knownTags(), v.unknown)
	}
	return e.buf
}

// knownTags returns v's tagged fields that do not hold their defaults, in
// tag order.
func (v *Value) knownTags() []taggedField {
	var known []taggedField
	i64 := func(tag uint32, x int64) {
		var e encoder
		e.i64(x)
		known = append(known, taggedField{tag, e.buf})
	}
	i16 := func(tag uint32, x int16) {
		var e encoder
		e.i16(x)
		known = append(known, taggedField{tag, e.buf})
	}
	if v.PreviousProducerID != -1 {
		i64(tagPreviousProducerID, v.PreviousProducerID)
	}
	if v.NextProducerID != -1 {
		i64(tagNextProducerID, v.NextProducerID)
	}
	if v.ClientTransactionVersion != TV0 {
		i16(tagClientTransactionVersion, int16(v.ClientTransactionVersion))
	}
	if v.NextProducerEpoch != -1 {
		i16(tagNextProducerEpoch, v.NextProducerEpoch)
	}
	return known
}

// taggedFields writes a tagged-field section: known and unknown merged in
// tag order (each list already in order).
func (e *encoder) taggedFields(known, unknown []taggedField) {
	e.uvarint(uint32(len(known) + len(unknown)))
	for len(known) > 0 || len(unknown) > 0 {
		var f taggedField
		if len(unknown) == 0 || len(known) > 0 && known[0].tag < unknown[0].tag {
			f, known = known[0], known[1:]
		} else {
			f, unknown = unknown[0], unknown[1:]
		}
		e.uvarint(f.tag)
		e.uvarint(uint32(len(f.data)))
		e.buf = append(e.buf, f.data...)
	}
}

// DecodeValue parses a value of version 0 or 1. Tagged fields it does not
// know are kept and written back by Encode. Its errors match ErrCorrupt,
// or ErrUnknownVersion for a newer version.
func DecodeValue(b []byte) (Value, error) {
	d := decoder{b: b}
	v := Value{Version: d.i16(), PreviousProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1}
	if d.err == nil && (v.Version < 0 || v.Version > maxValueVersion) {
		return Value{}, fmt.Errorf("%w: value version %d", ErrUnknownVersion, v.Version)
	}
	flexible := v.Version >= 1
	v.ProducerID = d.i64()
	v.ProducerEpoch = d.i16()
	v.TransactionTimeoutMs = d.i32()
	if v.State = State(d.i8()); d.err == nil && !v.State.valid() {
		d.fail("transaction status %d", v.State)
	}
	// The smallest topic: an empty string and an empty array (classic 6
	// bytes; compact 3 with its tag count).
	if n := d.arrayLen(flexible, true, 3); n >= 0 && d.err == nil {
		v.Partitions = make([]TopicPartitions, 0, n)
		for range n {
			tp := TopicPartitions{Topic: d.str(flexible)}
			tp.Partitions = make([]int32, d.arrayLen(flexible, false, 4))
			for i := range tp.Partitions {
				tp.Partitions[i] = d.i32()
			}
			if flexible {
				tp.unknown = d.tags(func(uint32, []byte) bool { return false })
			}
			v.Partitions = append(v.Partitions, tp)
		}
	}
	v.LastUpdateTimestampMs = d.i64()
	v.StartTimestampMs = d.i64()
	if flexible {
		v.unknown = d.tags(func(tag uint32, data []byte) bool { return v.readTag(&d, tag, data) })
	}
	if err := d.done("value"); err != nil {
		return Value{}, err
	}
	return v, nil
}

// readTag sets the known field tag holds to data, failing d when data is
// the wrong size or holds the field's default (which Kafka never writes),
// and reports whether it knew the tag.
func (v *Value) readTag(d *decoder, tag uint32, data []byte) bool {
	field := decoder{b: data}
	var isDefault bool
	switch tag {
	case tagPreviousProducerID:
		v.PreviousProducerID = field.i64()
		isDefault = v.PreviousProducerID == -1
	case tagNextProducerID:
		v.NextProducerID = field.i64()
		isDefault = v.NextProducerID == -1
	case tagClientTransactionVersion:
		v.ClientTransactionVersion = TransactionVersion(field.i16())
		isDefault = v.ClientTransactionVersion == TV0
	case tagNextProducerEpoch:
		v.NextProducerEpoch = field.i16()
		isDefault = v.NextProducerEpoch == -1
	default:
		return false
	}
	if field.done("tagged field") != nil {
		d.fail("tag %d: %d bytes", tag, len(data))
	} else if isDefault {
		d.fail("tag %d holds its default", tag)
	}
	return true
}
