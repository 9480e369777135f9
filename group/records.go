package group

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The records of __consumer_offsets, as Kafka lays them out: a key and a
// value, each starting with a big-endian int16 version, then the fields in
// Kafka's (non-flexible) protocol encoding — a string is an int16 length
// and its bytes (-1 for a null string), bytes an int32 length and the
// bytes, an array an int32 count and its elements.
//
//	key v0, v1  offset commit   group string, topic string, partition int32
//	key v2      group metadata  group string
//
//	offset value v0   offset int64, metadata string, commit_timestamp int64
//	offset value v1   offset, metadata, commit_timestamp, expire_timestamp int64
//	offset value v2   offset, metadata, commit_timestamp
//	offset value v3   offset, leader_epoch int32, metadata, commit_timestamp
//
//	group value v0    protocol_type string, generation int32,
//	                  protocol string?, leader string?, members [member]
//	group value v1    as v0; a member gains rebalance_timeout
//	group value v2    as v1, plus current_state_timestamp int64 after leader
//	group value v3    as v2; a member gains group_instance_id string?
//
//	member            member_id string, [v3: group_instance_id string?,]
//	                  client_id string, client_host string,
//	                  [v1+: rebalance_timeout int32,] session_timeout int32,
//	                  subscription bytes, assignment bytes
//
// A record with a null value is a tombstone: it deletes the offset, or the
// group. The latest record of each key is what counts, so the topic is
// compacted. This package writes key v1 and v2 and values v3, and reads
// every version above.

// Key versions.
const (
	offsetKeyVersion0 int16 = 0
	offsetKeyVersion1 int16 = 1
	groupKeyVersion   int16 = 2
)

// The value versions this package writes.
const (
	offsetValueVersion int16 = 3
	groupValueVersion  int16 = 3
)

// Key is the key of a __consumer_offsets record: an offset commit key
// (version 0 or 1: Group, Topic, Partition) or a group metadata key
// (version 2: Group).
type Key struct {
	// Version is the key's version: 0 or 1 for an offset commit, 2 for
	// group metadata.
	Version int16
	// Group is the group id.
	Group string
	// Topic is the committed partition's topic; empty in a group
	// metadata key.
	Topic string
	// Partition is the committed partition's index; 0 in a group
	// metadata key.
	Partition int32
}

// IsGroup reports whether k is a group metadata key.
func (k Key) IsGroup() bool { return k.Version == groupKeyVersion }

// OffsetKey returns the key of a group's offset for a partition.
func OffsetKey(group, topic string, partition int32) Key {
	return Key{Version: offsetKeyVersion1, Group: group, Topic: topic, Partition: partition}
}

// GroupKey returns the key of a group's metadata.
func GroupKey(group string) Key { return Key{Version: groupKeyVersion, Group: group} }

// Encode returns k's bytes.
func (k Key) Encode() []byte {
	var w writer
	w.int16(k.Version)
	w.string(k.Group)
	if !k.IsGroup() {
		w.string(k.Topic)
		w.int32(k.Partition)
	}
	return w.b
}

// DecodeKey parses a key. Its errors match ErrCorrupt or ErrUnknownVersion.
func DecodeKey(b []byte) (Key, error) {
	r := reader{b: b}
	k := Key{Version: r.int16()}
	switch k.Version {
	case offsetKeyVersion0, offsetKeyVersion1:
		k.Group, k.Topic, k.Partition = r.string(), r.string(), r.int32()
	case groupKeyVersion:
		k.Group = r.string()
	default:
		if r.err != nil {
			return Key{}, r.done("key")
		}
		return Key{}, fmt.Errorf("%w: key version %d", ErrUnknownVersion, k.Version)
	}
	return k, r.done("key")
}

// OffsetValue is a committed offset: the value of an offset commit key.
type OffsetValue struct {
	// Offset is the committed offset: the next record to consume.
	Offset int64
	// LeaderEpoch is the leader epoch of the last record consumed, or -1.
	LeaderEpoch int32
	// Metadata is the string committed with the offset.
	Metadata string
	// CommitTimestamp is when the coordinator took the commit, in ms.
	CommitTimestamp int64
	// ExpireTimestamp is set only by version 1 values; -1 otherwise.
	ExpireTimestamp int64
}

// Encode returns v's bytes, as version 3.
func (v OffsetValue) Encode() []byte {
	var w writer
	w.int16(offsetValueVersion)
	w.int64(v.Offset)
	w.int32(v.LeaderEpoch)
	w.string(v.Metadata)
	w.int64(v.CommitTimestamp)
	return w.b
}

// DecodeOffsetValue parses an offset commit value of any version. Its
// errors match ErrCorrupt or ErrUnknownVersion.
func DecodeOffsetValue(b []byte) (OffsetValue, error) {
	r := reader{b: b}
	version := r.int16()
	v := OffsetValue{LeaderEpoch: -1, ExpireTimestamp: -1}
	switch version {
	case 0, 2:
		v.Offset, v.Metadata, v.CommitTimestamp = r.int64(), r.string(), r.int64()
	case 1:
		v.Offset, v.Metadata, v.CommitTimestamp, v.ExpireTimestamp = r.int64(), r.string(), r.int64(), r.int64()
	case 3:
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = r.int64(), r.int32(), r.string(), r.int64()
	default:
		if r.err != nil {
			return OffsetValue{}, r.done("offset value")
		}
		return OffsetValue{}, fmt.Errorf("%w: offset value version %d", ErrUnknownVersion, version)
	}
	return v, r.done("offset value")
}

// GroupValue is a group's metadata as of its last completed rebalance: the
// value of a group metadata key.
type GroupValue struct {
	// ProtocolType is the group's protocol type ("consumer").
	ProtocolType string
	// Generation is the group's generation id.
	Generation int32
	// Protocol and Leader are empty for a group without members.
	//
	// Protocol is the protocol chosen (for consumers, the assignor).
	Protocol string
	// Leader is the leader's member id.
	Leader string
	// CurrentStateTimestamp is when the group entered its state, in ms, or
	// -1.
	CurrentStateTimestamp int64
	// Members are the group's members, in the order they joined.
	Members []MemberValue
}

// MemberValue is one member of a GroupValue.
type MemberValue struct {
	// MemberID is the member's id.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, or empty.
	GroupInstanceID string
	// ClientID is the member's client.id.
	ClientID string
	// ClientHost is the IP address the member joined from.
	ClientHost string
	// RebalanceTimeout and SessionTimeout are in ms.
	//
	// RebalanceTimeout is the member's rebalance timeout (the consumer's
	// max.poll.interval.ms). A version 0 value has none: it reads as
	// SessionTimeout.
	RebalanceTimeout int32
	// SessionTimeout is the member's session.timeout.ms.
	SessionTimeout int32
	// Subscription is the member's metadata for the group's protocol;
	// Assignment what the leader gave it.
	Subscription []byte
	// Assignment is the member's assignment, as the protocol encodes it.
	Assignment []byte
}

// Encode returns v's bytes, as version 3.
func (v GroupValue) Encode() []byte {
	var w writer
	w.int16(groupValueVersion)
	w.string(v.ProtocolType)
	w.int32(v.Generation)
	w.nullableString(v.Protocol)
	w.nullableString(v.Leader)
	w.int64(v.CurrentStateTimestamp)
	w.int32(int32(len(v.Members)))
	for _, m := range v.Members {
		w.string(m.MemberID)
		w.nullableString(m.GroupInstanceID)
		w.string(m.ClientID)
		w.string(m.ClientHost)
		w.int32(m.RebalanceTimeout)
		w.int32(m.SessionTimeout)
		w.bytes(m.Subscription)
		w.bytes(m.Assignment)
	}
	return w.b
}

// DecodeGroupValue parses a group metadata value of any version. Its
// errors match ErrCorrupt or ErrUnknownVersion.
func DecodeGroupValue(b []byte) (GroupValue, error) {
	r := reader{b: b}
	version := r.int16()
	if r.err == nil && (version < 0 || version > groupValueVersion) {
		return GroupValue{}, fmt.Errorf("%w: group value version %d", ErrUnknownVersion, version)
	}
	v := GroupValue{CurrentStateTimestamp: -1}
	v.ProtocolType = r.string()
	v.Generation = r.int32()
	v.Protocol = r.string()
	v.Leader = r.string()
	if version >= 2 {
		v.CurrentStateTimestamp = r.int64()
	}
	n := r.count(2 + 2 + 2 + 4 + 4 + 4) // the smallest member, of version 0
	for i := 0; i < n && r.err == nil; i++ {
		var m MemberValue
		m.MemberID = r.string()
		if version >= 3 {
			m.GroupInstanceID = r.string()
		}
		m.ClientID = r.string()
		m.ClientHost = r.string()
		if version >= 1 {
			m.RebalanceTimeout = r.int32()
		}
		m.SessionTimeout = r.int32()
		if version == 0 {
			m.RebalanceTimeout = m.SessionTimeout
		}
		m.Subscription = r.bytes()
		m.Assignment = r.bytes()
		v.Members = append(v.Members, m)
	}
	return v, r.done("group value")
}

// writer appends Kafka's encodings to b.
type writer struct{ b []byte }

func (w *writer) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (w *writer) string(s string) {
	if len(s) > math.MaxInt16 {
		s = s[:math.MaxInt16]
	}
	w.int16(int16(len(s)))
	w.b = append(w.b, s...)
}

// nullableString writes "" as null.
func (w *writer) nullableString(s string) {
	if s == "" {
		w.int16(-1)
		return
	}
	w.string(s)
}

// bytes writes nil as empty: Kafka's bytes here are not nullable.
func (w *writer) bytes(b []byte) {
	w.int32(int32(len(b)))
	w.b = append(w.b, b...)
}

// reader parses Kafka's encodings; the first failure sticks in err and
// makes every later read return zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", ErrCorrupt, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// string reads a string; a null one reads as "".
func (r *reader) string() string {
	n := r.int16()
	if n == -1 || r.err != nil {
		return ""
	}
	if n < 0 {
		r.err = fmt.Errorf("%w: string length %d", ErrCorrupt, n)
		return ""
	}
	return string(r.take(int(n)))
}

func (r *reader) bytes() []byte {
	n := r.int32()
	if n == -1 || r.err != nil {
		return nil
	}
	if n < 0 {
		r.err = fmt.Errorf("%w: bytes length %d", ErrCorrupt, n)
		return nil
	}
	b := r.take(int(n))
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// count reads an array's length, each element taking at least min bytes,
// so that a corrupt count cannot make the caller allocate much.
func (r *reader) count(min int) int {
	n := r.int32()
	if r.err != nil {
		return 0
	}
	if n < 0 || int(n) > len(r.b)/min {
		r.err = fmt.Errorf("%w: array of %d elements in %d bytes", ErrCorrupt, n, len(r.b))
		return 0
	}
	return int(n)
}

// done returns the first failure, or ErrCorrupt when bytes are left over.
func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%w: %s: %d bytes left over", ErrCorrupt, what, len(r.b))
	}
	return nil
}
