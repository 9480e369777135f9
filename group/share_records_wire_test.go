package group

import (
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// shareRecordCases has one record of each type with every field set, and
// one with every field zero.
func shareRecordCases() []shareRecord {
	return []shareRecord{
		shareGroupMemberMetadata{GroupID: "g", MemberID: "m-1", RackID: "rack-a", ClientID: "c", ClientHost: "/10.0.0.1",
			SubscribedTopicNames: []string{"t", "u"}},
		shareGroupMemberMetadata{GroupID: "g", MemberID: "m-2"},
		shareGroupMetadata{GroupID: "g", Epoch: 42, MetadataHash: -5},
		shareGroupMetadata{GroupID: "g"},
		shareGroupTargetAssignmentMetadata{GroupID: "g", AssignmentEpoch: 7},
		shareGroupTargetAssignmentMetadata{GroupID: "g"},
		shareGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1", TopicPartitions: map[string][]int32{"t": {0, 2}, "u": {5}}},
		shareGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1"},
		shareGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1", MemberEpoch: 9, PreviousMemberEpoch: 8,
			AssignedPartitions: map[string][]int32{"t": {0}, "u": {1, 3}}},
		shareGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1", MemberEpoch: -1, PreviousMemberEpoch: -1},
		shareGroupStatePartitionMetadata{GroupID: "g", InitializingTopics: map[string][]int32{"u": {1}},
			InitializedTopics: map[string][]int32{"t": {0, 1}}, DeletingTopics: []string{"u"}},
		shareGroupStatePartitionMetadata{GroupID: "g"},
	}
}

// shareTombstones has a tombstone of each record type.
func shareTombstones() []shareRecord {
	return []shareRecord{
		shareGroupMemberMetadata{GroupID: "g", MemberID: "m-1", Tombstone: true},
		shareGroupMetadata{GroupID: "g", Tombstone: true},
		shareGroupTargetAssignmentMetadata{GroupID: "g", Tombstone: true},
		shareGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1", Tombstone: true},
		shareGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1", Tombstone: true},
		shareGroupStatePartitionMetadata{GroupID: "g", Tombstone: true},
	}
}

func TestShareRecordRoundTrip(t *testing.T) {
	for _, r := range append(shareRecordCases(), shareTombstones()...) {
		t.Run(fmt.Sprintf("%T", r), func(t *testing.T) {
			kb, vb := encodeShareRecord("g", r, topics.id)
			k, err := DecodeKey(kb)
			require.NoError(t, err)
			require.True(t, k.IsShareGroup())
			require.False(t, k.IsConsumerGroup())
			require.False(t, k.IsGroup())
			got, err := decodeShareRecord(k, vb, topics.name)
			require.NoError(t, err)
			require.Equal(t, r, got)
		})
	}
}

// TestShareRecordKafkaBytes checks keys and values against bytes written
// by hand from Kafka 4.1's ShareGroup*Key.json and *Value.json: the key is
// the record type (the "coordinator-key" apiKey) and the group [and
// member] as int16-length strings; the value version 0 and flexible
// fields.
func TestShareRecordKafkaBytes(t *testing.T) {
	for _, c := range []struct {
		name       string
		record     shareRecord
		key, value string
	}{{
		name:   "ShareGroupMemberMetadata",
		record: shareGroupMemberMetadata{GroupID: "g", MemberID: "m", RackID: "r", ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}},
		key:    "000a" + "0001" + "67" + "0001" + "6d",
		value: "0000" + // version
			"02" + "72" + // rack_id "r"
			"02" + "63" + // client_id "c"
			"02" + "68" + // client_host "h"
			"02" + "02" + "74" + // subscribed_topic_names ["t"]
			"00", // no tagged fields
	}, {
		name:   "ShareGroupMemberMetadata without rack",
		record: shareGroupMemberMetadata{GroupID: "g", MemberID: "m", ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}},
		key:    "000a" + "0001" + "67" + "0001" + "6d",
		value:  "0000" + "00" + "0263" + "0268" + "020274" + "00", // rack_id null
	}, {
		name:   "ShareGroupMetadata",
		record: shareGroupMetadata{GroupID: "g", Epoch: 5, MetadataHash: 0x0102030405060708},
		key:    "000b" + "0001" + "67",
		value:  "0000" + "00000005" + "0102030405060708" + "00", // epoch, metadata_hash (not tagged)
	}, {
		name:   "ShareGroupTargetAssignmentMetadata",
		record: shareGroupTargetAssignmentMetadata{GroupID: "g", AssignmentEpoch: 7},
		key:    "000c" + "0001" + "67",
		value:  "0000" + "00000007" + "00",
	}, {
		name:   "ShareGroupTargetAssignmentMember",
		record: shareGroupTargetAssignmentMember{GroupID: "g", MemberID: "m", TopicPartitions: map[string][]int32{"t": {0, 2}}},
		key:    "000d" + "0001" + "67" + "0001" + "6d",
		value:  "0000" + "02" + hexT + "03" + "00000000" + "00000002" + "00" + "00",
	}, {
		name:   "ShareGroupCurrentMemberAssignment",
		record: shareGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m", MemberEpoch: 9, PreviousMemberEpoch: 8, AssignedPartitions: map[string][]int32{"t": {0}}},
		key:    "000e" + "0001" + "67" + "0001" + "6d",
		value: "0000" +
			"00000009" + "00000008" + // member_epoch, previous_member_epoch
			"00" + // state: STABLE
			"02" + hexT + "02" + "00000000" + "00" + // assigned_partitions
			"00",
	}, {
		name: "ShareGroupStatePartitionMetadata",
		record: shareGroupStatePartitionMetadata{GroupID: "g", InitializingTopics: map[string][]int32{"u": {1}},
			InitializedTopics: map[string][]int32{"t": {0, 1}}, DeletingTopics: []string{"u"}},
		key: "000f" + "0001" + "67",
		value: "0000" +
			"02" + hexU + "02" + "75" + "02" + "00000001" + "00" + // initializing_topics [{u's id, "u", [1]}]
			"02" + hexT + "02" + "74" + "03" + "00000000" + "00000001" + "00" + // initialized_topics [{t's id, "t", [0, 1]}]
			"02" + hexU + "02" + "75" + "00" + // deleting_topics [{u's id, "u"}]
			"00",
	}} {
		t.Run(c.name, func(t *testing.T) {
			kb, vb := encodeShareRecord("g", c.record, topics.id)
			require.Equal(t, c.key, hex.EncodeToString(kb))
			require.Equal(t, c.value, hex.EncodeToString(vb))
			k, err := DecodeKey(mustHex(t, c.key))
			require.NoError(t, err)
			got, err := decodeShareRecord(k, mustHex(t, c.value), topics.name)
			require.NoError(t, err)
			require.Equal(t, c.record, got)
		})
	}
}

// TestShareRecordCorrupt: every truncation of a value, bytes after it, a
// wrong state or another version is refused.
func TestShareRecordCorrupt(t *testing.T) {
	for _, r := range shareRecordCases() {
		kb, vb := encodeShareRecord("g", r, topics.id)
		k, err := DecodeKey(kb)
		require.NoError(t, err)
		for n := range len(vb) {
			got, err := decodeShareRecord(k, vb[:n:n], topics.name)
			require.ErrorIs(t, err, ErrCorrupt, "%T cut to %d bytes", r, n)
			require.Nil(t, got)
		}
		for _, extra := range []string{"00", "01"} {
			got, err := decodeShareRecord(k, append(vb[:len(vb):len(vb)], mustHex(t, extra)...), topics.name)
			require.ErrorIs(t, err, ErrCorrupt, "%T with %s after it", r, extra)
			require.Nil(t, got)
		}
		other := append([]byte{}, vb...)
		other[1] = 1
		_, err = decodeShareRecord(k, other, topics.name)
		require.ErrorIs(t, err, ErrUnknownVersion, "%T", r)
		// Every truncation of the key too.
		for n := 2; n < len(kb); n++ {
			_, err := DecodeKey(kb[:n])
			require.ErrorIs(t, err, ErrCorrupt, "%T key cut to %d bytes", r, n)
		}
	}
	_, err := decodeShareRecord(Key{Version: 14, Group: "g", MemberID: "m"},
		mustHex(t, "0000"+"00000001"+"00000000"+"01"+"01"+"00"), topics.name)
	require.ErrorIs(t, err, ErrCorrupt, "a share member's state is 0")
	_, err = decodeShareRecord(Key{Version: 3, Group: "g"}, []byte{0, 0}, topics.name)
	require.ErrorIs(t, err, ErrUnknownVersion)
}

// TestShareRecordUnknownTopic: ids no longer known are left out and
// reported.
func TestShareRecordUnknownTopic(t *testing.T) {
	onlyT := testTopics{"t": topicTID}
	r := shareGroupStatePartitionMetadata{GroupID: "g", InitializingTopics: map[string][]int32{"u": {1}},
		InitializedTopics: map[string][]int32{"t": {0}, "u": {0}}, DeletingTopics: []string{"u"}}
	kb, vb := encodeShareRecord("g", r, topics.id)
	k, err := DecodeKey(kb)
	require.NoError(t, err)
	got, err := decodeShareRecord(k, vb, onlyT.name)
	var unknown *unknownTopicIDsError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, [][16]byte{topicUID}, unknown.IDs)
	require.Equal(t, "ShareGroupStatePartitionMetadata", unknown.Record)
	require.Equal(t, shareGroupStatePartitionMetadata{GroupID: "g", InitializedTopics: map[string][]int32{"t": {0}}}, got)
}

// FuzzDecodeShareRecord: decoding never panics; it fails only with
// ErrCorrupt or ErrUnknownVersion (and no record), or reports unknown
// topic ids with a record; and a record decoded encodes to bytes that
// decode to the same record and encode to the same bytes.
func FuzzDecodeShareRecord(f *testing.F) {
	for _, r := range shareRecordCases() {
		kb, vb := encodeShareRecord("g", r, func(name string) [16]byte {
			return map[string][16]byte{"t": {0x00, 1}, "u": {0x02, 2}}[name]
		})
		f.Add(int16(kb[1]), vb, false)
	}
	f.Add(int16(11), []byte(nil), true)
	f.Fuzz(func(t *testing.T, version int16, value []byte, null bool) {
		k := Key{Version: 10 + ((version-10)%6+6)%6, Group: "g"}
		if k.hasMemberID() {
			k.MemberID = "m"
		}
		if null {
			value = nil
		}
		rec, err := decodeShareRecord(k, value, fuzzTopicName)
		var unknown *unknownTopicIDsError
		switch {
		case errors.As(err, &unknown):
			require.NotNil(t, rec)
			require.NotEmpty(t, unknown.IDs)
		case err != nil:
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			require.Nil(t, rec)
			return
		}
		kb, vb := encodeShareRecord("g", rec, fuzzTopicID)
		require.Equal(t, k.Encode(), kb)
		require.Equal(t, value == nil, vb == nil)
		again, err := decodeShareRecord(k, vb, fuzzTopicName)
		require.NoError(t, err)
		require.Equal(t, rec, again)
		_, vb2 := encodeShareRecord("g", again, fuzzTopicID)
		require.Equal(t, vb, vb2)
	})
}
