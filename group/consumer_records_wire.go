package group

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/partlog/partlog/internal/kread"
)

// The values of a consumer group's records in __consumer_offsets, as
// Kafka 4 writes them (group-coordinator's ConsumerGroup*Value.json). Each
// starts with a big-endian int16 version, 0, the only one; the fields
// follow in Kafka's flexible encoding: a string is an unsigned varint of
// its length plus one (0 for null) and its bytes, an array the same count
// and its elements, a uuid 16 bytes, and every struct, the value itself
// included, ends with its tagged fields — a varint count, then for each a
// varint tag, a varint size and that many bytes.
//
//	ConsumerGroupMetadataValue (key v3)
//	  epoch int32
//	  tag 0: metadata_hash int64 (Kafka 4.1, KIP-1101)
//	ConsumerGroupPartitionMetadataValue (key v4; Kafka 4.1 reads it, never writes it)
//	  topics [topic_id uuid, topic_name string, num_partitions int32,
//	          partition_metadata [partition int32, racks [string]]]
//	ConsumerGroupMemberMetadataValue (key v5)
//	  instance_id string?, rack_id string?, client_id string, client_host string,
//	  subscribed_topic_names [string], subscribed_topic_regex string?,
//	  rebalance_timeout_ms int32, server_assignor string?
//	  tag 0: classic_member_metadata? (session_timeout_ms int32,
//	         supported_protocols [name string, metadata bytes])
//	ConsumerGroupTargetAssignmentMetadataValue (key v6)
//	  assignment_epoch int32
//	ConsumerGroupTargetAssignmentMemberValue (key v7)
//	  topic_partitions [topic_id uuid, partitions [int32]]
//	ConsumerGroupCurrentMemberAssignmentValue (key v8)
//	  member_epoch int32, previous_member_epoch int32, state int8,
//	  assigned_partitions [topic_id uuid, partitions [int32]],
//	  partitions_pending_revocation [topic_id uuid, partitions [int32]]
//
// (string? is nullable.) The typed records name topics, the values topic
// ids, so encoding and decoding take a mapping between the two. The
// encoder writes no tagged field: each holds its default (null, 0) then,
// which Kafka reads as absent. The decoder skips every tagged field —
// those above and any a later Kafka adds — since the typed records have
// no place for them, and it drops partition_metadata's racks (Kafka
// stopped filling them in 4.0). A topic's partition list is written in
// the record's order, topics by name, and an assignment's topics without
// partitions not at all.

// consumerValueVersion is the version of every consumer group value.
const consumerValueVersion int16 = 0

// encodeConsumerRecord returns the key and value of r as Kafka lays them
// out, the key naming group groupID (the coordinator passes r's own; the
// decoder gives the record the key's). The value is nil for a tombstone.
// topicID gives the id of each topic of r's partitions or partition
// counts (subscribed topic names are written as names); it is not asked
// about an assignment's topics without partitions, which are left out.
// The returned slices are the caller's.
func encodeConsumerRecord(groupID string, r consumerRecord, topicID func(string) [16]byte) (key, value []byte) {
	k := Key{Group: groupID}
	b := kbin.AppendInt16(nil, consumerValueVersion)
	var tombstone bool
	switch r := r.(type) {
	case consumerGroupMetadata:
		k.Version, tombstone = consumerGroupMetadataKeyVersion, r.Tombstone
		b = kbin.AppendInt32(b, r.Epoch)
	case consumerGroupPartitionMetadata:
		k.Version, tombstone = consumerGroupPartitionMetadataKeyVersion, r.Tombstone
		names := slices.Sorted(maps.Keys(r.Topics))
		b = kbin.AppendCompactArrayLen(b, len(names))
		for _, t := range names {
			b = kbin.AppendUuid(b, topicID(t))
			b = kbin.AppendCompactString(b, kafkaString(t))
			b = kbin.AppendInt32(b, r.Topics[t])
			b = kbin.AppendCompactArrayLen(b, 0) // partition_metadata: no racks
			b = kbin.AppendUvarint(b, 0)         // no tagged fields
		}
	case consumerGroupMemberMetadata:
		k.Version, k.MemberID, tombstone = consumerGroupMemberMetadataKeyVersion, r.MemberID, r.Tombstone
		b = kbin.AppendCompactNullableString(b, nullString(r.InstanceID))
		b = kbin.AppendCompactNullableString(b, nullString(r.RackID))
		b = kbin.AppendCompactString(b, kafkaString(r.ClientID))
		b = kbin.AppendCompactString(b, kafkaString(r.ClientHost))
		b = appendCompactStrings(b, r.SubscribedTopicNames)
		b = kbin.AppendCompactNullableString(b, nullString(r.SubscribedTopicRegex))
		b = kbin.AppendInt32(b, r.RebalanceTimeoutMs)
		b = kbin.AppendCompactNullableString(b, nullString(r.ServerAssignor))
	case consumerGroupTargetAssignmentMetadata:
		k.Version, tombstone = consumerGroupTargetAssignmentMetadataKeyVersion, r.Tombstone
		b = kbin.AppendInt32(b, r.AssignmentEpoch)
	case consumerGroupTargetAssignmentMember:
		k.Version, k.MemberID, tombstone = consumerGroupTargetAssignmentMemberKeyVersion, r.MemberID, r.Tombstone
		b = appendTopicPartitions(b, r.TopicPartitions, topicID, false)
	case consumerGroupCurrentMemberAssignment:
		k.Version, k.MemberID, tombstone = consumerGroupCurrentMemberAssignmentKeyVersion, r.MemberID, r.Tombstone
		b = kbin.AppendInt32(b, r.MemberEpoch)
		b = kbin.AppendInt32(b, r.PreviousMemberEpoch)
		b = kbin.AppendInt8(b, int8(r.State))
		b = appendTopicPartitions(b, r.AssignedPartitions, topicID, false)
		b = appendTopicPartitions(b, r.PartitionsPendingRevocation, topicID, false)
	default:
		panic(fmt.Sprintf("group: encodeConsumerRecord of a %T", r))
	}
	if tombstone {
		return k.Encode(), nil
	}
	return k.Encode(), kbin.AppendUvarint(b, 0) // no tagged fields
}

// decodeConsumerRecord parses the value of a consumer group's record
// whose key is key (key.IsConsumerGroup()): a nil value is a tombstone.
// The record takes its group and member ids from key, and does not alias
// value. topicName gives the name of a topic id, false for an id no
// longer known.
//
// A topic id topicName does not know (or, in a partition metadata
// record, that now names a topic other than the one written) leaves no
// partitions in the record: decodeConsumerRecord then returns the record
// without them and an *unknownTopicIDsError naming the ids. Its other
// errors match ErrCorrupt, or ErrUnknownVersion for a value version other
// than 0 or a key that is not a consumer group's; they come with a nil
// record.
func decodeConsumerRecord(key Key, value []byte, topicName func([16]byte) (string, bool)) (consumerRecord, error) {
	if !key.IsConsumerGroup() {
		return nil, fmt.Errorf("%w: key version %d is not a consumer group record's", ErrUnknownVersion, key.Version)
	}
	tombstone := value == nil
	d := topicDecoder{r: reader{kread.New(value, ErrCorrupt)}, topicName: topicName}
	r := &d.r
	if !tombstone {
		if v := r.Int16(); r.Err == nil && v != consumerValueVersion {
			return nil, fmt.Errorf("%w: consumer group value version %d (key version %d)", ErrUnknownVersion, v, key.Version)
		}
	}
	var rec consumerRecord
	switch key.Version {
	case consumerGroupMetadataKeyVersion:
		m := consumerGroupMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.Epoch = r.Int32()
		}
		rec = m
	case consumerGroupPartitionMetadataKeyVersion:
		m := consumerGroupPartitionMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.Topics = d.topicCounts()
		}
		rec = m
	case consumerGroupMemberMetadataKeyVersion:
		m := consumerGroupMemberMetadata{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.InstanceID = r.compactNullableString()
			m.RackID = r.compactNullableString()
			m.ClientID = r.compactString()
			m.ClientHost = r.compactString()
			m.SubscribedTopicNames = r.compactStrings()
			m.SubscribedTopicRegex = r.compactNullableString()
			m.RebalanceTimeoutMs = r.Int32()
			m.ServerAssignor = r.compactNullableString()
		}
		rec = m
	case consumerGroupTargetAssignmentMetadataKeyVersion:
		m := consumerGroupTargetAssignmentMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.AssignmentEpoch = r.Int32()
		}
		rec = m
	case consumerGroupTargetAssignmentMemberKeyVersion:
		m := consumerGroupTargetAssignmentMember{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.TopicPartitions = d.topicPartitions(false)
		}
		rec = m
	case consumerGroupCurrentMemberAssignmentKeyVersion:
		m := consumerGroupCurrentMemberAssignment{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.MemberEpoch = r.Int32()
			m.PreviousMemberEpoch = r.Int32()
			m.State = consumerMemberState(r.Int8())
			switch m.State {
			case consumerMemberStable, consumerMemberUnrevokedPartitions, consumerMemberUnreleasedPartitions:
			default:
				r.Fail("member state %d", m.State)
			}
			m.AssignedPartitions = d.topicPartitions(false)
			m.PartitionsPendingRevocation = d.topicPartitions(false)
		}
		rec = m
	}
	if !tombstone {
		r.SkipTags()
	}
	if err := r.Done(consumerRecordName(key.Version) + " value"); err != nil {
		return nil, err
	}
	if len(d.unknown) > 0 {
		return rec, &unknownTopicIDsError{Record: consumerRecordName(key.Version), IDs: d.unknown}
	}
	return rec, nil
}

// consumerRecordName returns Kafka's name of the record type of a key
// version.
func consumerRecordName(keyVersion int16) string {
	switch keyVersion {
	case consumerGroupMetadataKeyVersion:
		return "ConsumerGroupMetadata"
	case consumerGroupPartitionMetadataKeyVersion:
		return "ConsumerGroupPartitionMetadata"
	case consumerGroupMemberMetadataKeyVersion:
		return "ConsumerGroupMemberMetadata"
	case consumerGroupTargetAssignmentMetadataKeyVersion:
		return "ConsumerGroupTargetAssignmentMetadata"
	case consumerGroupTargetAssignmentMemberKeyVersion:
		return "ConsumerGroupTargetAssignmentMember"
	case consumerGroupCurrentMemberAssignmentKeyVersion:
		return "ConsumerGroupCurrentMemberAssignment"
	}
	return fmt.Sprintf("record of key version %d", keyVersion)
}

// unknownTopicIDsError is decodeConsumerRecord's report of topic ids it
// could not name: the record it comes with holds no partitions of them.
type unknownTopicIDsError struct {
	// Record is the record type, as Kafka names it.
	Record string
	// IDs are the unknown topic ids, in the order read, each once.
	IDs [][16]byte
}

// Error names the first ids, as Kafka prints a Uuid.
func (e *unknownTopicIDsError) Error() string {
	const most = 8
	var ids []string
	for _, id := range e.IDs[:min(len(e.IDs), most)] {
		ids = append(ids, base64.RawURLEncoding.EncodeToString(id[:]))
	}
	msg := fmt.Sprintf("group: %s record names unknown topic ids %s", e.Record, strings.Join(ids, ", "))
	if len(e.IDs) > most {
		msg += fmt.Sprintf(" and %d more", len(e.IDs)-most)
	}
	return msg
}

// topicDecoder reads the parts of a value that name topics by id.
type topicDecoder struct {
	r         reader
	topicName func([16]byte) (string, bool)
	// unknown are the ids topicName did not know, each once, in the order
	// read; seen holds them too.
	unknown [][16]byte
	seen    map[[16]byte]bool
}

// unknownID notes id as one topicName does not know (or that names a
// topic other than the one written), once.
func (d *topicDecoder) unknownID(id [16]byte) {
	if d.seen == nil {
		d.seen = map[[16]byte]bool{}
	}
	if !d.seen[id] {
		d.seen[id] = true
		d.unknown = append(d.unknown, id)
	}
}

// topicPartitions reads an array of [topic_id uuid, partitions [int32]],
// or when named of [topic_id uuid, topic_name string, partitions [int32]]:
// the partitions of the topics known (when named, whose id still names
// the topic written), sorted, or nil when there are none.
func (d *topicDecoder) topicPartitions(named bool) map[string][]int32 {
	r := &d.r
	least := 16 + 1 + 1 // a uuid, an empty array, no tags
	if named {
		least++ // and ""
	}
	n := r.compactLen(false, least)
	var out map[string][]int32
	for range n {
		id := r.UUID()
		var written string
		if named {
			written = r.compactString()
		}
		parts := make([]int32, r.compactLen(false, 4))
		for i := range parts {
			parts[i] = r.Int32()
		}
		r.SkipTags()
		if r.Err != nil {
			return nil
		}
		name, ok := d.topicName(id)
		if !ok || named && name != written {
			d.unknownID(id)
			continue
		}
		if len(parts) > 0 {
			if out == nil {
				out = map[string][]int32{}
			}
			out[name] = append(out[name], parts...)
		}
	}
	return normalizePartitions(out)
}

// topicCounts reads ConsumerGroupPartitionMetadataValue's topics: the
// partition count of each topic known by the name written, nil when there
// are none.
func (d *topicDecoder) topicCounts() map[string]int32 {
	r := &d.r
	n := r.compactLen(false, 16+1+4+1+1) // a uuid, "", a count, [], no tags
	var out map[string]int32
	for range n {
		id := r.UUID()
		written := r.compactString()
		count := r.Int32()
		for range r.compactLen(false, 4+1+1) { // partition_metadata
			r.Int32()
			for range r.compactLen(false, 1) {
				r.compactString()
			}
			r.SkipTags()
		}
		r.SkipTags()
		if r.Err != nil {
			return nil
		}
		name, ok := d.topicName(id)
		if !ok || name != written {
			d.unknownID(id)
			continue
		}
		if out == nil {
			out = map[string]int32{}
		}
		out[name] = count
	}
	return out
}

// appendCompactStrings appends ss as a compact array of compact strings.
func appendCompactStrings(b []byte, ss []string) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ss))
	for _, s := range ss {
		b = kbin.AppendCompactString(b, kafkaString(s))
	}
	return b
}

// appendTopicPartitions appends a topic → partitions map as an array of
// [topic_id uuid, partitions [int32]], or when named of [topic_id uuid,
// topic_name string, partitions [int32]]: topics by name, those without
// partitions left out.
func appendTopicPartitions(b []byte, ps map[string][]int32, topicID func(string) [16]byte, named bool) []byte {
	names := make([]string, 0, len(ps))
	for t, parts := range ps {
		if len(parts) > 0 {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	b = kbin.AppendCompactArrayLen(b, len(names))
	for _, t := range names {
		b = kbin.AppendUuid(b, topicID(t))
		if named {
			b = kbin.AppendCompactString(b, kafkaString(t))
		}
		b = kbin.AppendCompactArrayLen(b, len(ps[t]))
		for _, p := range ps[t] {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

// compactLen reads the length of a compact string or array: -1 for null,
// which only a nullable one may be. Each element takes at least min
// bytes, so that a corrupt length cannot make the caller allocate much.
// (kbin's CompactArrayLen lets null through and counts a byte an
// element.)
func (r *reader) compactLen(nullable bool, min int) int {
	n := int(r.Uvarint()) - 1
	switch {
	case r.Err != nil:
		return 0
	case n == -1 && !nullable:
		r.Fail("null where a value is required")
		return 0
	case n > len(r.B)/min:
		r.Fail("%d elements in %d bytes", n, len(r.B))
		return 0
	}
	return n
}

// compactString reads a string that may not be null, of at most 32767
// bytes as Kafka reads.
func (r *reader) compactString() string {
	return r.shortString(kread.Read(&r.Reader, (*kbin.Reader).CompactString))
}

// compactNullableString reads a string that may be null, which reads as
// "", of at most 32767 bytes as Kafka reads.
func (r *reader) compactNullableString() string {
	s := kread.Read(&r.Reader, (*kbin.Reader).CompactNullableString)
	if s == nil {
		return ""
	}
	return r.shortString(*s)
}

// shortString returns s, or fails for a string longer than Kafka reads
// (32767 bytes).
func (r *reader) shortString(s string) string {
	if len(s) > math.MaxInt16 {
		r.Fail("string length %d", len(s))
		return ""
	}
	return s
}

// compactStrings reads a compact array of compact strings, which may not
// be null; nil when empty.
func (r *reader) compactStrings() []string {
	n := r.compactLen(false, 1)
	if n <= 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.compactString()
	}
	return ss
}
