package sharecoord

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// topicT's id is 00 01 02 … 0f.
var topicT = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

const hexT = "000102030405060708090a0b0c0d0e0f"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// goldenRecords are records with their bytes written by hand from
// ShareSnapshotKey/Value.json and ShareUpdateKey/Value.json.
func goldenRecords() []struct {
	name       string
	entry      Entry
	key, value string
} {
	sp := SharePartition{Group: "g", TopicID: topicT, Partition: 3}
	return []struct {
		name       string
		entry      Entry
		key, value string
	}{{
		name: "ShareSnapshot",
		entry: Entry{Key: Key{Type: SnapshotRecord, SharePartition: sp}, Snapshot: &SnapshotValue{
			SnapshotEpoch: 2, StateEpoch: 1, LeaderEpoch: 5, StartOffset: 100,
			CreateTimestamp: 1700000000000, WriteTimestamp: 1700000000123,
			StateBatches: []StateBatch{{100, 109, Acknowledged, 1}, {110, 119, Available, 2}},
		}},
		key: "0000" + "0001" + "67" + hexT + "00000003",
		value: "0000" + // version 0
			"00000002" + // snapshot_epoch
			"00000001" + // state_epoch
			"00000005" + // leader_epoch
			"0000000000000064" + // start_offset 100
			"0000018bcfe56800" + // create_timestamp 1700000000000
			"0000018bcfe5687b" + // write_timestamp 1700000000123
			"03" + // two state batches
			"0000000000000064" + "000000000000006d" + "02" + "0001" + "00" + // [100, 109] acknowledged, 1 delivery, no tags
			"000000000000006e" + "0000000000000077" + "00" + "0002" + "00" + // [110, 119] available, 2 deliveries
			"00", // no tagged fields
	}, {
		name: "ShareSnapshot of a new share partition",
		entry: Entry{Key: Key{Type: SnapshotRecord, SharePartition: sp}, Snapshot: &SnapshotValue{
			LeaderEpoch: -1, StartOffset: -1,
		}},
		key: "0000" + "0001" + "67" + hexT + "00000003",
		value: "0000" + "00000000" + "00000000" + "ffffffff" + "ffffffffffffffff" +
			"0000000000000000" + "0000000000000000" + "01" + "00",
	}, {
		name: "ShareUpdate",
		entry: Entry{Key: Key{Type: UpdateRecord, SharePartition: sp}, Update: &UpdateValue{
			SnapshotEpoch: 2, LeaderEpoch: 6, StartOffset: -1,
			StateBatches: []StateBatch{{120, 120, Archived, 5}},
		}},
		key: "0001" + "0001" + "67" + hexT + "00000003",
		value: "0000" + // version 0
			"00000002" + // snapshot_epoch
			"00000006" + // leader_epoch
			"ffffffffffffffff" + // start_offset -1: unchanged
			"02" + "0000000000000078" + "0000000000000078" + "04" + "0005" + "00" +
			"00",
	}, {
		name:  "ShareSnapshot tombstone",
		entry: Entry{Key: Key{Type: SnapshotRecord, SharePartition: SharePartition{Group: "grp", TopicID: topicT, Partition: 0}}},
		key:   "0000" + "0003" + "677270" + hexT + "00000000",
	}}
}

func TestRecordKafkaBytes(t *testing.T) {
	for _, c := range goldenRecords() {
		t.Run(c.name, func(t *testing.T) {
			r := c.entry.Record()
			require.Equal(t, c.key, hex.EncodeToString(r.Key))
			if c.value == "" {
				require.Nil(t, r.Value)
			} else {
				require.Equal(t, c.value, hex.EncodeToString(r.Value))
			}
			var value []byte
			if c.value != "" {
				value = mustHex(t, c.value)
			}
			got, err := DecodeRecord(Record{Key: mustHex(t, c.key), Value: value})
			require.NoError(t, err)
			require.Equal(t, c.entry, got)
			require.Equal(t, c.value == "", got.Tombstone())
		})
	}
}

// TestRecordTaggedFields: tagged fields, at the end of a value or of a
// batch — KIP-1226 adds one of them — are read past.
func TestRecordTaggedFields(t *testing.T) {
	v := "0000" + "00000001" + "00000002" + "ffffffffffffffff" +
		"02" + "0000000000000001" + "0000000000000002" + "00" + "0001" +
		"01" + "07" + "02" + "abcd" + // a batch with tag 7, 2 bytes
		"02" + "00" + "04" + "0000000a" + "05" + "00" // tag 0 (4 bytes) and tag 5 (empty)
	got, err := DecodeUpdateValue(mustHex(t, v))
	require.NoError(t, err)
	require.Equal(t, &UpdateValue{SnapshotEpoch: 1, LeaderEpoch: 2, StartOffset: -1, StateBatches: []StateBatch{{1, 2, Available, 1}}}, got)
}

// TestRecordCorrupt: every truncation of a value or key, bytes left
// over, and broken encodings fail with ErrCorrupt; other versions with
// ErrUnknownVersion.
func TestRecordCorrupt(t *testing.T) {
	for _, c := range goldenRecords() {
		key := mustHex(t, c.key)
		for n := range len(key) {
			_, err := DecodeRecord(Record{Key: key[:n:n]})
			require.Error(t, err, "%s key cut to %d bytes", c.name, n)
			if n >= 2 {
				require.ErrorIs(t, err, ErrCorrupt, "%s key cut to %d bytes", c.name, n)
			}
		}
		_, err := DecodeKey(append(key[:len(key):len(key)], 0))
		require.ErrorIs(t, err, ErrCorrupt)
		if c.value == "" {
			continue
		}
		value := mustHex(t, c.value)
		for n := range len(value) {
			e, err := DecodeRecord(Record{Key: key, Value: value[:n:n]})
			require.ErrorIs(t, err, ErrCorrupt, "%s value cut to %d bytes", c.name, n)
			require.Equal(t, Entry{}, e)
		}
		for _, extra := range []string{"00", "0000", "01"} {
			_, err := DecodeRecord(Record{Key: key, Value: append(value[:len(value):len(value)], mustHex(t, extra)...)})
			require.ErrorIs(t, err, ErrCorrupt, "%s with %s after it", c.name, extra)
		}
		other := append([]byte{}, value...)
		other[1] = 1
		_, err = DecodeRecord(Record{Key: key, Value: other})
		require.ErrorIs(t, err, ErrUnknownVersion, c.name)
	}

	_, err := DecodeKey(mustHex(t, "0002"+"0001"+"67"+hexT+"00000000"))
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = DecodeKey(mustHex(t, "0000"+"ffff"+hexT+"00000000"))
	require.ErrorIs(t, err, ErrCorrupt, "null group id")
	for name, v := range map[string]string{
		"null state_batches":        "0000" + "00000000" + "00000000" + "0000000000000000" + "00" + "00",
		"huge array":                "0000" + "00000000" + "00000000" + "0000000000000000" + "ffffffff0f",
		"varint of 6 bytes":         "0000" + "00000000" + "00000000" + "0000000000000000" + "808080808001",
		"tagged field past the end": "0000" + "00000000" + "00000000" + "0000000000000000" + "01" + "01" + "00" + "09" + "0102",
		"many tagged fields":        "0000" + "00000000" + "00000000" + "0000000000000000" + "01" + "05" + "0000",
		"empty":                     "",
	} {
		b := mustHex(t, v)
		if b == nil {
			b = []byte{}
		}
		_, err := DecodeUpdateValue(b)
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// TestPartitionFor checks the partitions against abs(String.hashCode) %
// 50 computed apart (in Java's arithmetic) for the keys shown.
func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		group     string
		topicID   [16]byte
		partition int32
		key       string
		want      int32
	}{
		{"g", [16]byte{}, 0, "g:AAAAAAAAAAAAAAAAAAAAAA:0", 49},                       // hashCode -92982199
		{"group1", topicT, 3, "group1:AAECAwQFBgcICQoLDA0ODw:3", 27},                 // 878846127
		{"share-group-é", topicU, 12, "share-group-é:EBESExQVFhcYGRobHB0eHw:12", 11}, // 218383511
	} {
		require.Equal(t, c.key, CoordinatorKey(c.group, c.topicID, c.partition))
		require.Equal(t, c.want, PartitionFor(c.group, c.topicID, c.partition, DefaultStateTopicPartitions), c.key)
	}
	require.Equal(t, int32(0), PartitionFor("g", topicT, 0, 0))
	require.Equal(t, "g:AAECAwQFBgcICQoLDA0ODw:1", SharePartition{"g", topicT, 1}.String())
}

var topicU = [16]byte{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}

// FuzzDecodeRecord: decoding never panics and fails only with ErrCorrupt
// or ErrUnknownVersion; a record decoded encodes to bytes that decode to
// the same entry and encode to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, c := range goldenRecords() {
		var value []byte
		if c.value != "" {
			value = mustHex(f, c.value)
		}
		f.Add(mustHex(f, c.key), value, c.value == "")
	}
	f.Add(mustHex(f, "0001"+"0000"+hexT+"ffffffff"), mustHex(f, "0000"+"00000001"+"00000002"+"ffffffffffffffff"+"01"+"01"+"00"+"00"), false)
	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		if null {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		e, err := DecodeRecord(Record{Key: key, Value: value})
		if err != nil {
			if !(isErr(err, ErrCorrupt) || isErr(err, ErrUnknownVersion)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		r := e.Record()
		again, err := DecodeRecord(r)
		require.NoError(t, err)
		require.Equal(t, e, again)
		r2 := again.Record()
		require.Equal(t, r, r2)
		if len(e.Key.Group) <= 32767 {
			require.Equal(t, key, r.Key) // keys have no tags: they round-trip exactly
		}
	})
}

func isErr(err, target error) bool { return errors.Is(err, target) }
