package group

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testTopics is a cluster's topics: name → id, and back.
type testTopics map[string][16]byte

func (ts testTopics) id(name string) [16]byte {
	id, ok := ts[name]
	if !ok {
		panic("no topic " + name)
	}
	return id
}

func (ts testTopics) name(id [16]byte) (string, bool) {
	for name, tid := range ts {
		if tid == id {
			return name, true
		}
	}
	return "", false
}

// topicT's id is 00 01 02 … 0f, topicU's 10 11 … 1f.
var (
	topicTID = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	topicUID = [16]byte{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}
	topics   = testTopics{"t": topicTID, "u": topicUID}
)

const (
	hexT = "000102030405060708090a0b0c0d0e0f" // topic t's id
	hexU = "101112131415161718191a1b1c1d1e1f" // topic u's id
)

// consumerRecordCases has one record of each type with every field set,
// and one with every field zero.
func consumerRecordCases() []consumerRecord {
	return []consumerRecord{
		consumerGroupMetadata{GroupID: "g", Epoch: 42},
		consumerGroupMetadata{GroupID: "g"},
		consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"t": 3, "u": 12}},
		consumerGroupPartitionMetadata{GroupID: "g"},
		consumerGroupMemberMetadata{
			GroupID: "g", MemberID: "m-1", InstanceID: "i", RackID: "rack-a", ClientID: "c", ClientHost: "/10.0.0.1",
			SubscribedTopicNames: []string{"u", "t"}, SubscribedTopicRegex: "^t.*", RebalanceTimeoutMs: 300000,
			ServerAssignor: "uniform",
		},
		consumerGroupMemberMetadata{GroupID: "g", MemberID: "m-2"},
		consumerGroupTargetAssignmentMetadata{GroupID: "g", AssignmentEpoch: 7},
		consumerGroupTargetAssignmentMetadata{GroupID: "g"},
		consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1", TopicPartitions: map[string][]int32{"t": {0, 2}, "u": {5}}},
		consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1"},
		consumerGroupCurrentMemberAssignment{
			GroupID: "g", MemberID: "m-1", MemberEpoch: 9, PreviousMemberEpoch: 8, State: consumerMemberUnrevokedPartitions,
			AssignedPartitions: map[string][]int32{"t": {0}}, PartitionsPendingRevocation: map[string][]int32{"t": {2}, "u": {1, 3}},
		},
		consumerGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1", MemberEpoch: -1, PreviousMemberEpoch: -1, State: consumerMemberUnreleasedPartitions},
		consumerGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1"},
	}
}

// consumerTombstones has a tombstone of each record type.
func consumerTombstones() []consumerRecord {
	return []consumerRecord{
		consumerGroupMetadata{GroupID: "g", Tombstone: true},
		consumerGroupPartitionMetadata{GroupID: "g", Tombstone: true},
		consumerGroupMemberMetadata{GroupID: "g", MemberID: "m-1", Tombstone: true},
		consumerGroupTargetAssignmentMetadata{GroupID: "g", Tombstone: true},
		consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m-1", Tombstone: true},
		consumerGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m-1", Tombstone: true},
	}
}

// roundTrip encodes r, decodes its key and value, and returns the record
// decoded.
func roundTrip(t *testing.T, r consumerRecord) consumerRecord {
	t.Helper()
	kb, vb := encodeConsumerRecord(r.consumerGroupID(), r, topics.id)
	k, err := DecodeKey(kb)
	require.NoError(t, err)
	require.True(t, k.IsConsumerGroup())
	require.False(t, k.IsGroup())
	got, err := decodeConsumerRecord(k, vb, topics.name)
	require.NoError(t, err)
	return got
}

func TestConsumerRecordRoundTrip(t *testing.T) {
	for _, r := range append(consumerRecordCases(), consumerTombstones()...) {
		t.Run(fmt.Sprintf("%T", r), func(t *testing.T) {
			require.Equal(t, r, roundTrip(t, r))
		})
	}
}

func TestConsumerRecordTombstones(t *testing.T) {
	for _, r := range consumerTombstones() {
		kb, vb := encodeConsumerRecord("g", r, topics.id)
		require.Nil(t, vb, "%T", r)
		k, err := DecodeKey(kb)
		require.NoError(t, err)
		require.True(t, k.IsConsumerGroup())
	}
}

// TestConsumerRecordNormalizes: partitions decode sorted and without
// duplicates, topics without partitions vanish, and what the coordinator
// writes (replay's normal form) comes back as it was.
func TestConsumerRecordNormalizes(t *testing.T) {
	r := consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m", TopicPartitions: map[string][]int32{"t": {3, 1, 3}, "u": {}}}
	require.Equal(t, consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m", TopicPartitions: map[string][]int32{"t": {1, 3}}}, roundTrip(t, r))

	// Two entries of one topic id merge.
	v := mustHex(t, "0000"+"03"+hexT+"02"+"00000002"+"00"+hexT+"03"+"00000001"+"00000002"+"00"+"00")
	got, err := decodeConsumerRecord(Key{Version: 7, Group: "g", MemberID: "m"}, v, topics.name)
	require.NoError(t, err)
	require.Equal(t, consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m", TopicPartitions: map[string][]int32{"t": {1, 2}}}, got)
}

// TestConsumerRecordKafkaBytes checks keys and values against bytes
// written by hand from Kafka's ConsumerGroup*Key.json and *Value.json.
func TestConsumerRecordKafkaBytes(t *testing.T) {
	for _, c := range []struct {
		name       string
		record     consumerRecord
		key, value string
	}{{
		name:   "ConsumerGroupMetadata",
		record: consumerGroupMetadata{GroupID: "g", Epoch: 5},
		key:    "0003" + "0001" + "67",
		value: "0000" + // version
			"00000005" + // epoch
			"00", // no tagged fields
	}, {
		name:   "ConsumerGroupPartitionMetadata",
		record: consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"u": 12, "t": 3}},
		key:    "0004" + "0001" + "67",
		value: "0000" +
			"03" + // two topics, by name
			hexT + "02" + "74" + "00000003" + "01" + "00" + // id, "t", 3 partitions, no racks, no tags
			hexU + "02" + "75" + "0000000c" + "01" + "00" +
			"00",
	}, {
		name: "ConsumerGroupMemberMetadata",
		record: consumerGroupMemberMetadata{
			GroupID: "g", MemberID: "m", InstanceID: "i", ClientID: "c", ClientHost: "h",
			SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 300000, ServerAssignor: "uniform",
		},
		key: "0005" + "0001" + "67" + "0001" + "6d",
		value: "0000" +
			"02" + "69" + // instance_id "i"
			"00" + // rack_id null
			"02" + "63" + // client_id "c"
			"02" + "68" + // client_host "h"
			"02" + "02" + "74" + // subscribed_topic_names ["t"]
			"00" + // subscribed_topic_regex null
			"000493e0" + // rebalance_timeout_ms 300000
			"08" + hex.EncodeToString([]byte("uniform")) + // server_assignor
			"00", // no tagged fields: classic_member_metadata null
	}, {
		name:   "ConsumerGroupTargetAssignmentMetadata",
		record: consumerGroupTargetAssignmentMetadata{GroupID: "g", AssignmentEpoch: 7},
		key:    "0006" + "0001" + "67",
		value:  "0000" + "00000007" + "00",
	}, {
		name:   "ConsumerGroupTargetAssignmentMember",
		record: consumerGroupTargetAssignmentMember{GroupID: "g", MemberID: "m", TopicPartitions: map[string][]int32{"t": {0, 2}}},
		key:    "0007" + "0001" + "67" + "0001" + "6d",
		value: "0000" +
			"02" + // one topic
			hexT + "03" + "00000000" + "00000002" + "00" + // id, [0, 2], no tags
			"00",
	}, {
		name: "ConsumerGroupCurrentMemberAssignment",
		record: consumerGroupCurrentMemberAssignment{
			GroupID: "g", MemberID: "m", MemberEpoch: 9, PreviousMemberEpoch: 8, State: consumerMemberUnrevokedPartitions,
			AssignedPartitions: map[string][]int32{"t": {0}}, PartitionsPendingRevocation: map[string][]int32{"u": {2}},
		},
		key: "0008" + "0001" + "67" + "0001" + "6d",
		value: "0000" +
			"00000009" + // member_epoch
			"00000008" + // previous_member_epoch
			"01" + // state: UNREVOKED_PARTITIONS
			"02" + hexT + "02" + "00000000" + "00" + // assigned_partitions
			"02" + hexU + "02" + "00000002" + "00" + // partitions_pending_revocation
			"00",
	}} {
		t.Run(c.name, func(t *testing.T) {
			kb, vb := encodeConsumerRecord("g", c.record, topics.id)
			require.Equal(t, c.key, hex.EncodeToString(kb))
			require.Equal(t, c.value, hex.EncodeToString(vb))
			k, err := DecodeKey(mustHex(t, c.key))
			require.NoError(t, err)
			got, err := decodeConsumerRecord(k, mustHex(t, c.value), topics.name)
			require.NoError(t, err)
			require.Equal(t, c.record, got)
		})
	}
}

// TestConsumerRecordKafkaTaggedFields: the tagged fields Kafka writes
// (and any it may add) are read past.
func TestConsumerRecordKafkaTaggedFields(t *testing.T) {
	for _, c := range []struct {
		name  string
		key   Key
		value string
		want  consumerRecord
	}{{
		name: "metadata_hash",
		key:  Key{Version: 3, Group: "g"},
		value: "0000" + "00000005" +
			"01" + "00" + "08" + "0123456789abcdef", // tag 0, 8 bytes: metadata_hash
		want: consumerGroupMetadata{GroupID: "g", Epoch: 5},
	}, {
		name: "classic_member_metadata",
		key:  Key{Version: 5, Group: "g", MemberID: "m"},
		value: "0000" + "00" + "00" + "02" + "63" + "02" + "68" + "01" + "00" + "ffffffff" + "00" +
			"01" + "00" + "0b" + // tag 0, 11 bytes:
			"00002710" + // session_timeout_ms 10000
			"02" + "02" + "72" + "02" + "ab" + "00" + // supported_protocols [{"r", [ab]}]
			"00", // the struct's tags
		want: consumerGroupMemberMetadata{GroupID: "g", MemberID: "m", ClientID: "c", ClientHost: "h", RebalanceTimeoutMs: -1},
	}, {
		name: "partition racks and tags in nested structs",
		key:  Key{Version: 4, Group: "g"},
		value: "0000" + "02" +
			hexT + "02" + "74" + "00000003" +
			"02" + "00000001" + "02" + "03" + "7231" + "00" + // partition 1 on rack "r1"
			"01" + "05" + "00" + // the topic's tags: tag 5, empty
			"00",
		want: consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"t": 3}},
	}, {
		name: "assignment epochs",
		key:  Key{Version: 8, Group: "g", MemberID: "m"},
		value: "0000" + "00000002" + "00000001" + "00" +
			"02" + hexT + "02" + "00000004" + "01" + "00" + "05" + "02" + "00000002" + // assignment_epochs [2]
			"01" +
			"02" + "07" + "00" + "01" + "01" + "ff", // tag 7, empty; tag 1, one byte
		want: consumerGroupCurrentMemberAssignment{GroupID: "g", MemberID: "m", MemberEpoch: 2, PreviousMemberEpoch: 1, AssignedPartitions: map[string][]int32{"t": {4}}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeConsumerRecord(c.key, mustHex(t, c.value), topics.name)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// TestConsumerRecordCorrupt: a truncated value, one with bytes left over,
// or one that breaks the schema fails with ErrCorrupt; another version
// with ErrUnknownVersion.
func TestConsumerRecordCorrupt(t *testing.T) {
	for _, r := range consumerRecordCases() {
		kb, vb := encodeConsumerRecord("g", r, topics.id)
		k, err := DecodeKey(kb)
		require.NoError(t, err)
		for n := range len(vb) {
			got, err := decodeConsumerRecord(k, vb[:n:n], topics.name)
			require.ErrorIs(t, err, ErrCorrupt, "%T cut to %d bytes", r, n)
			require.Nil(t, got)
		}
		for _, extra := range []string{"00", "0000", "01"} {
			got, err := decodeConsumerRecord(k, append(vb[:len(vb):len(vb)], mustHex(t, extra)...), topics.name)
			require.ErrorIs(t, err, ErrCorrupt, "%T with %s after it", r, extra)
			require.Nil(t, got)
		}
		other := append([]byte{}, vb...)
		other[1] = 1
		_, err = decodeConsumerRecord(k, other, topics.name)
		require.ErrorIs(t, err, ErrUnknownVersion, "%T", r)
	}

	for name, c := range map[string]struct {
		version int16
		value   string
	}{
		"null client_id":            {5, "0000" + "00" + "00" + "00" + "0268" + "01" + "00" + "ffffffff" + "00" + "00"},
		"null topic names":          {5, "0000" + "00" + "00" + "0263" + "0268" + "00" + "00" + "ffffffff" + "00" + "00"},
		"null partitions":           {7, "0000" + "02" + hexT + "00" + "00" + "00"},
		"huge array":                {7, "0000" + "ffffffff0f"},
		"varint of 6 bytes":         {3, "0000" + "00000001" + "8080808080" + "00"},
		"varint over 32 bits":       {3, "0000" + "00000001" + "ffffffff7f"},
		"member state 3":            {8, "0000" + "00000001" + "00000000" + "03" + "01" + "01" + "00"},
		"tagged field past the end": {3, "0000" + "00000001" + "01" + "00" + "09" + "0102030405060708"},
		"many tagged fields":        {3, "0000" + "00000001" + "05" + "0000"},
		"string too long":           {5, "0000" + "818002" + strings.Repeat("61", 32768) + "00" + "0263" + "0268" + "01" + "00" + "ffffffff" + "00" + "00"},
		"empty value":               {6, ""},
	} {
		k := Key{Version: c.version, Group: "g"}
		if k.hasMemberID() {
			k.MemberID = "m"
		}
		value := mustHex(t, c.value)
		if value == nil {
			value = []byte{} // empty, not null
		}
		got, err := decodeConsumerRecord(k, value, topics.name)
		require.ErrorIs(t, err, ErrCorrupt, name)
		require.Nil(t, got, name)
	}

	_, err := decodeConsumerRecord(OffsetKey("g", "t", 0), []byte{0, 0}, topics.name)
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = decodeConsumerRecord(GroupKey("g"), nil, topics.name)
	require.ErrorIs(t, err, ErrUnknownVersion)
}

// TestConsumerRecordUnknownTopic: a topic id no longer known (deleted)
// decodes to no partitions of it, and the decoder says which.
func TestConsumerRecordUnknownTopic(t *testing.T) {
	onlyT := testTopics{"t": topicTID}
	r := consumerGroupCurrentMemberAssignment{
		GroupID: "g", MemberID: "m", MemberEpoch: 3, PreviousMemberEpoch: 2,
		AssignedPartitions: map[string][]int32{"t": {0}, "u": {1}}, PartitionsPendingRevocation: map[string][]int32{"u": {2}},
	}
	kb, vb := encodeConsumerRecord("g", r, topics.id)
	k, err := DecodeKey(kb)
	require.NoError(t, err)
	got, err := decodeConsumerRecord(k, vb, onlyT.name)
	var unknown *unknownTopicIDsError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, [][16]byte{topicUID}, unknown.IDs) // once, though named twice
	require.Equal(t, "ConsumerGroupCurrentMemberAssignment", unknown.Record)
	require.Contains(t, err.Error(), "EBESExQVFhcYGRobHB0eHw") // u's id as Kafka prints it
	require.False(t, errors.Is(err, ErrCorrupt))
	r.AssignedPartitions = map[string][]int32{"t": {0}}
	r.PartitionsPendingRevocation = nil
	require.Equal(t, r, got)

	// Partition metadata: an id that is gone, or that names another topic
	// now (the topic was deleted and another took its id's place).
	pm := consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"t": 3, "u": 4}}
	kb, vb = encodeConsumerRecord("g", pm, topics.id)
	k, err = DecodeKey(kb)
	require.NoError(t, err)
	got, err = decodeConsumerRecord(k, vb, onlyT.name)
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, [][16]byte{topicUID}, unknown.IDs)
	require.Equal(t, consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"t": 3}}, got)
	renamed := testTopics{"t": topicTID, "v": topicUID}
	got, err = decodeConsumerRecord(k, vb, renamed.name)
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, consumerGroupPartitionMetadata{GroupID: "g", Topics: map[string]int32{"t": 3}}, got)

	// The message names the first few ids only.
	many := &unknownTopicIDsError{Record: "ConsumerGroupTargetAssignmentMember", IDs: make([][16]byte, 10)}
	require.Equal(t, 8, strings.Count(many.Error(), "AAAAAAAAAAAAAAAAAAAAAA"))
	require.True(t, strings.HasSuffix(many.Error(), " and 2 more"), many.Error())
}

// TestConsumerKeys: the consumer group keys round-trip, and the classic
// ones keep their bytes.
func TestConsumerKeys(t *testing.T) {
	for v := int16(3); v <= 8; v++ {
		k := Key{Version: v, Group: "g"}
		if k.hasMemberID() {
			k.MemberID = "m"
		}
		require.True(t, k.IsConsumerGroup())
		got, err := DecodeKey(k.Encode())
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	for _, k := range []Key{OffsetKey("g", "t", 7), GroupKey("g"), {Version: 0, Group: "g", Topic: "t", Partition: 2}} {
		require.False(t, k.IsConsumerGroup())
	}
	require.Equal(t, "0001"+"0001"+"67"+"0001"+"74"+"00000007", hex.EncodeToString(OffsetKey("g", "t", 7).Encode()))
	require.Equal(t, "0002"+"0001"+"67", hex.EncodeToString(GroupKey("g").Encode()))
	// A member key cut after the group, or with bytes after the member.
	_, err := DecodeKey(mustHex(t, "0005"+"0001"+"67"))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeKey(mustHex(t, "0003"+"0001"+"67"+"0001"+"6d"))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeKey(mustHex(t, "0009"+"0001"+"67"))
	require.ErrorIs(t, err, ErrUnknownVersion)
}

// fuzzTopicName knows the ids whose first byte is even, by the hex of the
// id; fuzzTopicID is its inverse.
func fuzzTopicName(id [16]byte) (string, bool) {
	if id[0]%2 != 0 {
		return "", false
	}
	return hex.EncodeToString(id[:]), true
}

func fuzzTopicID(name string) [16]byte {
	var id [16]byte
	if b, err := hex.DecodeString(name); err == nil && len(b) == 16 {
		copy(id[:], b)
	}
	return id
}

// FuzzDecodeConsumerRecord: decoding never panics; it fails only with
// ErrCorrupt or ErrUnknownVersion (and no record), or reports unknown
// topic ids with a record; and a record decoded encodes to bytes that
// decode to the same record and encode to the same bytes.
func FuzzDecodeConsumerRecord(f *testing.F) {
	named := testTopics{hexT: topicTID, "20" + hexT[2:]: [16]byte{0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}
	for _, r := range consumerRecordCases() {
		// The same records, with topics named as fuzzTopicName names them.
		rename := func(ps map[string][]int32) map[string][]int32 {
			if ps == nil {
				return nil
			}
			out := map[string][]int32{}
			for t, p := range ps {
				out[map[string]string{"t": hexT, "u": "20" + hexT[2:]}[t]] = p
			}
			return out
		}
		switch x := r.(type) {
		case consumerGroupPartitionMetadata:
			if x.Topics != nil {
				x.Topics = map[string]int32{hexT: 3, "20" + hexT[2:]: 12}
			}
			r = x
		case consumerGroupTargetAssignmentMember:
			x.TopicPartitions = rename(x.TopicPartitions)
			r = x
		case consumerGroupCurrentMemberAssignment:
			x.AssignedPartitions = rename(x.AssignedPartitions)
			x.PartitionsPendingRevocation = rename(x.PartitionsPendingRevocation)
			r = x
		}
		kb, vb := encodeConsumerRecord("g", r, named.id)
		f.Add(int16(kb[1]), vb, false)
	}
	f.Add(int16(3), []byte(nil), true)
	f.Add(int16(8), mustHexF(f, "0000"+"00000002"+"00000001"+"00"+"02"+"0f"+hexT[2:]+"02"+"00000004"+"00"+"01"+"00"), false) // an unknown id
	f.Fuzz(func(t *testing.T, version int16, value []byte, null bool) {
		k := Key{Version: 3 + ((version-3)%6+6)%6, Group: "g"}
		if k.hasMemberID() {
			k.MemberID = "m"
		}
		if null {
			value = nil
		}
		rec, err := decodeConsumerRecord(k, value, fuzzTopicName)
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
		kb, vb := encodeConsumerRecord("g", rec, fuzzTopicID)
		require.Equal(t, k.Encode(), kb)
		require.Equal(t, value == nil, vb == nil)
		again, err := decodeConsumerRecord(k, vb, fuzzTopicName)
		require.NoError(t, err)
		require.Equal(t, rec, again)
		_, vb2 := encodeConsumerRecord("g", again, fuzzTopicID)
		require.Equal(t, vb, vb2)
	})
}

func mustHexF(f *testing.F, s string) []byte {
	f.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
