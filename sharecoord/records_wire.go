package sharecoord

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/partlog/partlog/internal/kread"
)

// Errors of this package. Failures Kafka answers with a protocol error
// wrap one of package kafka's (kafka.ErrFencedStateEpoch, …) instead.
var (
	// ErrCorrupt means a record of __share_group_state could not be
	// parsed.
	ErrCorrupt = errors.New("sharecoord: corrupt record in __share_group_state")

	// ErrUnknownVersion means a record of __share_group_state has a key
	// or value version this package does not read (written by a newer
	// release).
	ErrUnknownVersion = errors.New("sharecoord: unknown record version in __share_group_state")
)

// valueVersion is the version of both values, the only one.
const valueVersion int16 = 0

// DeliveryState is the state of the records of a StateBatch, as
// SharePartition's RecordState numbers them.
type DeliveryState int8

// The delivery states. A share partition persists only Available,
// Acknowledged and Archived; the others are listed because Kafka numbers
// them.
const (
	// Available records may be delivered (again).
	Available DeliveryState = 0
	// Acquired records are out with a consumer; not persisted.
	Acquired DeliveryState = 1
	// Acknowledged records were processed: a terminal state.
	Acknowledged DeliveryState = 2
	// Archiving is KIP-1191's state on the way to Archived.
	Archiving DeliveryState = 3
	// Archived records will not be delivered again: a terminal state.
	Archived DeliveryState = 4
)

// StateBatch is the delivery state of a range of offsets.
type StateBatch struct {
	// FirstOffset is the first offset of the range.
	FirstOffset int64
	// LastOffset is the last offset of the range, inclusive.
	LastOffset int64
	// DeliveryState is the state of the range's records.
	DeliveryState DeliveryState
	// DeliveryCount is how many times they were delivered.
	DeliveryCount int16
}

// SnapshotValue is the value of a ShareSnapshot record: a share
// partition's whole state.
type SnapshotValue struct {
	// SnapshotEpoch counts the snapshots of the share partition: 0 for
	// the first, one more for each later one.
	SnapshotEpoch int32
	// StateEpoch is the state epoch, which InitializeShareGroupState sets
	// and a write may only raise.
	StateEpoch int32
	// LeaderEpoch is the share partition leader's epoch; -1 when none
	// wrote yet.
	LeaderEpoch int32
	// StartOffset is the share-partition start offset (SPSO); -1 when not
	// yet initialized.
	StartOffset int64
	// CreateTimestamp is when the snapshot was made, in Unix
	// milliseconds.
	CreateTimestamp int64
	// WriteTimestamp is when it was written (Kafka rewrites the snapshots
	// of cold share partitions with the same CreateTimestamp), in Unix
	// milliseconds.
	WriteTimestamp int64
	// StateBatches are the states of the offsets from StartOffset on:
	// sorted, not overlapping.
	StateBatches []StateBatch
}

// UpdateValue is the value of a ShareUpdate record: a write since the
// latest ShareSnapshot, applied over it on replay.
type UpdateValue struct {
	// SnapshotEpoch is the epoch of the snapshot the update applies to.
	SnapshotEpoch int32
	// LeaderEpoch is the leader epoch of the write; -1 leaves the
	// state's as it was.
	LeaderEpoch int32
	// StartOffset is the new share-partition start offset; -1 leaves it
	// as it was.
	StartOffset int64
	// StateBatches are the batches written, combined over the state's
	// (see CombineBatches).
	StateBatches []StateBatch
}

// Encode returns the value's bytes (ShareSnapshotValue.json, version 0,
// flexible):
//
//	version          int16  0
//	snapshot_epoch   int32
//	state_epoch      int32
//	leader_epoch     int32
//	start_offset     int64
//	create_timestamp int64
//	write_timestamp  int64
//	state_batches    compact array: uvarint count+1, then each
//	                   first_offset int64, last_offset int64,
//	                   delivery_state int8, delivery_count int16,
//	                   tagged fields (uvarint 0)
//	tagged fields    uvarint 0
//
// The slice is new; the caller owns it.
func (v *SnapshotValue) Encode() []byte {
	b := make([]byte, 0, 2+3*4+3*8+1+len(v.StateBatches)*20+1)
	b = kbin.AppendInt16(b, valueVersion)
	b = kbin.AppendInt32(b, v.SnapshotEpoch)
	b = kbin.AppendInt32(b, v.StateEpoch)
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendInt64(b, v.StartOffset)
	b = kbin.AppendInt64(b, v.CreateTimestamp)
	b = kbin.AppendInt64(b, v.WriteTimestamp)
	b = appendBatches(b, v.StateBatches)
	return kbin.AppendUvarint(b, 0) // no tagged fields
}

// Encode returns the value's bytes (ShareUpdateValue.json, version 0,
// flexible): version int16 0, snapshot_epoch int32, leader_epoch int32,
// start_offset int64, state_batches as in SnapshotValue.Encode, and no
// tagged fields. The slice is new; the caller owns it.
func (v *UpdateValue) Encode() []byte {
	b := make([]byte, 0, 2+2*4+8+1+len(v.StateBatches)*20+1)
	b = kbin.AppendInt16(b, valueVersion)
	b = kbin.AppendInt32(b, v.SnapshotEpoch)
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendInt64(b, v.StartOffset)
	b = appendBatches(b, v.StateBatches)
	return kbin.AppendUvarint(b, 0) // no tagged fields
}

// DecodeSnapshotValue parses a ShareSnapshot's value. Tagged fields —
// those a later Kafka adds, such as KIP-1226's — are read past. It fails
// with ErrUnknownVersion for a version other than 0 and with ErrCorrupt
// for anything that does not parse, including bytes left over.
func DecodeSnapshotValue(b []byte) (*SnapshotValue, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	if v := r.Int16(); r.Err == nil && v != valueVersion {
		return nil, fmt.Errorf("%w: ShareSnapshot value version %d", ErrUnknownVersion, v)
	}
	v := &SnapshotValue{
		SnapshotEpoch: r.Int32(), StateEpoch: r.Int32(), LeaderEpoch: r.Int32(),
		StartOffset: r.Int64(), CreateTimestamp: r.Int64(), WriteTimestamp: r.Int64(),
	}
	v.StateBatches = r.batches()
	r.SkipTags()
	if err := r.Done("ShareSnapshot value"); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeUpdateValue parses a ShareUpdate's value, as DecodeSnapshotValue
// does a ShareSnapshot's.
func DecodeUpdateValue(b []byte) (*UpdateValue, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	if v := r.Int16(); r.Err == nil && v != valueVersion {
		return nil, fmt.Errorf("%w: ShareUpdate value version %d", ErrUnknownVersion, v)
	}
	v := &UpdateValue{SnapshotEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64()}
	v.StateBatches = r.batches()
	r.SkipTags()
	if err := r.Done("ShareUpdate value"); err != nil {
		return nil, err
	}
	return v, nil
}

// Record is a record of __share_group_state as the log holds it: a key
// and a value as this package encodes them. A nil Value is a tombstone.
type Record struct {
	// Key and Value are the record's key (Key.Encode) and value
	// (SnapshotValue or UpdateValue's Encode); Value is nil for a
	// tombstone.
	Key, Value []byte
}

// Entry is a record decoded: its key, and the value its type has, or no
// value for a tombstone.
type Entry struct {
	// Key is the record's key.
	Key Key
	// Snapshot is the value of a ShareSnapshot; nil for a tombstone or an
	// update.
	Snapshot *SnapshotValue
	// Update is the value of a ShareUpdate; nil for a tombstone or a
	// snapshot.
	Update *UpdateValue
}

// Tombstone reports whether e deletes its key.
func (e Entry) Tombstone() bool { return e.Snapshot == nil && e.Update == nil }

// Record encodes e. The slices are new; the caller owns them.
func (e Entry) Record() Record {
	r := Record{Key: e.Key.Encode()}
	switch {
	case e.Key.Type == SnapshotRecord && e.Snapshot != nil:
		r.Value = e.Snapshot.Encode()
	case e.Key.Type == UpdateRecord && e.Update != nil:
		r.Value = e.Update.Encode()
	}
	return r
}

// DecodeRecord parses a record: its key, and its value by the key's type.
// Its errors match ErrCorrupt or ErrUnknownVersion. The entry does not
// alias r.
func DecodeRecord(r Record) (Entry, error) {
	k, err := DecodeKey(r.Key)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Key: k}
	if r.Value == nil {
		return e, nil
	}
	if k.Type == SnapshotRecord {
		e.Snapshot, err = DecodeSnapshotValue(r.Value)
	} else {
		e.Update, err = DecodeUpdateValue(r.Value)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%s of %s: %w", k.Type, k.SharePartition, err)
	}
	return e, nil
}

// appendBatches appends bs as a compact array of state batches, each
// without tagged fields.
func appendBatches(b []byte, bs []StateBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(bs))
	for _, sb := range bs {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, int8(sb.DeliveryState))
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

// reader reads a record with kread, failures as ErrCorrupt.
type reader struct{ kread.Reader }

// string reads a non-flexible string, which here may not be null.
func (r *reader) string() string { return kread.Read(&r.Reader, (*kbin.Reader).String) }

// batchSize is the least a state batch takes: two int64s, an int8, an
// int16 and an empty tag section.
const batchSize = 8 + 8 + 1 + 2 + 1

// batches reads a compact array of state batches, which may not be null.
// The count is checked against the bytes left, so that a corrupt one
// cannot make the reader allocate much.
func (r *reader) batches() []StateBatch {
	n := int(r.Uvarint()) - 1
	switch {
	case r.Err != nil:
		return nil
	case n == -1:
		r.Fail("null state_batches")
		return nil
	case n > len(r.B)/batchSize:
		r.Fail("%d state batches in %d bytes", n, len(r.B))
		return nil
	case n == 0:
		return nil
	}
	bs := make([]StateBatch, n)
	for i := range bs {
		bs[i] = StateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: DeliveryState(r.Int8()), DeliveryCount: r.Int16()}
		r.SkipTags()
	}
	if r.Err != nil {
		return nil
	}
	return bs
}
