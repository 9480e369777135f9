package group

import (
	"bytes"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/partlog/partlog/internal/kread"
)

// The records of __consumer_offsets, as Kafka lays them out: a key and a
// value, each starting with a big-endian int16 version, then the fields in
// Kafka's (non-flexible) protocol encoding — a string is an int16 length
// and its bytes (-1 for a null string), bytes an int32 length and the
// bytes, an array an int32 count and its elements.
//
//	key v0, v1  offset commit   group string, topic string, partition int32
//	key v2      group metadata  group string
//	key v3..v8  a consumer group's records (KIP-848): group string, and
//	            member string for v5, v7 and v8 (see below)
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
//
// The records of a consumer group of the new protocol (KIP-848) have keys
// whose version names the record type, and flexible values of their own
// (consumer_records_wire.go draws them):
//
//	key v3  ConsumerGroupMetadata                  group
//	key v4  ConsumerGroupPartitionMetadata         group
//	key v5  ConsumerGroupMemberMetadata            group, member
//	key v6  ConsumerGroupTargetAssignmentMetadata  group
//	key v7  ConsumerGroupTargetAssignmentMember    group, member
//	key v8  ConsumerGroupCurrentMemberAssignment   group, member
//
// and so do those of a share group (KIP-932; share_records_wire.go):
//
//	key v10 ShareGroupMemberMetadata               group, member
//	key v11 ShareGroupMetadata                     group
//	key v12 ShareGroupTargetAssignmentMetadata     group
//	key v13 ShareGroupTargetAssignmentMember       group, member
//	key v14 ShareGroupCurrentMemberAssignment      group, member
//	key v15 ShareGroupStatePartitionMetadata       group

// Key versions.
const (
	offsetKeyVersion0 int16 = 0
	offsetKeyVersion1 int16 = 1
	groupKeyVersion   int16 = 2

	// The keys of a consumer group's records: the version is the record
	// type (Kafka's CoordinatorRecordType).
	consumerGroupMetadataKeyVersion                 int16 = 3
	consumerGroupPartitionMetadataKeyVersion        int16 = 4
	consumerGroupMemberMetadataKeyVersion           int16 = 5
	consumerGroupTargetAssignmentMetadataKeyVersion int16 = 6
	consumerGroupTargetAssignmentMemberKeyVersion   int16 = 7
	consumerGroupCurrentMemberAssignmentKeyVersion  int16 = 8

	// The keys of a share group's records (9, Kafka 4.0's
	// ShareGroupPartitionMetadata, is gone since 4.1).
	shareGroupMemberMetadataKeyVersion           int16 = 10
	shareGroupMetadataKeyVersion                 int16 = 11
	shareGroupTargetAssignmentMetadataKeyVersion int16 = 12
	shareGroupTargetAssignmentMemberKeyVersion   int16 = 13
	shareGroupCurrentMemberAssignmentKeyVersion  int16 = 14
	shareGroupStatePartitionMetadataKeyVersion   int16 = 15
)

// The value versions this package writes.
const (
	offsetValueVersion int16 = 3
	groupValueVersion  int16 = 3
)

// Key is the key of a __consumer_offsets record: an offset commit key
// (version 0 or 1: Group, Topic, Partition), a group metadata key
// (version 2: Group), the key of a consumer group's record (versions 3
// to 8: Group, and MemberID for versions 5, 7 and 8) or of a share
// group's (versions 10 to 15: Group, and MemberID for 10, 13 and 14).
type Key struct {
	// Version is the key's version: 0 or 1 for an offset commit, 2 for
	// group metadata, 3 to 8 for a consumer group's records, 10 to 15
	// for a share group's.
	Version int16
	// Group is the group id.
	Group string
	// Topic is the committed partition's topic; empty in a group
	// metadata key.
	Topic string
	// Partition is the committed partition's index; 0 in a group
	// metadata key.
	Partition int32
	// MemberID is the member whose record a consumer group key of
	// version 5, 7 or 8, or a share group key of version 10, 13 or 14,
	// names; empty in other keys.
	MemberID string
}

// IsGroup reports whether k is a group metadata key.
func (k Key) IsGroup() bool { return k.Version == groupKeyVersion }

// IsConsumerGroup reports whether k is the key of a consumer group's
// record (versions 3 to 8), neither an offset commit nor a classic
// group's metadata.
func (k Key) IsConsumerGroup() bool {
	return k.Version >= consumerGroupMetadataKeyVersion && k.Version <= consumerGroupCurrentMemberAssignmentKeyVersion
}

// IsShareGroup reports whether k is the key of a share group's record
// (versions 10 to 15).
func (k Key) IsShareGroup() bool {
	return k.Version >= shareGroupMemberMetadataKeyVersion && k.Version <= shareGroupStatePartitionMetadataKeyVersion
}

// hasMemberID reports whether k is the key of a consumer or share group
// member's record, which names the member.
func (k Key) hasMemberID() bool {
	switch k.Version {
	case consumerGroupMemberMetadataKeyVersion, consumerGroupTargetAssignmentMemberKeyVersion,
		consumerGroupCurrentMemberAssignmentKeyVersion, shareGroupMemberMetadataKeyVersion,
		shareGroupTargetAssignmentMemberKeyVersion, shareGroupCurrentMemberAssignmentKeyVersion:
		return true
	}
	return false
}

// OffsetKey returns the key of a group's offset for a partition.
func OffsetKey(group, topic string, partition int32) Key {
	return Key{Version: offsetKeyVersion1, Group: group, Topic: topic, Partition: partition}
}

// GroupKey returns the key of a group's metadata.
func GroupKey(group string) Key { return Key{Version: groupKeyVersion, Group: group} }

// Encode returns k's bytes.
func (k Key) Encode() []byte {
	b := kbin.AppendInt16(nil, k.Version)
	b = kbin.AppendString(b, kafkaString(k.Group))
	switch {
	case k.hasMemberID():
		b = kbin.AppendString(b, kafkaString(k.MemberID))
	case k.IsGroup(), k.IsConsumerGroup(), k.IsShareGroup():
	default:
		b = kbin.AppendString(b, kafkaString(k.Topic))
		b = kbin.AppendInt32(b, k.Partition)
	}
	return b
}

// DecodeKey parses a key. Its errors match ErrCorrupt or ErrUnknownVersion.
func DecodeKey(b []byte) (Key, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	k := Key{Version: r.Int16()}
	switch k.Version {
	case offsetKeyVersion0, offsetKeyVersion1:
		k.Group, k.Topic, k.Partition = r.string(), r.string(), r.Int32()
	case groupKeyVersion, consumerGroupMetadataKeyVersion, consumerGroupPartitionMetadataKeyVersion,
		consumerGroupTargetAssignmentMetadataKeyVersion, shareGroupMetadataKeyVersion,
		shareGroupTargetAssignmentMetadataKeyVersion, shareGroupStatePartitionMetadataKeyVersion:
		k.Group = r.string()
	case consumerGroupMemberMetadataKeyVersion, consumerGroupTargetAssignmentMemberKeyVersion,
		consumerGroupCurrentMemberAssignmentKeyVersion, shareGroupMemberMetadataKeyVersion,
		shareGroupTargetAssignmentMemberKeyVersion, shareGroupCurrentMemberAssignmentKeyVersion:
		k.Group, k.MemberID = r.string(), r.string()
	default:
		if r.Err != nil {
			return Key{}, r.Done("key")
		}
		return Key{}, fmt.Errorf("%w: key version %d", ErrUnknownVersion, k.Version)
	}
	return k, r.Done("key")
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
	b := kbin.AppendInt16(nil, offsetValueVersion)
	b = kbin.AppendInt64(b, v.Offset)
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendString(b, kafkaString(v.Metadata))
	return kbin.AppendInt64(b, v.CommitTimestamp)
}

// DecodeOffsetValue parses an offset commit value of any version. Its
// errors match ErrCorrupt or ErrUnknownVersion.
func DecodeOffsetValue(b []byte) (OffsetValue, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	version := r.Int16()
	v := OffsetValue{LeaderEpoch: -1, ExpireTimestamp: -1}
	switch version {
	case 0, 2:
		v.Offset, v.Metadata, v.CommitTimestamp = r.Int64(), r.string(), r.Int64()
	case 1:
		v.Offset, v.Metadata, v.CommitTimestamp, v.ExpireTimestamp = r.Int64(), r.string(), r.Int64(), r.Int64()
	case 3:
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = r.Int64(), r.Int32(), r.string(), r.Int64()
	default:
		if r.Err != nil {
			return OffsetValue{}, r.Done("offset value")
		}
		return OffsetValue{}, fmt.Errorf("%w: offset value version %d", ErrUnknownVersion, version)
	}
	return v, r.Done("offset value")
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
	b := kbin.AppendInt16(nil, groupValueVersion)
	b = kbin.AppendString(b, kafkaString(v.ProtocolType))
	b = kbin.AppendInt32(b, v.Generation)
	b = kbin.AppendNullableString(b, nullString(v.Protocol))
	b = kbin.AppendNullableString(b, nullString(v.Leader))
	b = kbin.AppendInt64(b, v.CurrentStateTimestamp)
	b = kbin.AppendArrayLen(b, len(v.Members))
	for _, m := range v.Members {
		b = kbin.AppendString(b, kafkaString(m.MemberID))
		b = kbin.AppendNullableString(b, nullString(m.GroupInstanceID))
		b = kbin.AppendString(b, kafkaString(m.ClientID))
		b = kbin.AppendString(b, kafkaString(m.ClientHost))
		b = kbin.AppendInt32(b, m.RebalanceTimeout)
		b = kbin.AppendInt32(b, m.SessionTimeout)
		b = kbin.AppendBytes(b, m.Subscription) // nil as empty: not nullable here
		b = kbin.AppendBytes(b, m.Assignment)
	}
	return b
}

// DecodeGroupValue parses a group metadata value of any version. Its
// errors match ErrCorrupt or ErrUnknownVersion.
func DecodeGroupValue(b []byte) (GroupValue, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	version := r.Int16()
	if r.Err == nil && (version < 0 || version > groupValueVersion) {
		return GroupValue{}, fmt.Errorf("%w: group value version %d", ErrUnknownVersion, version)
	}
	v := GroupValue{CurrentStateTimestamp: -1}
	v.ProtocolType = r.string()
	v.Generation = r.Int32()
	v.Protocol = r.string()
	v.Leader = r.string()
	if version >= 2 {
		v.CurrentStateTimestamp = r.Int64()
	}
	n := r.count(2 + 2 + 2 + 4 + 4 + 4) // the smallest member, of version 0
	for i := 0; i < n && r.Err == nil; i++ {
		var m MemberValue
		m.MemberID = r.string()
		if version >= 3 {
			m.GroupInstanceID = r.string()
		}
		m.ClientID = r.string()
		m.ClientHost = r.string()
		if version >= 1 {
			m.RebalanceTimeout = r.Int32()
		}
		m.SessionTimeout = r.Int32()
		if version == 0 {
			m.RebalanceTimeout = m.SessionTimeout
		}
		m.Subscription = r.bytes()
		m.Assignment = r.bytes()
		v.Members = append(v.Members, m)
	}
	return v, r.Done("group value")
}

// kafkaString returns s cut to the most Kafka reads of a string (32767
// bytes), for the writers.
func kafkaString(s string) string {
	if len(s) > math.MaxInt16 {
		return s[:math.MaxInt16]
	}
	return s
}

// nullString returns the nullable string the writers write for s: null
// for "", otherwise kafkaString(s).
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	s = kafkaString(s)
	return &s
}

// reader reads a record with kread, failures as ErrCorrupt.
type reader struct{ kread.Reader }

// string reads a string; a null one (length -1, no other negative)
// reads as "".
func (r *reader) string() string {
	return kread.Read(&r.Reader, func(kr *kbin.Reader) string {
		n := kr.Int16()
		if n == -1 {
			return ""
		}
		return string(kr.Span(int(n)))
	})
}

// bytes reads bytes, a copy; null ones (length -1, no other negative)
// read as nil.
func (r *reader) bytes() []byte {
	return kread.Read(&r.Reader, func(kr *kbin.Reader) []byte {
		n := kr.Int32()
		if n == -1 {
			return nil
		}
		return bytes.Clone(kr.Span(int(n)))
	})
}

// count reads an array's length, each element taking at least min bytes,
// so that a corrupt count cannot make the caller allocate much.
func (r *reader) count(min int) int {
	n := r.Int32()
	if r.Err != nil {
		return 0
	}
	if n < 0 || int(n) > len(r.B)/min {
		r.Fail("array of %d elements in %d bytes", n, len(r.B))
		return 0
	}
	return int(n)
}
