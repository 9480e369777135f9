package group

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, k := range []Key{OffsetKey("lzl", "study", 3), GroupKey("lzl"), OffsetKey("", "", 0)} {
		got, err := DecodeKey(k.Encode())
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
}

// TestKafkaBytes checks the layouts against bytes written by hand from
// Kafka's record definitions.
func TestKafkaBytes(t *testing.T) {
	// Offset commit key v1: version, group "g", topic "t", partition 7.
	require.Equal(t, "0001"+"0001"+"67"+"0001"+"74"+"00000007", hex.EncodeToString(OffsetKey("g", "t", 7).Encode()))
	// Group metadata key v2.
	require.Equal(t, "0002"+"0001"+"67", hex.EncodeToString(GroupKey("g").Encode()))
	// Offset commit key v0 reads as v1 does.
	k, err := DecodeKey(mustHex(t, "0000"+"0001"+"67"+"0001"+"74"+"00000002"))
	require.NoError(t, err)
	require.Equal(t, Key{Version: 0, Group: "g", Topic: "t", Partition: 2}, k)
	// Offset value v3: offset 42, leader epoch 5, metadata "m", commit time 1000.
	v := OffsetValue{Offset: 42, LeaderEpoch: 5, Metadata: "m", CommitTimestamp: 1000, ExpireTimestamp: -1}
	require.Equal(t, "0003"+"000000000000002a"+"00000005"+"0001"+"6d"+"00000000000003e8", hex.EncodeToString(v.Encode()))
	// Offset value v1 carries an expire timestamp; v0 and v2 none.
	got, err := DecodeOffsetValue(mustHex(t, "0001"+"000000000000002a"+"0000"+"00000000000003e8"+"00000000000007d0"))
	require.NoError(t, err)
	require.Equal(t, OffsetValue{Offset: 42, LeaderEpoch: -1, CommitTimestamp: 1000, ExpireTimestamp: 2000}, got)
	got, err = DecodeOffsetValue(mustHex(t, "0000"+"000000000000002a"+"0000"+"00000000000003e8"))
	require.NoError(t, err)
	require.Equal(t, OffsetValue{Offset: 42, LeaderEpoch: -1, CommitTimestamp: 1000, ExpireTimestamp: -1}, got)
	// Group value v0: "consumer", generation 1, protocol "range", leader
	// "a", one member "a" (client "c", host "h", session 10s, empty
	// subscription and assignment).
	g0 := "0000" + "0008" + hex.EncodeToString([]byte("consumer")) + "00000001" + "0005" + hex.EncodeToString([]byte("range")) +
		"0001" + "61" + "00000001" + "0001" + "61" + "0001" + "63" + "0001" + "68" + "00002710" + "00000000" + "00000000"
	gv, err := DecodeGroupValue(mustHex(t, g0))
	require.NoError(t, err)
	require.Equal(t, GroupValue{ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "a", CurrentStateTimestamp: -1,
		Members: []MemberValue{{MemberID: "a", ClientID: "c", ClientHost: "h", RebalanceTimeout: 10000, SessionTimeout: 10000, Subscription: []byte{}, Assignment: []byte{}}}}, gv)
}

func TestGroupValueRoundTrip(t *testing.T) {
	v := GroupValue{ProtocolType: "consumer", Generation: 7, Protocol: "roundrobin", Leader: "m1", CurrentStateTimestamp: 123,
		Members: []MemberValue{
			{MemberID: "m1", GroupInstanceID: "i1", ClientID: "c", ClientHost: "/127.0.0.1", RebalanceTimeout: 300000, SessionTimeout: 45000, Subscription: []byte{1, 2}, Assignment: []byte{3}},
			{MemberID: "m2", ClientID: "c", ClientHost: "h", RebalanceTimeout: 1, SessionTimeout: 2, Subscription: []byte{}, Assignment: []byte{}},
		}}
	got, err := DecodeGroupValue(v.Encode())
	require.NoError(t, err)
	require.Equal(t, v, got)
	empty := GroupValue{ProtocolType: "consumer", Generation: 8, CurrentStateTimestamp: 5}
	got, err = DecodeGroupValue(empty.Encode())
	require.NoError(t, err)
	require.Equal(t, empty, got)
}

func TestDecodeErrors(t *testing.T) {
	_, err := DecodeKey([]byte{0, 9, 0, 0})
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = DecodeKey([]byte{0, 1, 0, 5, 'a'})
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeKey(append(GroupKey("g").Encode(), 0))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeOffsetValue([]byte{0, 4})
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = DecodeOffsetValue([]byte{0})
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeGroupValue([]byte{0, 3, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	require.ErrorIs(t, err, ErrCorrupt)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// FuzzDecodeKey: decoding never panics, and what decodes encodes back to
// the same key.
func FuzzDecodeKey(f *testing.F) {
	f.Add(OffsetKey("lzl", "study", 3).Encode())
	f.Add(GroupKey("lzl").Encode())
	f.Add([]byte{0, 0, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if k.Version == offsetKeyVersion0 {
			k.Version = offsetKeyVersion1
		}
		again, err := DecodeKey(k.Encode())
		require.NoError(t, err)
		require.Equal(t, k, again)
	})
}

// FuzzDecodeOffsetValue: decoding never panics, and a decoded value
// survives a round trip through the current version.
func FuzzDecodeOffsetValue(f *testing.F) {
	f.Add(OffsetValue{Offset: 42, LeaderEpoch: 5, Metadata: "m", CommitTimestamp: 1000}.Encode())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 0, 3, 232, 0, 0, 0, 0, 0, 0, 7, 208})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeOffsetValue(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := DecodeOffsetValue(v.Encode())
		require.NoError(t, err)
		v.ExpireTimestamp = -1 // not in version 3
		require.Equal(t, v, again)
	})
}

// FuzzDecodeGroupValue: decoding never panics or allocates without bound,
// and a decoded value survives a round trip through the current version.
func FuzzDecodeGroupValue(f *testing.F) {
	f.Add(GroupValue{ProtocolType: "consumer", Generation: 3, Protocol: "range", Leader: "a",
		Members: []MemberValue{{MemberID: "a", ClientID: "c", ClientHost: "h", RebalanceTimeout: 1, SessionTimeout: 2, Subscription: []byte{1}, Assignment: []byte{2}}}}.Encode())
	f.Add(GroupValue{ProtocolType: "consumer", Generation: 4}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeGroupValue(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := DecodeGroupValue(v.Encode())
		require.NoError(t, err)
		for i := range v.Members { // nil and empty bytes encode alike
			v.Members[i].Subscription = append([]byte{}, v.Members[i].Subscription...)
			v.Members[i].Assignment = append([]byte{}, v.Members[i].Assignment...)
			again.Members[i].Subscription = append([]byte{}, again.Members[i].Subscription...)
			again.Members[i].Assignment = append([]byte{}, again.Members[i].Assignment...)
		}
		require.Equal(t, v, again)
	})
}
