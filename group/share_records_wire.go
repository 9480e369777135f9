package group

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/partlog/partlog/internal/kread"
)

// The values of a share group's records in __consumer_offsets, as Kafka
// 4.1 writes them (group-coordinator's ShareGroup*Value.json, each
// "coordinator-value" of its record type). They are laid out as the
// consumer group values are (consumer_records_wire.go): a big-endian
// int16 version, 0, then the fields in Kafka's flexible encoding, every
// struct ending with its tagged fields.
//
//	ShareGroupMemberMetadataValue (key v10)
//	  rack_id string?, client_id string, client_host string,
//	  subscribed_topic_names [string]
//	ShareGroupMetadataValue (key v11)
//	  epoch int32, metadata_hash int64
//	ShareGroupTargetAssignmentMetadataValue (key v12)
//	  assignment_epoch int32
//	ShareGroupTargetAssignmentMemberValue (key v13)
//	  topic_partitions [topic_id uuid, partitions [int32]]
//	ShareGroupCurrentMemberAssignmentValue (key v14)
//	  member_epoch int32, previous_member_epoch int32, state int8,
//	  assigned_partitions [topic_id uuid, partitions [int32]]
//	ShareGroupStatePartitionMetadataValue (key v15)
//	  initializing_topics [topic_id uuid, topic_name string, partitions [int32]],
//	  initialized_topics  [topic_id uuid, topic_name string, partitions [int32]],
//	  deleting_topics     [topic_id uuid, topic_name string]
//
// metadata_hash is a plain field here, not a tagged one as in
// ConsumerGroupMetadataValue: share groups were early access in Kafka
// 4.0, and 4.1 changed their records without keeping compatibility.
// The encoder writes no tagged field; the decoder skips them all. Topics
// are written by name order, each topic's partitions in the record's
// order, topics without partitions not at all (but a deleting topic,
// which has none).

// shareValueVersion is the version of every share group value.
const shareValueVersion int16 = 0

// encodeShareRecord returns the key and value of r as Kafka lays them
// out, the key naming group groupID. The value is nil for a tombstone.
// topicID gives the id of each topic r names, subscribed topic names
// excepted (they are written as names). The returned slices are the
// caller's.
func encodeShareRecord(groupID string, r shareRecord, topicID func(string) [16]byte) (key, value []byte) {
	k := Key{Group: groupID}
	b := kbin.AppendInt16(nil, shareValueVersion)
	var tombstone bool
	switch r := r.(type) {
	case shareGroupMemberMetadata:
		k.Version, k.MemberID, tombstone = shareGroupMemberMetadataKeyVersion, r.MemberID, r.Tombstone
		b = kbin.AppendCompactNullableString(b, nullString(r.RackID))
		b = kbin.AppendCompactString(b, kafkaString(r.ClientID))
		b = kbin.AppendCompactString(b, kafkaString(r.ClientHost))
		b = appendCompactStrings(b, r.SubscribedTopicNames)
	case shareGroupMetadata:
		k.Version, tombstone = shareGroupMetadataKeyVersion, r.Tombstone
		b = kbin.AppendInt32(b, r.Epoch)
		b = kbin.AppendInt64(b, r.MetadataHash)
	case shareGroupTargetAssignmentMetadata:
		k.Version, tombstone = shareGroupTargetAssignmentMetadataKeyVersion, r.Tombstone
		b = kbin.AppendInt32(b, r.AssignmentEpoch)
	case shareGroupTargetAssignmentMember:
		k.Version, k.MemberID, tombstone = shareGroupTargetAssignmentMemberKeyVersion, r.MemberID, r.Tombstone
		b = appendTopicPartitions(b, r.TopicPartitions, topicID, false)
	case shareGroupCurrentMemberAssignment:
		k.Version, k.MemberID, tombstone = shareGroupCurrentMemberAssignmentKeyVersion, r.MemberID, r.Tombstone
		b = kbin.AppendInt32(b, r.MemberEpoch)
		b = kbin.AppendInt32(b, r.PreviousMemberEpoch)
		b = kbin.AppendInt8(b, r.State)
		b = appendTopicPartitions(b, r.AssignedPartitions, topicID, false)
	case shareGroupStatePartitionMetadata:
		k.Version, tombstone = shareGroupStatePartitionMetadataKeyVersion, r.Tombstone
		b = appendTopicPartitions(b, r.InitializingTopics, topicID, true)
		b = appendTopicPartitions(b, r.InitializedTopics, topicID, true)
		b = kbin.AppendCompactArrayLen(b, len(r.DeletingTopics))
		for _, t := range r.DeletingTopics {
			b = kbin.AppendUuid(b, topicID(t))
			b = kbin.AppendCompactString(b, kafkaString(t))
			b = kbin.AppendUvarint(b, 0) // no tagged fields
		}
	default:
		panic(fmt.Sprintf("group: encodeShareRecord of a %T", r))
	}
	if tombstone {
		return k.Encode(), nil
	}
	return k.Encode(), kbin.AppendUvarint(b, 0) // no tagged fields
}

// decodeShareRecord parses the value of a share group's record whose key
// is key (key.IsShareGroup()): a nil value is a tombstone. The record
// takes its group and member ids from key, and does not alias value.
// topicName gives the name of a topic id, false for an id no longer
// known.
//
// A topic id topicName does not know (or, in a state partition metadata
// record, that now names a topic other than the one written) leaves that
// topic out of the record: decodeShareRecord then returns the record
// without it and an *unknownTopicIDsError naming the ids. Its other
// errors match ErrCorrupt, or ErrUnknownVersion for a value version other
// than 0 or a key that is not a share group's; they come with a nil
// record.
func decodeShareRecord(key Key, value []byte, topicName func([16]byte) (string, bool)) (shareRecord, error) {
	if !key.IsShareGroup() {
		return nil, fmt.Errorf("%w: key version %d is not a share group record's", ErrUnknownVersion, key.Version)
	}
	tombstone := value == nil
	d := topicDecoder{r: reader{kread.New(value, ErrCorrupt)}, topicName: topicName}
	r := &d.r
	if !tombstone {
		if v := r.Int16(); r.Err == nil && v != shareValueVersion {
			return nil, fmt.Errorf("%w: share group value version %d (key version %d)", ErrUnknownVersion, v, key.Version)
		}
	}
	var rec shareRecord
	switch key.Version {
	case shareGroupMemberMetadataKeyVersion:
		m := shareGroupMemberMetadata{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.RackID = r.compactNullableString()
			m.ClientID = r.compactString()
			m.ClientHost = r.compactString()
			m.SubscribedTopicNames = r.compactStrings()
		}
		rec = m
	case shareGroupMetadataKeyVersion:
		m := shareGroupMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.Epoch = r.Int32()
			m.MetadataHash = r.Int64()
		}
		rec = m
	case shareGroupTargetAssignmentMetadataKeyVersion:
		m := shareGroupTargetAssignmentMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.AssignmentEpoch = r.Int32()
		}
		rec = m
	case shareGroupTargetAssignmentMemberKeyVersion:
		m := shareGroupTargetAssignmentMember{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.TopicPartitions = d.topicPartitions(false)
		}
		rec = m
	case shareGroupCurrentMemberAssignmentKeyVersion:
		m := shareGroupCurrentMemberAssignment{GroupID: key.Group, MemberID: key.MemberID, Tombstone: tombstone}
		if !tombstone {
			m.MemberEpoch = r.Int32()
			m.PreviousMemberEpoch = r.Int32()
			m.State = r.Int8()
			if m.State != 0 {
				r.Fail("share member state %d", m.State)
			}
			m.AssignedPartitions = d.topicPartitions(false)
		}
		rec = m
	case shareGroupStatePartitionMetadataKeyVersion:
		m := shareGroupStatePartitionMetadata{GroupID: key.Group, Tombstone: tombstone}
		if !tombstone {
			m.InitializingTopics = d.topicPartitions(true)
			m.InitializedTopics = d.topicPartitions(true)
			n := r.compactLen(false, 16+1+1) // a uuid, "", no tags
			for range n {
				id := r.UUID()
				written := r.compactString()
				r.SkipTags()
				if r.Err != nil {
					break
				}
				if name, ok := d.topicName(id); ok && name == written {
					m.DeletingTopics = append(m.DeletingTopics, name)
				} else {
					d.unknownID(id)
				}
			}
			if m.DeletingTopics != nil {
				slices.Sort(m.DeletingTopics)
				m.DeletingTopics = slices.Compact(m.DeletingTopics)
			}
		}
		rec = m
	}
	if !tombstone {
		r.SkipTags()
	}
	if err := r.Done(shareRecordName(key.Version) + " value"); err != nil {
		return nil, err
	}
	if len(d.unknown) > 0 {
		return rec, &unknownTopicIDsError{Record: shareRecordName(key.Version), IDs: d.unknown}
	}
	return rec, nil
}

// shareRecordName returns Kafka's name of the record type of a key
// version.
func shareRecordName(keyVersion int16) string {
	switch keyVersion {
	case shareGroupMemberMetadataKeyVersion:
		return "ShareGroupMemberMetadata"
	case shareGroupMetadataKeyVersion:
		return "ShareGroupMetadata"
	case shareGroupTargetAssignmentMetadataKeyVersion:
		return "ShareGroupTargetAssignmentMetadata"
	case shareGroupTargetAssignmentMemberKeyVersion:
		return "ShareGroupTargetAssignmentMember"
	case shareGroupCurrentMemberAssignmentKeyVersion:
		return "ShareGroupCurrentMemberAssignment"
	case shareGroupStatePartitionMetadataKeyVersion:
		return "ShareGroupStatePartitionMetadata"
	}
	return fmt.Sprintf("record of key version %d", keyVersion)
}
